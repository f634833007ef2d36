r"""Sums over the pairs of an MMC problem: explicit pairs in numpy, implicit label pairs
blockwise (``lmnn_sdp.mmc.compiled``), one interface for ``bound`` and ``certificate``.

Notation of ``lmnn_sdp.mmc.problem``; ``D_p = u_p^T M u_p`` and ``e_p`` its uncertainty,
so that ``D_p - e_p`` is, to first order, at most the distance under any metric whose
entries are within three roundings of ``M``'s (the certificate's ``feasible_value``).

- Explicit pairs: ``D_p`` in twice the working precision (``accurate_distances``),
  ``e_p = entry_rounding`` (``3 eps |u_p|^T |M| |u_p|``).
- Implicit pairs: ``D_p = |L u_p|^2`` in plain floating point, with ``e_p = kappa |S u_p|^2``.
  ``S = diag(sqrt(w))``, ``w_k = max(M_kk, eps max_l M_ll)``, equilibrates ``M``:
  ``L = K S`` for ``K`` (k, d) the positive eigenpairs of ``S^-1 M S^-1`` (unit
  diagonal), and::

      kappa = ||K^T K - S^-1 M S^-1||_2 + (k + 2d + 5) eps || |K| ||_2^2
              + 3 eps || S^-1 |M| S^-1 ||_2

  (diagonal ``M``: ``D_p = sum_k M_kk u_k^2``, ``kappa = (d + 5) eps``): the factor's
  defect, the rounding of ``L`` and of ``k`` dot products of length ``d`` and a sum of
  ``k`` squares (Higham, *Accuracy and Stability of Numerical Algorithms*, sec. 3.1),
  and the three roundings of ``M``'s entries, each bounded through
  ``|a^T B b| <= ||S^-1 |B| S^-1||_2 |S a| |S b|``. Without ``S`` the eigenvectors of a
  metric whose diagonal spans 1e10 carry an error ``eps ||M||`` that swamps its small
  entries.

The similar scatter ``Sigma = sum_q v_q v_q^T`` is ``R^T R`` for ``R`` (rows) the stacked
``v_q``, or, for label pairs, ``sqrt(n_c) (x_i - m_c)`` (class sizes ``n_c``, means ``m_c``):
``sum_{i<j in c} (x_i - x_j)(x_i - x_j)^T = n_c sum_{i in c} (x_i - m_c)(x_i - m_c)^T``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lmnn_sdp.mmc import compiled
from lmnn_sdp.mmc.problem import MMCProblem, accurate_distances, entry_rounding

_EPS = np.finfo(float).eps
_NO_FLOORS = np.empty(0)


@dataclass(frozen=True)
class DissimilarSums:
    """``sum_p sqrt(max(D_p, 0))``, ``sum_p sqrt(max(D_p - e_p, 0))`` and the largest root."""

    roots: float
    low_roots: float
    largest_root: float


@dataclass(frozen=True)
class TangentSums:
    """Step 1 of ``lmnn_sdp.mmc.bound`` for every floor of ``floors`` (m,), ascending.

    The dissimilar pairs fall into buckets ``b = 0..m``, how many floors lie below the
    root ``r_p = sqrt(max(D_p, 0))``; per bucket, ``roots`` and ``counts`` (m + 1,), and
    ``over_roots`` (sum of ``u u^T / (2 r_p)``, buckets >= 1) and ``plain`` (sum of
    ``u u^T``, buckets < m), each (m + 1, d, d), or (m + 1, d) diagonals (diagonal problems)."""

    floors: np.ndarray
    roots: np.ndarray
    counts: np.ndarray
    over_roots: np.ndarray
    plain: np.ndarray


def similar_factor(problem: MMCProblem) -> np.ndarray:
    """``R`` (rows, d) with ``R^T R = Sigma`` (module docstring)."""
    if not problem.implicit:
        return problem.similar_differences
    X, y = problem.X, problem.y
    counts = np.bincount(y)
    means = np.zeros((len(counts), X.shape[1]))
    np.add.at(means, y, X)
    means /= counts[:, None]
    return np.sqrt(counts[y])[:, None] * (X - means[y])


def dissimilar_extent(problem: MMCProblem, basis: np.ndarray) -> tuple[float, float]:
    """The largest entry of ``u_p - basis^T basis u_p`` and of ``u_p`` over the dissimilar
    pairs, for ``basis`` (r, d) with orthonormal rows (implicit: from class extremes)."""
    if not problem.implicit:
        U = problem.dissimilar_differences
        return float(np.abs(U - U @ basis.T @ basis).max()), float(np.abs(U).max())
    X = problem.X - problem.X.mean(axis=0)
    residual = X - (X @ basis.T) @ basis
    return _cross_class_spread(residual, problem.y), _cross_class_spread(X, problem.y)


def _cross_class_spread(A: np.ndarray, codes: np.ndarray) -> float:
    """``max |A_ik - A_jk|`` over pairs with ``codes[i] != codes[j]`` and features ``k``."""
    n_classes = codes.max() + 1
    high = np.full((n_classes, A.shape[1]), -np.inf)
    low = np.full((n_classes, A.shape[1]), np.inf)
    np.maximum.at(high, codes, A)
    np.minimum.at(low, codes, A)
    spread = high[:, None, :] - low[None, :, :]  # (class of i, class of j, feature)
    spread[np.arange(n_classes), np.arange(n_classes)] = -np.inf
    return float(max(spread.max(), 0.0))


def summation_depth(problem: MMCProblem) -> int:
    """How many terms a sum over pairs adds in one run: ``P + S`` for explicit pairs (numpy
    may add them in one sequence), the compiled loops' ``LabelLayout.depth`` for implicit ones."""
    if problem.implicit:
        return implicit_layout(problem)[0].depth
    return problem.n_dissimilar + problem.n_similar


def similar_sums(problem: MMCProblem, M: np.ndarray) -> tuple[float, float]:
    """``(sum_q D_q, sum_q e_q)`` over the similar pairs, for ``M`` (d, d)."""
    if not problem.implicit:
        V = problem.similar_differences
        return float(np.sum(accurate_distances(V, M))), float(np.sum(entry_rounding(V, M)))
    sums = _implicit_pass(problem, M, similar=True, floors=_NO_FLOORS)[0].sum(axis=0)
    return float(sums[0]), float(sums[1])


def dissimilar_sums(problem: MMCProblem, M: np.ndarray) -> DissimilarSums:
    """The sums of ``DissimilarSums`` at ``M`` (d, d)."""
    if not problem.implicit:
        U = problem.dissimilar_differences
        distances = accurate_distances(U, M)
        low = np.maximum(distances - entry_rounding(U, M), 0.0)
        roots = np.sqrt(np.maximum(distances, 0.0))
        return DissimilarSums(float(np.sum(roots)), float(np.sum(np.sqrt(low))),
                              float(roots.max()))
    return tangent_sums(problem, M, _NO_FLOORS)[0]


def tangent_sums(problem: MMCProblem, M: np.ndarray,
                 floors: np.ndarray) -> tuple[DissimilarSums, TangentSums]:
    """One pass over the implicit dissimilar pairs at ``M`` (d, d): their sums, and the
    tangent sums for ``floors`` (m,) ascending and >= 0 (empty: none)."""
    floors = np.ascontiguousarray(floors, dtype=float)
    sums, roots, counts, over_roots, plain = _implicit_pass(problem, M, False, floors)
    total = sums.sum(axis=0)
    dissimilar = DissimilarSums(float(total[2]), float(total[3]), float(sums[:, 4].max()))
    over_roots, plain = over_roots.sum(axis=0), plain.sum(axis=0)
    if not problem.diagonal:
        over_roots, plain = _symmetric(over_roots), _symmetric(plain)
    return dissimilar, TangentSums(floors, roots.sum(axis=0), counts.sum(axis=0), over_roots,
                                   plain)


def _implicit_pass(problem: MMCProblem, M: np.ndarray, similar: bool, floors: np.ndarray):
    """``compiled.pair_sums`` over the similar or dissimilar label pairs at ``M``."""
    layout, XT = implicit_layout(problem)
    factor, weights, slack = _factor(M, problem.diagonal)
    chunks = layout.similar_chunks if similar else layout.dissimilar_chunks
    return compiled.pair_sums(XT, factor, weights, slack, layout.class_end, chunks, similar,
                             floors, problem.diagonal)


@lru_cache(maxsize=4)
def implicit_layout(problem: MMCProblem) -> tuple[compiled.LabelLayout, np.ndarray]:
    """The label layout of an implicit problem and its inputs sorted by class, ``XT`` (d, n)."""
    layout = compiled.label_layout(problem.y)
    return layout, np.ascontiguousarray(problem.X[layout.order].T)


def _factor(M: np.ndarray, diagonal: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """``L`` (k, d) with ``|L u|^2`` the distance, the weights ``w`` (d,) and ``kappa``
    (module docstring); for a diagonal ``M``, ``L`` is the row ``diag(M)`` (1, d), read by
    the compiled loops as weights."""
    d = len(M)
    if diagonal:
        weights = np.diag(M).copy()
        return weights[None, :], weights, (d + 5) * _EPS
    weights = np.maximum(np.diag(M), _EPS * np.diag(M).max())
    scale = np.sqrt(weights)
    balanced = M / scale[:, None] / scale[None, :]
    eigenvalues, vectors = np.linalg.eigh((balanced + balanced.T) / 2)
    keep = eigenvalues > 0
    K = np.sqrt(eigenvalues[keep])[:, None] * vectors[:, keep].T
    defect = float(np.abs(np.linalg.eigvalsh(K.T @ K - balanced)).max())
    spread = float(np.linalg.norm(np.abs(K), 2) ** 2) if keep.any() else 0.0
    entries = float(np.linalg.norm(np.abs(balanced), 2))
    slack = defect + (len(K) + 2 * d + 5) * _EPS * spread + 3 * _EPS * entries
    return np.ascontiguousarray(K * scale[None, :]), weights, slack


def _symmetric(packed: np.ndarray) -> np.ndarray:
    """(..., d (d + 1) / 2) rows ``k <= l`` -> (..., d, d) symmetric."""
    width = packed.shape[-1]
    d = int((np.sqrt(8 * width + 1) - 1) / 2)
    rows, cols = np.triu_indices(d)
    out = np.zeros(packed.shape[:-1] + (d, d))
    out[..., rows, cols] = packed
    out[..., cols, rows] = packed
    return out
