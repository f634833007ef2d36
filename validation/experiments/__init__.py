"""The large experiments: the paper's Table 1 protocol (JMLR 2009, sec. 4) on Dask.

``protocol`` (data sets, splits, k = 3, mu = 0.5), ``knn`` (the k-NN rule with ties
broken by shrinking k, leave-one-out), ``methods`` (the registry: name -> fit),
``task`` (one (data set, split, method) and what it measures), ``gate`` (no fast solver
runs before its cross-check passes), ``store`` (SQLite, one row per task, resumable),
``versions`` (packages and code digest), ``runner`` (dask.distributed), ``report``
(Markdown and CSV tables beside ``paper``'s Table 1), ``plots`` and ``figures`` (PNG),
``session`` (one run of ``lmnn-sdp experiments``).
"""
