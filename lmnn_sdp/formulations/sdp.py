"""The SDP of LMNN and of multi-metric LMNN, and its dual, in cvxpy (JMLR 2009, eq. 14, sec. 5.2).

Points are split into clusters and cluster ``c`` has its own metric ``M_c``; the
distance to ``x_j`` uses ``M_{c(j)}`` (eq. 16). LMNN is the case of one cluster.
With ``C_ab = (x_a - x_b)(x_a - x_b)^T`` and ``P_c = sum_{i, j~>i, c(j)=c} C_ij``:

    minimize   sum_c (1-mu) <P_c, M_c> + mu sum_t xi_t
    s.t.       xi_t >= 1 + <C_ij, M_{c(j)}> - <C_il, M_{c(l)}>,  xi_t >= 0,  M_c PSD,

over triplets ``t = (i, j, l)`` (all, or a working set for constraint generation).

The dual. With multipliers ``lambda_t`` for the margin constraints, ``nu_t`` for
``xi_t >= 0`` and ``Z_c`` for ``M_c >= 0``, the Lagrangian is

    L = sum_t lambda_t + sum_t (mu - lambda_t - nu_t) xi_t + sum_c <Z'_c(lambda) - Z_c, M_c>,
    Z'_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c]),

since the margin constraint of ``t`` puts ``+lambda_t C_ij`` on the metric of
``c(j)`` and ``-lambda_t C_il`` on that of ``c(l)``. It is bounded below in ``xi``
and ``M`` only when ``lambda_t + nu_t = mu`` and ``Z_c = Z'_c``, which gives

    maximize  sum_t lambda_t   s.t.  0 <= lambda_t <= mu,
              Z_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c])  PSD

for every cluster ``c``: one PSD dual matrix per cluster, coupled by the shared
multipliers (with one cluster, the dual of DESIGN.md). Weak duality makes any such
``lambda`` a lower bound; ``bounds.dual_lower_bound`` turns arbitrary multipliers
into a rigorous one. The metric is the PSD constraint's dual in the dual program,
and the margin constraints' multipliers are ``lambda`` in the primal.

Reduced space and pair distances. Both programs run in the data range with
target distances near 1 (``core.space.reduced_space``). A margin is a difference
of two distances of distinct (pair, metric) combinations (``cluster_pairs``):
three nonzeros per triplet and one sparse operator for all metrics
(``pair_operator``), so no Python loop over triplets builds the model.

Tied multipliers. The dual may tie the multipliers of clearly violated triplets
(``FixedGroups``): ``lambda_t = beta_g mu`` for every ``t`` in group ``g``, which is
what complementary slackness predicts for them; only the triplets near the
margin then keep their own multiplier (aggregated active sets,
``generation.aggregated``).

Singular clusters are taken out exactly (``clusters``): each metric lives on the
range of its pull matrix and killable impostors are left out of the SDP.

Every answer is judged only by the objective and a certificate
(``lmnn_sdp.certificates``), never by a solver status.

Design note: docs/design/constraint-generation.md.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from lmnn_sdp.core.checks import triplet_keys
from lmnn_sdp.core.clusters import (
    ClusterSpaces,
    cluster_spaces,
    killable,
)
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace, pull_matrices
from lmnn_sdp.formulations.svec import (
    pair_outer_svec,
    svec,
    svec_rows,
    svec_to_matrix,
    svec_weights,
)

SOLVERS = ("CLARABEL", "SCS")
TIGHT_OPTIONS = {  # each solver's tolerances where its defaults limit the certified gap
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                 "tol_ktratio": 1e-8, "max_iter": 400},
    "SCS": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 10_000},
}
PULL_FLOOR = 1e-6
"""The least ratio ``(1 - mu_s) / mu_s`` of pull to push weight in the SDPs that search for the
optimum (``search_mu``): small enough that mu up to ``1 - PULL_FLOOR`` is searched as given,
large enough for the solver to resolve the pull term."""


@dataclass
class SDPSolution:
    """Raw output of one SDP solve (primal or dual), before certification."""

    metrics_reduced: np.ndarray  # (C, r, r) metrics in reduced coordinates, B_c M'_c B_c^T
    multipliers: np.ndarray  # (T,) lambda of the (free) triplets, as the solver gave them
    status: str
    build_time: float
    solve_time: float
    beta: np.ndarray | None = None  # (G,) weights of the tied groups (dual with FixedGroups)


def check_solver(solver: str) -> str:
    """The solver's name in upper case; a clear error unless it is one of ``SOLVERS``."""
    if not isinstance(solver, str) or solver.upper() not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}.")
    return solver.upper()


def search_mu(mu: float) -> float:
    """The push weight ``mu_s`` of the SDPs that generate constraints for eq. 14 at ``mu``:
    ``min(mu, 1 / (1 + PULL_FLOOR))``.

    Without the pull term (``mu = 1``), or with one below the solver's accuracy, a
    restricted SDP's minimisers form a face (a metric that clears every hinge of the
    working set still does when scaled up) and an interior-point solver returns an
    arbitrary point of it, far from the optimum of the whole problem. At ``mu_s`` the
    pull term picks the minimiser of least pull, the limit of eq. 14's minimisers as
    ``mu -> 1``: when the hinges can all be cleared and ``PULL_FLOOR`` is below the
    inverse of the largest multiplier of that least-pull problem (exact penalty), it is
    a minimiser of eq. 14 at ``mu = 1`` too. Objectives and bounds stay at ``mu``; the
    multipliers of an SDP at ``mu_s`` lie in ``[0, mu_s]``, inside the box of ``mu``.
    Design note: docs/design/constraint-generation.md, "The ends of mu's range"."""
    return min(float(mu), 1.0 / (1.0 + PULL_FLOOR))


# -- pair distances and tied groups --------------------------------------------------
@dataclass(frozen=True)
class ClusterPairs:
    """Distinct (pair, metric) combinations of a triplet set and the signed incidence ``S``.

    Pair ``p`` is measured by metric ``clusters[p]``: ``(i, j)`` by ``M_{c(j)}`` and
    ``(i, l)`` by ``M_{c(l)}`` (eq. 16). Pairs are sorted by cluster."""

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

    A group holds the triplets whose targets lie in cluster ``target_cluster[g]``
    and impostors in ``impostor_cluster[g]`` (and, when grouped by anchor, of one
    anchor ``i``); its part of the dual is ``- beta_g mu F_g`` with
    ``F_g = sum_t (C_il [c(l)=c] - C_ij [c(j)=c])``, which touches two clusters only."""

    index: np.ndarray  # (T,) group of each triplet
    target_cluster: np.ndarray  # (G,)
    impostor_cluster: np.ndarray  # (G,)
    targets: np.ndarray  # (G, r, r): sum_t C_ij, reduced coordinates
    impostors: np.ndarray  # (G, r, r): sum_t C_il
    sizes: np.ndarray  # (G,) triplets per group


def fixed_groups(space: ReducedSpace, clusters: np.ndarray, triplets: np.ndarray,
                 by_anchor: bool) -> FixedGroups:
    """Group ``triplets`` (T, 3) by the clusters ``(c(j), c(l))``, and by anchor ``i`` too
    when ``by_anchor``."""
    C = int(clusters.max()) + 1
    anchor = triplets[:, 0].astype(np.int64) if by_anchor else np.zeros(len(triplets), np.int64)
    keys = (anchor * C + clusters[triplets[:, 1]]) * C + clusters[triplets[:, 2]]
    unique, index = np.unique(keys, return_inverse=True)
    Xr = space.inputs
    index, G = index.ravel(), len(unique)
    return FixedGroups(
        index=index, target_cluster=unique // C % C, impostor_cluster=unique % C,
        targets=_grouped_outer(Xr, triplets[:, 0], triplets[:, 1], index, G),
        impostors=_grouped_outer(Xr, triplets[:, 0], triplets[:, 2], index, G),
        sizes=np.bincount(index, minlength=G))


def _grouped_outer(Xr: np.ndarray, a: np.ndarray, b: np.ndarray, index: np.ndarray,
                   G: int) -> np.ndarray:
    """``sum_{t in g} v_t v_t^T`` with ``v_t = x_a - x_b`` (rows of ``Xr`` (n, r)) grouped by
    ``index`` (T,); shape (G, r, r). Sorted by group, summed per block by ``reduceat``."""
    r = Xr.shape[1]
    out = np.zeros((G, r, r))
    order = np.argsort(index, kind="stable")
    block = max(1, 2**24 // (r * r))
    for start in range(0, len(order), block):
        s = order[start:start + block]
        V, g = Xr[a[s]] - Xr[b[s]], index[s]
        first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        out[g[first]] += np.add.reduceat(np.einsum("ti,tj->tij", V, V), first, axis=0)
    return out


def _group_operator(cspaces: ClusterSpaces, groups: FixedGroups) -> sp.csr_matrix:
    """Sparse (sum_c q_c, G): column ``g`` stacks ``svec(B_c^T F_g B_c)`` over the clusters."""
    def restricted(S):
        return lambda B, g: svec_rows(np.einsum("ai,gab,bj->gij", B, S[g], B))

    impostors = _cluster_blocks(cspaces, groups.impostor_cluster, restricted(groups.impostors))
    targets = _cluster_blocks(cspaces, groups.target_cluster, restricted(groups.targets))
    return (impostors - targets).T.tocsr()


# -- the two programs ----------------------------------------------------------------
def primal_sdp(space: ReducedSpace, cspaces: ClusterSpaces, mu: float, pulls: np.ndarray,
               clusters: np.ndarray, triplets: np.ndarray):
    """cvxpy problem of the primal on ``triplets`` (T, 3), metrics restricted to the ranges
    ``R_c``. Returns ``(problem, m, margin_constraint)``; ``m`` stacks ``svec(M'_c)``."""
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


def dual_sdp(space: ReducedSpace, cspaces: ClusterSpaces, mu: float, pulls: np.ndarray,
             clusters: np.ndarray, triplets: np.ndarray, fixed: FixedGroups | None = None):
    """cvxpy problem of the dual on ``triplets`` (T, 3), ``Z_c`` taken on ``R_c``.

    ``fixed`` are optional groups of tied multipliers ``beta_g mu`` (0 <= beta_g <= 1).
    Returns ``(problem, lam, beta, psd_constraints)`` (``None`` for an empty ``R_c``)."""
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


def solve_primal(problem: LMNNProblem, space: ReducedSpace, triplets: np.ndarray, solver: str,
                 solver_options: dict | None = None, mu: float | None = None) -> SDPSolution:
    """Solve ``primal_sdp`` for the clusters of ``problem`` without the killable triplets
    (their multipliers are 0), and without any triplet when ``mu = 0``; ``mu`` in place of
    ``problem.mu`` (as ``search_mu``)."""
    start = time.perf_counter()
    mu = problem.mu if mu is None else mu
    pulls = pull_matrices(problem, space)
    cspaces = cluster_spaces(pulls)
    keep = ~killable(problem, space, cspaces, triplets) & (mu > 0)  # hinges of weight 0 add nothing
    cvx_problem, m, margins = primal_sdp(space, cspaces, mu, pulls, problem.owner, triplets[keep])
    solve_quietly(cvx_problem, solver, solver_options)
    offsets, sizes = _offsets(cspaces), [B.shape[1] for B in cspaces.bases]
    if m.value is None:
        restricted = [np.full((r, r), np.nan) for r in sizes]
    else:
        restricted = [_unpack(m.value, offsets, c, r) for c, r in enumerate(sizes)]
    multipliers = np.zeros(len(triplets))
    if margins is not None:
        multipliers[keep] = _values(margins.dual_value, int(keep.sum()))
    return _solution(cvx_problem, cspaces.expand(restricted), multipliers, start)


def solve_dual(problem: LMNNProblem, space: ReducedSpace, triplets: np.ndarray, solver: str,
               fixed: FixedGroups | None = None, solver_options: dict | None = None,
               mu: float | None = None) -> SDPSolution:
    """Solve ``dual_sdp`` for the clusters of ``problem`` without the killable triplets; the
    metrics are the PSD constraints' duals, ``beta`` (G,) the groups' weights; ``mu`` in
    place of ``problem.mu`` (as ``search_mu``). With ``mu = 0`` the hinges weigh nothing:
    no triplet and no group enters, and the answer is ``M = 0`` with multipliers 0."""
    start = time.perf_counter()
    mu = problem.mu if mu is None else mu
    pulls = pull_matrices(problem, space)
    cspaces = cluster_spaces(pulls)
    keep = ~killable(problem, space, cspaces, triplets) & (mu > 0)  # hinges of weight 0 add nothing
    fixed = fixed if mu > 0 else None
    cvx_problem, lam, beta, psd = dual_sdp(space, cspaces, mu, pulls, problem.owner, triplets[keep], fixed)
    multipliers = np.zeros(len(triplets))
    if lam is None and beta is None:  # no multiplier: dual value 0, attained by M = 0
        return SDPSolution(np.zeros_like(pulls), multipliers, "trivial", 0.0, 0.0)
    solve_quietly(cvx_problem, solver, solver_options)
    restricted = [np.zeros((0, 0)) if con is None else
                  np.full(con.args[0].shape, np.nan) if con.dual_value is None else
                  (con.dual_value + con.dual_value.T) / 2 for con in psd]
    if lam is not None:
        multipliers[keep] = _values(lam.value, int(keep.sum()))
    solution = _solution(cvx_problem, cspaces.expand(restricted), multipliers, start)
    solution.beta = _values(beta.value, len(fixed.sizes)) if beta is not None else None
    return solution


FORMULATIONS = {"primal": solve_primal, "dual": solve_dual}


def complementary_multipliers(problem: LMNNProblem, space: ReducedSpace, metrics: np.ndarray,
                              band: float, solver: str = "CLARABEL", solver_options: dict | None = None,
                              free: np.ndarray | None = None, mu: float | None = None,
                              by_anchor: bool | None = None):
    """Multipliers for candidate metrics (C, d, d), one per cluster of ``problem``, by
    complementary slackness (DESIGN.md).

    Triplets with margin above ``band`` get tied multipliers ``beta_g mu``, those below
    ``-band`` get 0 and those within the band are free in [0, mu]; the dual SDP over
    the ``beta_g`` and the free ones maximises the bound. With one metric all tied
    triplets share one ``beta``; with several, or with ``by_anchor``, one ``beta`` per anchor
    and cluster pair ``(i, c(j), c(l))``. ``free`` (F, 3) are triplets of the problem kept free whatever
    their margin (the working set of ``aggregated``); ``mu`` is the push weight of the SDP
    in place of ``problem.mu`` (``search_mu``). Killable impostors get 0. Returns
    ``(triplets (T, 3), multipliers (T,), n_free, solution)``, the free triplets last;
    ``solution.metrics_reduced`` minimises the lower model of ``aggregated``."""
    mu = problem.mu if mu is None else mu
    near = problem.active_triplets(metrics, band=band)
    kept = np.zeros(len(near), dtype=bool)
    if free is not None and len(free):
        near = np.unique(np.concatenate([near, free]), axis=0)
        keys = lambda t: triplet_keys(t, problem.n_samples)  # noqa: E731
        kept = np.isin(keys(near), keys(free))
    cspaces = cluster_spaces(pull_matrices(problem, space))
    alive = ~killable(problem, space, cspaces, near)
    near, kept = near[alive], kept[alive]
    margins = problem.triplet_margins(metrics, near)
    tied = (margins > band) & ~kept
    active, free = near[tied], near[~tied]
    by_anchor = len(metrics) > 1 if by_anchor is None else by_anchor
    fixed = fixed_groups(space, problem.owner, active, by_anchor=by_anchor) if len(active) else None
    sol = solve_dual(problem, space, free, solver, fixed=fixed, solver_options=solver_options, mu=mu)
    tied = mu * sol.beta[fixed.index] if sol.beta is not None else np.zeros(len(active))
    return np.concatenate([active, free]), np.concatenate([tied, sol.multipliers]), len(free), sol


# -- internals ---------------------------------------------------------------------
def solve_quietly(cvx_problem: cp.Problem, solver: str, solver_options: dict | None) -> None:
    """Solve; the solver's "inaccurate" warning is dropped, since its status is reported and
    the certificate judges the answer."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        cvx_problem.solve(solver=solver, **(solver_options or {}))


def _solution(cvx_problem: cp.Problem, metrics: np.ndarray, multipliers: np.ndarray,
              start: float) -> SDPSolution:
    solve_time = float(cvx_problem.solver_stats.solve_time or 0.0)
    return SDPSolution(metrics_reduced=metrics, multipliers=multipliers,
                       status=str(cvx_problem.status),
                       build_time=time.perf_counter() - start - solve_time, solve_time=solve_time)


def _values(value, size: int) -> np.ndarray:
    """A cvxpy value as a flat array (size,), NaN when the solver gave none."""
    if value is None:
        return np.full(size, np.nan)
    return np.asarray(value, dtype=float).reshape(size)


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
