"""The SDPs of LMNN and multi-metric LMNN and their duals (``sdp``, cvxpy), with their
numpy building blocks: ``svec`` and the clusters' spaces (``clusters``)."""
