"""Low-rank LMNN on a linear map ``L`` (LMCA, ``lmca``) and on kernel expansions (kernel LMCA,
``kernel_lmca``): not convex in ``L``, so they report stationarity, not certificates."""
