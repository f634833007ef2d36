"""MLNG, metric learning by neighbourhood gerrymandering (Trivedi et al., NIPS 2014): the
objective (``objective``), stochastic gradient fits (``sgd``) and the estimator."""
