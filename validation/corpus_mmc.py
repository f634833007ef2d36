r"""Corpus entries of MMC (Xing et al. 2002; JMLR 2009, sec. 2.3.1), full and diagonal.

The maximisation of ``lmnn_sdp.mmc`` over PSD (or diagonal) ``A`` with
``u_p = x_i - x_j`` for dissimilar pairs and ``Sigma = sum_S v_q v_q^T``::

    P* = max f(A) = sum_p sqrt(u_p^T A u_p)   s.t.  <A, Sigma> <= 1.

Arrays: ``X`` (n, d), ``y`` (n,), ``similar`` (S, 2) and ``dissimilar`` (P, 2)
int64 index pairs, the certified metric ``M`` (d, d) with ``<M, Sigma> = 1``,
and the certificate: tangent points ``tangents`` (P,) > 0 and ``multiplier`` ().
Weak duality (``lmnn_sdp.mmc``, steps 1-2): ``sqrt(t) <= t / (2 s_p) + s_p / 2``
gives ``f(A) <= <A, G_s> + sum(s) / 2`` with ``G_s = sum_p u_p u_p^T / (2 s_p)``,
and ``lambda Sigma - G_s`` PSD gives ``<A, G_s> <= lambda <A, Sigma> <= lambda``,
so ``P* <= sum(s) / 2 + lambda``. Diagonal ``A`` needs only
``lambda Sigma_kk >= (G_s)_kk``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg

from lmnn_sdp.mmc import TANGENT_FLOORS, label_pairs, solve_mmc
from validation.corpus_lmnn import is_psd
from validation.instances import bundled_subset

OBJECTIVE = ("f(A) = sum_{(i, j) dissimilar} sqrt((x_i-x_j)^T A (x_i-x_j)), maximised subject "
             "to sum_{(i, j) similar} (x_i-x_j)^T A (x_i-x_j) <= 1, A PSD (Xing et al. 2002; "
             "JMLR 2009, sec. 2.3.1)")
OBJECTIVE_DIAGONAL = OBJECTIVE.replace("A PSD", "A diagonal >= 0")
STORED_MARGIN = 1e-9  # relative increase of the stored multiplier over the computed one
ROUNDING = 1e-10  # relative margin the check demands between them


@dataclass(frozen=True)
class MMCInstance:
    """MMC on all label pairs of ``X`` (n, d), ``y`` (n,); full or diagonal metric."""

    name: str
    X: np.ndarray
    y: np.ndarray
    diagonal: bool
    source: str


def mmc_instances() -> list[MMCInstance]:
    """Iris (all rows) and a wine subset (standardised), each full and diagonal."""
    out = []
    for data, n, seed in [("iris", 150, 0), ("wine", 100, 6)]:
        X, y, source = bundled_subset(data, n, seed)
        for diagonal in (False, True):
            name = f"mmc{'-diagonal' if diagonal else ''}-{data}-n{n}"
            out.append(MMCInstance(name, X, y, diagonal, f"{source}, all label pairs"))
    return out


def certify(instance: MMCInstance, tol: float) -> tuple[dict, dict]:
    """Solve and certify one instance; returns ``(arrays, manifest entry)``.

    Diagonal metrics are also polished (``polish_diagonal``); the candidate with
    the smaller certified gap is stored."""
    X, diagonal = instance.X, instance.diagonal
    similar, dissimilar = label_pairs(instance.y)
    result = solve_mmc(X, similar=similar, dissimilar=dissimilar, diagonal=diagonal, tol=tol)
    U, V = _differences(X, dissimilar), _differences(X, similar)
    candidates = {"": result.metric}
    if diagonal:
        candidates[", Newton-polished on its support"] = polish_diagonal(U, V, result.metric)
    certified = {how: _certificate(U, V, M, diagonal) for how, M in candidates.items()}
    how = min(certified, key=lambda h: certified[h].gap)
    best = certified[how]
    if best.gap > tol:
        raise RuntimeError(f"{instance.name}: certified only to {best.gap:.2g}")
    arrays = {"X": X, "y": np.unique(instance.y, return_inverse=True)[1].astype(np.int64),
              "similar": similar.astype(np.int64), "dissimilar": dissimilar.astype(np.int64),
              "M": best.M, "tangents": best.tangents, "multiplier": np.float64(best.multiplier)}
    entry = {"problem": "mmc-diagonal" if diagonal else "mmc", "n": len(X), "d": X.shape[1],
             "classes": len(np.unique(instance.y)), "similar": len(similar),
             "dissimilar": len(dissimilar), "optimum": best.value, "upper_bound": best.upper,
             "relative_gap": best.gap, "source": instance.source,
             "solver": f"lmnn_sdp.mmc.solve_mmc, {result.solver} (status {result.status}){how}"}
    return arrays, entry


def verify(data: dict, diagonal: bool) -> tuple[float, float, bool]:
    """``(f(M / <M, Sigma>), sum(tangents) / 2 + multiplier, certificate and M feasible)``.

    Feasible: ``M`` PSD (diagonal if asked), tangents > 0 and the multiplier at
    least ``(1 + ROUNDING)`` times the smallest one that makes ``lambda Sigma - G_s``
    PSD (diagonal: non-negative on the diagonal)."""
    U, V = _differences(data["X"], data["dissimilar"]), _differences(data["X"], data["similar"])
    M, s, lam = data["M"], data["tangents"], float(data["multiplier"])
    value = _value(U, V, M)
    holds = (is_psd(M) and (not diagonal or np.array_equal(M, np.diag(np.diag(M))))
             and bool(np.all(s > 0))
             and lam >= (1 + ROUNDING) * smallest_multiplier(U, V, s, diagonal))
    return value, float(s.sum() / 2 + lam), holds


def smallest_multiplier(U: np.ndarray, V: np.ndarray, s: np.ndarray, diagonal: bool) -> float:
    """Least ``lambda`` with ``lambda Sigma - G_s`` PSD (diagonal: entrywise on the diagonal).

    ``U`` (P, d) dissimilar and ``V`` (S, d) similar differences, ``s`` (P,) > 0:
    the largest generalised eigenvalue of ``(G_s, Sigma)``; ``Sigma`` must be
    positive definite (the similar differences span R^d)."""
    G = (U / (2 * s)[:, None]).T @ U
    if diagonal:
        return float(np.max(np.diag(G) / np.sum(V**2, axis=0)))
    return float(scipy.linalg.eigh(G, V.T @ V, eigvals_only=True)[-1])


def polish_diagonal(U: np.ndarray, V: np.ndarray, metric: np.ndarray,
                    steps: int = 50) -> np.ndarray:
    """Newton's method on the KKT system of the diagonal problem on the support of ``metric``.

    On the features ``K`` with ``a_k > 1e-6 max a``: ``grad h(b) = lambda sigma_K``,
    ``<sigma_K, b> = 1``, ``h(b) = sum_p sqrt(<w_p, b>)``, ``w_p = u_p * u_p`` restricted
    to ``K`` (pairs with ``w_p = 0`` there drop out). The solver's small weights are
    accurate to its tolerance only; their tangent points, not the objective, need more.
    Returns the diagonal metric (d, d), negative weights set to 0; ``metric`` itself
    when Newton's method leaves the domain."""
    a = np.diag(metric)
    support = a > 1e-6 * a.max()
    W, sigma = U[:, support] ** 2, np.sum(V[:, support] ** 2, axis=0)
    W = W[W.any(axis=1)]
    b = a[support] / (sigma @ a[support])
    lam = np.sum(np.sqrt(W @ b)) / 2  # Euler: <grad h(b), b> = h(b) / 2 and <sigma, b> = 1
    for _ in range(steps):
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.sqrt(W @ b)
        hessian = -(W / (4 * r**3)[:, None]).T @ W
        kkt = np.block([[hessian, -sigma[:, None]], [sigma[None, :], np.zeros((1, 1))]])
        step = np.linalg.solve(kkt, -np.r_[W.T @ (0.5 / r) - lam * sigma, sigma @ b - 1])
        b, lam = b + step[:-1], lam + step[-1]
        if not np.all(np.isfinite(b)):
            return metric  # Newton left the domain: keep the solver's metric
        if np.abs(step[:-1]).max() <= 1e-15 * np.abs(b).max():
            break
    out = np.zeros_like(a)
    out[support] = np.maximum(b, 0.0)
    return np.diag(out)


class Certified(NamedTuple):
    """A metric with ``<M, Sigma> = 1``, its value and the certificate of its upper bound."""

    M: np.ndarray  # (d, d)
    value: float  # f(M), M feasible
    upper: float  # sum(tangents) / 2 + multiplier
    tangents: np.ndarray  # (P,) > 0
    multiplier: float

    @property
    def gap(self) -> float:
        return (self.upper - self.value) / self.value


def _certificate(U: np.ndarray, V: np.ndarray, metric: np.ndarray, diagonal: bool) -> Certified:
    """``metric`` (d, d) scaled to ``<M, Sigma> = 1``, certified with its own tangent points.

    Tangent points: the roots ``sqrt(D_M(p))`` lifted to ``floor * max root``, the
    floor on a grid (as in ``lmnn_sdp.mmc``), then scaled by ``tau`` to balance
    ``sum(s) / 2`` and ``lambda(s)`` (step 4 of ``lmnn_sdp.mmc``); the multiplier
    is raised by ``STORED_MARGIN`` so that a check's rounding cannot reject it."""
    M = metric / np.sum(_distances(V, metric))
    roots = np.sqrt(np.maximum(_distances(U, M), 0.0))
    best = None
    for floor in TANGENT_FLOORS:
        s = np.maximum(roots, floor * roots.max())
        if s.min() > 0:
            lam = smallest_multiplier(U, V, s, diagonal)
            tau = np.sqrt(2 * lam / s.sum())
            s, lam = tau * s, (1 + STORED_MARGIN) * lam / tau
            if best is None or s.sum() / 2 + lam < best[1]:
                best = (s, float(s.sum() / 2 + lam), float(lam))
    tangents, upper, multiplier = best
    return Certified(M, _value(U, V, M), upper, tangents, multiplier)


def _value(U: np.ndarray, V: np.ndarray, M: np.ndarray) -> float:
    """``f(M / <M, Sigma>)``: the objective at the feasible rescaling of ``M`` (d, d)."""
    roots = np.sqrt(np.maximum(_distances(U, M), 0.0))  # M is PSD: negatives are rounding
    return float(np.sum(roots) / np.sqrt(np.sum(_distances(V, M))))


def _distances(U: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``u_p^T M u_p`` for the rows of ``U`` (P, d); shape (P,)."""
    return np.einsum("pd,de,pe->p", U, M, U)


def _differences(X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    return X[pairs[:, 0]] - X[pairs[:, 1]]
