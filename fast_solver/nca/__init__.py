"""NCA (Goldberger et al. 2004), memory-bounded: the objective and its gradient (``objective``)
and the estimator with scikit-learn's parameters (``estimator``)."""
