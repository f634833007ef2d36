r"""MMC: Mahalanobis Metric for Clustering (Xing, Ng, Jordan & Russell, NIPS 2002), certified.

The exact convex problems of Weinberger & Saul (JMLR 2009, sec. 2.3.1) and of Xing et
al. (diagonal metric), solved in cvxpy, refined, and returned with a rigorous bound
that anyone can re-check from the saved evidence.

- ``problem``: the pairs (explicit, or implicit label pairs), the two objectives (MMC)
  and (XING), input checks (numpy).
- ``pairs``: sums over a problem's pairs, explicit (numpy) or implicit (``compiled``).
- ``compiled``: the numba loops over all label pairs, blockwise, never formed.
- ``bound``: weak duality from tangent points and one multiplier (numpy, scipy).
- ``certificate``: ``MMCCertificate`` with its evidence, ``verify``, ``save``/``load``;
  ``certify_mmc`` for any candidate metric (numpy, scipy).
- ``refine``: the generalised power method that polishes a solver's metric (numpy).
- ``solve``: ``solve_mmc`` and ``MMCResult`` (cvxpy).
- ``estimator``: the scikit-learn transformer ``MMC``.

This package imports nothing itself, so ``lmnn_sdp.mmc.certificate`` checks a
certificate without loading cvxpy; the public names are exported by ``lmnn_sdp``.
"""
