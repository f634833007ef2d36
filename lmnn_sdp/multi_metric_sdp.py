"""The SDP of sec. 5.2 and its dual in cvxpy, with singular clusters taken out exactly.

Pair distances. A margin ``1 + D^_ij - D^_il`` (eq. 16) is a difference of two
distances of distinct (pair, metric) combinations (``cluster_pairs``): three
nonzeros per triplet, and one sparse operator for all metrics
(``pair_operator``), so no Python loop over triplets builds the model.

Singular clusters. When the target differences of cluster ``c`` do not span the
data range, ``P_c`` has a null space ``N_c`` there. ``M_c`` can then grow on
``N_c`` at no cost: target distances into ``c`` (whose differences lie in the
range ``R_c`` of ``P_c``) do not change, and every impostor ``l`` of ``c`` with a
component on ``N_c`` is pushed out of the margin. So the optimum is

    M_c = B_c M'_c B_c^T + t_c N_c N_c^T,

with ``B_c`` an orthonormal basis of ``R_c``, ``M'_c`` from the SDP restricted to
``R_c`` without those impostor triplets (they are "killable"), and ``t_c`` large
enough to put each of them at margin -1 or below (``push_out_of_null_spaces``).
Restricted this way both SDPs stay strictly feasible, which an interior point
method needs; left in, ``M_c`` runs off to infinity along ``N_c`` (Clarabel
failed on Letter Recognition, n=300, where 24 of 26 classes are singular). The
answer is still judged only by ``mm_objective`` and the certificate.

"Killable" means a component ``|N_c^T v|^2 > 1e-12 |v|^2``: a component however
small lets the optimum push the impostor out, so the certificate can give it no
multiplier, and treating it as part of ``R_c`` leaves a gap that never closes
(Letter Recognition, n=500: with a threshold of 1e-6, eight triplets with
components of 3e-10..9e-9 held the certified gap at 0.87%). The price is large
metrics: ``t_c`` reached 5e6 there, and ``mm_objective`` in float64 then agreed
with a long-double evaluation to 5e-9 relative, not 1e-15.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from lmnn_sdp.dual import SDPSolution, variable_value
from lmnn_sdp.formulation import (
    ReducedSpace,
    pair_outer_svec,
    svec,
    svec_to_matrix,
    svec_weights,
)
from lmnn_sdp.lmnn import dual_or_nan
from lmnn_sdp.multi_metric_objective import cluster_pull_matrices, mm_target_distances
from lmnn_sdp.problem import BLOCK_BYTES, LMNNProblem

_KILLABLE = 1e-12  # an impostor is killable when |N_c^T v|^2 > _KILLABLE |v|^2


@dataclass(frozen=True)
class ClusterSpaces:
    """Per cluster, an orthonormal basis (r, r_c) of the range of ``P_c`` and (r, r - r_c) of
    its null space, both in reduced coordinates; ``r_c = r`` for a regular cluster."""

    bases: tuple
    nulls: tuple

    @property
    def singular(self) -> tuple:
        return tuple(c for c, N in enumerate(self.nulls) if N.shape[1])

    def restrict(self, matrices: np.ndarray) -> list[np.ndarray]:
        """``B_c^T S_c B_c`` for matrices (C, r, r); a list of (r_c, r_c)."""
        return [B.T @ S @ B for B, S in zip(self.bases, matrices)]

    def expand(self, restricted: list[np.ndarray]) -> np.ndarray:
        """``B_c M'_c B_c^T`` for a list of (r_c, r_c); shape (C, r, r)."""
        return np.stack([B @ M @ B.T for B, M in zip(self.bases, restricted)])


def reduced_pulls(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray) -> np.ndarray:
    """The pull matrices ``P_c`` in reduced coordinates, shape (C, r, r)."""
    return np.stack([space.matrix(P) for P in cluster_pull_matrices(problem, clusters)])


def cluster_spaces(pulls: np.ndarray, rtol: float = 1e-9) -> ClusterSpaces:
    """Range and null space of each ``P_c`` (C, r, r); eigenvalues below ``rtol * max`` are 0."""
    w, U = np.linalg.eigh(pulls)
    top = max(float(w.max()), np.finfo(float).tiny)
    keep = w > rtol * top
    return ClusterSpaces(bases=tuple(U[c][:, keep[c]] for c in range(len(w))),
                         nulls=tuple(U[c][:, ~keep[c]] for c in range(len(w))))


@dataclass(frozen=True)
class ClusterPairs:
    """Distinct (pair, metric) combinations of a triplet set and the signed incidence ``S``.

    Pair ``p`` is measured by metric ``clusters[p]``: ``(i, j)`` by ``M_{c(j)}`` and
    ``(i, l)`` by ``M_{c(l)}`` (eq. 16). Pairs are sorted by cluster. With one
    cluster this is ``formulation.triplet_pairs``."""

    pairs: np.ndarray  # (P, 2), a < b
    clusters: np.ndarray  # (P,)
    signs: sp.csr_matrix  # (T, P): margins = 1 + signs @ pair_distances


def cluster_pairs(triplets: np.ndarray, clusters: np.ndarray) -> ClusterPairs:
    """Merge the (i, j) and (i, l) pairs of ``triplets`` (T, 3) into distinct (pair, metric)s."""
    T, n = len(triplets), len(clusters)
    first = np.concatenate([triplets[:, 0], triplets[:, 0]]).astype(np.int64)
    second = np.concatenate([triplets[:, 1], triplets[:, 2]]).astype(np.int64)
    owner = clusters[second].astype(np.int64)
    keys = (owner * n + np.minimum(first, second)) * n + np.maximum(first, second)
    unique, column = np.unique(keys, return_inverse=True)
    pairs = np.column_stack([unique // n % n, unique % n]).astype(np.intp)
    rows = np.concatenate([np.arange(T), np.arange(T)])
    values = np.concatenate([np.ones(T), -np.ones(T)])
    signs = sp.csr_matrix((values, (rows, column.ravel())), shape=(T, len(unique)))
    return ClusterPairs(pairs=pairs, clusters=(unique // (n * n)).astype(np.intp), signs=signs)


def pair_operator(space: ReducedSpace, cspaces: ClusterSpaces,
                  pairs: ClusterPairs) -> sp.csr_matrix:
    """Sparse (P, sum_c q_c), q_c = r_c (r_c + 1) / 2: row ``p`` is ``svec(B_c^T C_p B_c)``
    in the block of its metric ``c``.

    With ``m`` stacking ``svec(M'_c)``, pair distances are ``(op * w) @ m`` (``w`` the
    svec weights); ``op^T w`` stacks ``svec(B_c^T (sum_p w_p C_p) B_c)``."""
    V = space.inputs[pairs.pairs[:, 0]] - space.inputs[pairs.pairs[:, 1]]
    return _cluster_blocks(cspaces, pairs.clusters, lambda B, rows: pair_outer_svec(V[rows] @ B))


def _cluster_blocks(cspaces: ClusterSpaces, owner: np.ndarray, values) -> sp.csr_matrix:
    """Sparse (len(owner), sum_c q_c): row ``p`` holds ``values(B_c, rows)`` (len(rows), q_c)
    in the block of cluster ``c = owner[p]``."""
    offsets = _offsets(cspaces)
    parts = []
    for c, B in enumerate(cspaces.bases):
        rows = np.flatnonzero(owner == c)
        q = offsets[c + 1] - offsets[c]
        block = np.asarray(values(B, rows)).reshape(len(rows), q)
        cols = np.tile(offsets[c] + np.arange(q), len(rows))
        parts.append(sp.coo_matrix((block.ravel(), (np.repeat(rows, q), cols)),
                                   shape=(len(owner), offsets[-1])))
    return sp.csr_matrix(sum(parts))


@dataclass(frozen=True)
class FixedGroups:
    """Triplets whose multipliers are tied: ``lambda_t = beta_g mu`` for ``t`` in group ``g``.

    A group holds the triplets of one anchor ``i`` whose targets lie in cluster
    ``target_cluster[g]`` and impostors in ``impostor_cluster[g]``; its part of the
    dual is ``- beta_g mu F_g`` with ``F_g = sum_t (C_il [c(l)=c] - C_ij [c(j)=c])``,
    which touches two clusters only."""

    index: np.ndarray  # (T,) group of each triplet
    target_cluster: np.ndarray  # (G,)
    impostor_cluster: np.ndarray  # (G,)
    targets: np.ndarray  # (G, r, r): sum_t C_ij, reduced coordinates
    impostors: np.ndarray  # (G, r, r): sum_t C_il
    sizes: np.ndarray  # (G,) triplets per group


def fixed_groups(space: ReducedSpace, clusters: np.ndarray, triplets: np.ndarray) -> FixedGroups:
    """Group ``triplets`` (T, 3) by anchor ``i`` and the clusters ``(c(j), c(l))``."""
    C = int(clusters.max()) + 1
    keys = ((triplets[:, 0].astype(np.int64) * C + clusters[triplets[:, 1]]) * C
            + clusters[triplets[:, 2]])
    unique, index = np.unique(keys, return_inverse=True)
    Xr = space.inputs
    index, G = index.ravel(), len(unique)
    return FixedGroups(
        index=index, target_cluster=unique // C % C, impostor_cluster=unique % C,
        targets=_grouped_outer(Xr[triplets[:, 0]] - Xr[triplets[:, 1]], index, G),
        impostors=_grouped_outer(Xr[triplets[:, 0]] - Xr[triplets[:, 2]], index, G),
        sizes=np.bincount(index, minlength=G))


def _grouped_outer(V: np.ndarray, index: np.ndarray, G: int) -> np.ndarray:
    """``sum_{t in g} v_t v_t^T`` for rows of ``V`` (T, r) grouped by ``index``; (G, r, r)."""
    out = np.zeros((G, V.shape[1], V.shape[1]))
    for start in range(0, len(V), 65536):
        s = slice(start, start + 65536)
        np.add.at(out, index[s], np.einsum("ti,tj->tij", V[s], V[s]))
    return out


def _group_operator(cspaces: ClusterSpaces, groups: FixedGroups) -> sp.csr_matrix:
    """Sparse (sum_c q_c, G): column ``g`` stacks ``svec(B_c^T F_g B_c)`` over the clusters."""
    def restricted(S):
        return lambda B, g: svec_rows(np.einsum("ai,gab,bj->gij", B, S[g], B))

    impostors = _cluster_blocks(cspaces, groups.impostor_cluster, restricted(groups.impostors))
    targets = _cluster_blocks(cspaces, groups.target_cluster, restricted(groups.targets))
    return (impostors - targets).T.tocsr()


def mm_primal_sdp(space: ReducedSpace, cspaces: ClusterSpaces, mu: float, pulls: np.ndarray,
                  clusters: np.ndarray, triplets: np.ndarray):
    """cvxpy problem of the SDP of sec. 5.2 on ``triplets`` (T, 3), metrics restricted to
    the ranges ``R_c``. Returns ``(problem, m, margin_constraint)``; ``m`` stacks ``svec(M'_c)``."""
    offsets, weights = _offsets(cspaces), _weights(cspaces)
    m = cp.Variable(offsets[-1])
    pull = np.concatenate([svec(P) for P in cspaces.restrict(pulls)])
    objective = (1.0 - mu) * ((pull * weights) @ m)
    constraints = [_matrix(m, offsets, c, B.shape[1]) >> 0
                   for c, B in enumerate(cspaces.bases) if B.shape[1]]
    margins = None
    if len(triplets):
        pairs = cluster_pairs(triplets, clusters)
        distances = cp.Variable(len(pairs.pairs))
        slack = cp.Variable(len(triplets), nonneg=True)
        margins = slack >= 1 + pairs.signs @ distances
        operator = pair_operator(space, cspaces, pairs) @ sp.diags(weights)
        constraints += [distances == operator @ m, margins]
        objective = objective + mu * cp.sum(slack)
    return cp.Problem(cp.Minimize(objective), constraints), m, margins


def mm_dual_sdp(space: ReducedSpace, cspaces: ClusterSpaces, mu: float, pulls: np.ndarray,
                clusters: np.ndarray, triplets: np.ndarray, fixed: FixedGroups | None = None):
    """cvxpy problem of the dual of sec. 5.2 (``multi_metric``) on ``triplets`` (T, 3).

    ``Z_c`` is taken on ``R_c``. ``fixed`` are optional groups of tied multipliers
    ``beta_g mu`` (0 <= beta_g <= 1). Returns ``(problem, lam, beta, psd_constraints)``
    (``None`` for an empty ``R_c``)."""
    offsets = _offsets(cspaces)
    z = (1.0 - mu) * np.concatenate([svec(P) for P in cspaces.restrict(pulls)])
    objective, constraints, lam, beta = 0, [], None, None
    if len(triplets):
        pairs = cluster_pairs(triplets, clusters)
        lam, w = cp.Variable(len(triplets)), cp.Variable(len(pairs.pairs))
        constraints += [lam >= 0, lam <= mu, w == pairs.signs.T @ lam]
        z = z + pair_operator(space, cspaces, pairs).T @ w
        objective = cp.sum(lam)
    if fixed is not None:
        beta = cp.Variable(len(fixed.sizes))
        constraints += [beta >= 0, beta <= 1]
        z = z - mu * (_group_operator(cspaces, fixed) @ beta)
        objective = objective + mu * (fixed.sizes @ beta)
    psd = [_matrix(z, offsets, c, B.shape[1]) >> 0 if B.shape[1] else None
           for c, B in enumerate(cspaces.bases)]
    problem = cp.Problem(cp.Maximize(objective), constraints + [p for p in psd if p is not None])
    return problem, lam, beta, psd


def solve_mm_primal(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                    triplets: np.ndarray, solver: str,
                    solver_options: dict | None = None) -> SDPSolution:
    """Solve ``mm_primal_sdp`` without the killable triplets (their multipliers are 0).

    ``M_reduced`` (C, r, r) is ``B_c M'_c B_c^T``, before ``push_out_of_null_spaces``."""
    start = time.perf_counter()
    pulls = reduced_pulls(problem, space, clusters)
    cspaces = cluster_spaces(pulls)
    keep = ~killable(space, cspaces, clusters, triplets)
    cvx_problem, m, margins = mm_primal_sdp(space, cspaces, problem.mu, pulls, clusters,
                                            triplets[keep])
    _solve(cvx_problem, solver, solver_options)
    offsets, sizes = _offsets(cspaces), [B.shape[1] for B in cspaces.bases]
    if m.value is None:
        restricted = [np.full((r, r), np.nan) for r in sizes]
    else:
        restricted = [_unpack(m.value, offsets, c, r) for c, r in enumerate(sizes)]
    multipliers = np.zeros(len(triplets))
    if margins is not None:
        multipliers[keep] = dual_or_nan(margins, int(keep.sum()))
    return _solution(cvx_problem, cspaces.expand(restricted), multipliers, start)


def solve_mm_dual(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                  triplets: np.ndarray, solver: str = "CLARABEL", fixed: FixedGroups | None = None,
                  solver_options: dict | None = None) -> SDPSolution:
    """Solve ``mm_dual_sdp`` without the killable triplets; ``M_reduced`` (C, r, r) is
    ``B_c M'_c B_c^T`` with ``M'_c`` the PSD constraints' duals. ``beta`` of the result
    is the array (G,) of the groups' weights."""
    start = time.perf_counter()
    pulls = reduced_pulls(problem, space, clusters)
    cspaces = cluster_spaces(pulls)
    keep = ~killable(space, cspaces, clusters, triplets)
    cvx_problem, lam, beta, psd = mm_dual_sdp(space, cspaces, problem.mu, pulls, clusters,
                                              triplets[keep], fixed)
    multipliers = np.zeros(len(triplets))
    if lam is None and beta is None:  # no multiplier: dual value 0, attained by M = 0
        return SDPSolution(np.zeros_like(pulls), multipliers, "trivial", 0.0, 0.0)
    _solve(cvx_problem, solver, solver_options)
    restricted = [np.zeros((0, 0)) if con is None else
                  np.full(con.args[0].shape, np.nan) if con.dual_value is None else
                  (con.dual_value + con.dual_value.T) / 2 for con in psd]
    multipliers[keep] = variable_value(lam, int(keep.sum()))
    solution = _solution(cvx_problem, cspaces.expand(restricted), multipliers, start)
    solution.beta = variable_value(beta, 0 if fixed is None else len(fixed.sizes))
    return solution


def killable(space: ReducedSpace, cspaces: ClusterSpaces, clusters: np.ndarray,
             triplets: np.ndarray) -> np.ndarray:
    """Triplets (T, 3) whose impostor ``l`` lies in a singular cluster and has a
    component on its null space (module docstring); bool (T,)."""
    out = np.zeros(len(triplets), dtype=bool)
    Xr = space.inputs
    for c in cspaces.singular:
        rows = np.flatnonzero(clusters[triplets[:, 2]] == c)
        V = Xr[triplets[rows, 0]] - Xr[triplets[rows, 2]]
        null = np.sum((V @ cspaces.nulls[c]) ** 2, axis=1)
        out[rows] = null > _KILLABLE * np.sum(V**2, axis=1)
    return out


def push_out_of_null_spaces(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                            metrics: np.ndarray) -> np.ndarray:
    """Add ``t_c N_c N_c^T`` to the metric of every singular cluster, shape (C, d, d).

    ``t_c`` puts every killable impostor of cluster ``c`` at margin -1 or below;
    nothing else moves (target differences into ``c`` have no component on ``N_c``)."""
    cspaces = cluster_spaces(reduced_pulls(problem, space, clusters))
    out = np.array(metrics, dtype=float)
    for c in cspaces.singular:
        t = _null_scale(problem, space, clusters, metrics, c, cspaces.nulls[c])
        out[c] += space.lift(t * cspaces.nulls[c] @ cspaces.nulls[c].T)
    return out


def _null_scale(problem, space, clusters, metrics, c, N) -> float:
    """Smallest ``t`` putting each killable impostor of cluster ``c`` at margin <= -1."""
    Xc, Y = problem.X_centered, space.inputs @ N  # (n, d), (n, r - r_c)
    worst_target = mm_target_distances(problem, metrics, clusters).max(axis=1)  # (n,)
    codes, members = problem.label_codes, np.flatnonzero(clusters == c)
    block = max(1, BLOCK_BYTES // (16 * problem.n_samples * (Xc.shape[1] + space.rank)))
    t = 0.0
    for start in range(0, len(members), block):
        ls = members[start:start + block]
        V = Xc[None, :, :] - Xc[ls, None, :]  # (b, n, d)
        distance = np.einsum("bnd,de,bne->bn", V, metrics[c], V)
        W, Vr = Y[None, :, :] - Y[ls, None, :], space.inputs[None, :, :] - space.inputs[ls, None, :]
        null, full = np.sum(W**2, axis=2), np.sum(Vr**2, axis=2)
        mask = (codes[None, :] != codes[ls, None]) & (null > _KILLABLE * full)
        need = (2.0 + worst_target[None, :] - distance)[mask] / null[mask]
        t = max(t, float(need.max(initial=0.0)))
    return t


def _solve(cvx_problem: cp.Problem, solver: str, solver_options: dict | None) -> None:
    with warnings.catch_warnings():  # the status is reported; the certificate judges
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        cvx_problem.solve(solver=solver, **(solver_options or {}))


def _solution(cvx_problem: cp.Problem, M: np.ndarray, multipliers: np.ndarray,
              start: float) -> SDPSolution:
    solve_time = float(cvx_problem.solver_stats.solve_time or 0.0)
    return SDPSolution(M_reduced=M, multipliers=multipliers, status=str(cvx_problem.status),
                       build_time=time.perf_counter() - start - solve_time, solve_time=solve_time)


def svec_rows(S: np.ndarray) -> np.ndarray:
    """``svec`` of each symmetric matrix of a stack (G, r, r); shape (G, r(r+1)/2)."""
    a, b = np.triu_indices(S.shape[1])
    return S[:, a, b]


def _offsets(cspaces: ClusterSpaces) -> np.ndarray:
    sizes = [B.shape[1] * (B.shape[1] + 1) // 2 for B in cspaces.bases]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


def _weights(cspaces: ClusterSpaces) -> np.ndarray:
    return np.concatenate([svec_weights(B.shape[1]) for B in cspaces.bases])


def _matrix(v, offsets: np.ndarray, c: int, r: int):
    """cvxpy (r, r) matrix from the svec block ``c`` of the stacked vector ``v``."""
    return cp.reshape(svec_to_matrix(r) @ v[offsets[c]:offsets[c + 1]], (r, r), order="C")


def _unpack(values: np.ndarray, offsets: np.ndarray, c: int, r: int) -> np.ndarray:
    return (svec_to_matrix(r) @ values[offsets[c]:offsets[c + 1]]).reshape(r, r)
