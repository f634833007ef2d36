"""The SDPs of LMNN and multi-metric LMNN and their duals (``sdp``, cvxpy), with their
numpy building block ``svec`` (the clusters' spaces are in ``core.clusters``)."""
