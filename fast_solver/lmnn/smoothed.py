"""eq. 14 (or eq. 16) with a smoothed hinge on a working set, as a function of ``L`` (``M_w = L^T L``).

On whitened inputs ``x_w`` (``lmnn_sdp.core.whitening``) and a working set of
impostor pairs ``(i, l)``, each standing for the ``k`` triplets ``(i, j, l)``,

    F_gamma(L) = (1-mu) sum_{i, j~>i} D(i, j) + mu sum_{(i,j,l)} s_gamma(1 + D(i, j) - D(i, l)),
    D(a, b) = |L (x_a - x_b)|^2,

with the hinge smoothed over a width ``gamma`` (Huber):
``s(h) = 0`` for ``h <= 0``, ``h^2 / (2 gamma)`` for ``0 < h < gamma``, ``h - gamma/2``
above, so ``s(h) <= [h]_+ <= s(h) + gamma/2``. Each triplet's hinge is evaluated at
``h_t + gamma prior_t / mu``, shifted by multipliers ``prior`` in ``[0, mu]`` (0 unless
set): ``mu s(h + gamma prior / mu)`` is, up to a constant, ``max_{0 <= lambda <= mu}
lambda h - gamma (lambda - prior)^2 / (2 mu)``, so ``F_gamma`` is the augmented
Lagrangian of eq. 14 at the multipliers ``prior`` (the method of multipliers,
Rockafellar 1976), and its minimiser tends to eq. 14's as ``prior`` tends to the optimal
multipliers, whatever ``gamma``.

Its gradient in ``M_w`` is the dual matrix of DESIGN.md,

    G = (1-mu) P + sum_t lambda_t (C_ij - C_il),
    lambda_t = mu s'(h_t + gamma prior_t / mu) = clip(prior_t + mu h_t / gamma, 0, mu),

so every evaluation hands the certificate a dual candidate: ``lambda`` lies in
the box ``[0, mu]``, and ``G`` is PSD at a minimiser of ``F_gamma`` over the PSD
cone. ``L`` is (p, r) with ``p <= r`` rows (``fast_solver.lmnn.factors.narrowed``). In ``L``
the gradient is ``2 L G = 2 (X^T Lap Z)^T``: from ``G`` (``2 N r^2`` to form it, then
``2 p r^2``) or, where ``G`` is not wanted, from ``Z = X L^T`` (``2 N r p``); and the Hessian
applied to a direction ``V`` (p, r) is
``2 V G + 2 L S``, ``S = sum_t (mu / gamma) <C_ij - C_il, L^T V + V^T L> (C_ij - C_il)`` over
the triplets in transition (``0 < lambda_t < mu``), with ``L S = (X^T Lap Z)^T`` formed from
``Z = X L^T``: ``O(p r)`` per point, never ``O(r^2)``.

With one metric per cluster (sec. 5.2, eq. 16) ``L`` is (C, p, r), each ``L_c`` acting
on cluster ``c``'s whitened coordinates, the distance to point ``b`` is measured by
``M_{c(b)}``, and each term above lands in the cluster of its second point:
``G_c = (1-mu) P_c + sum_t lambda_t (C_ij [c(j)=c] - C_il [c(l)=c])``, gradient
``2 L_c G_c``, and the Hessian couples ``L_{c(j)}`` and ``L_{c(l)}`` through the
triplets in transition. LMNN is the case ``C = 1``.

Every matrix sum over pairs goes through a graph Laplacian,
``sum_p w_p (x_a - x_b)(x_a - x_b)^T = X^T (Lap_w X)`` (``PairGraph``), whose rows
are formed by a compiled loop per point (``fast_solver.lmnn.compiled``); memory grows
with the number of pairs, never with ``n^2`` or ``(pairs x d)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fast_solver.lmnn import compiled
from fast_solver.lmnn.impostors import cross_product, in_chunks, map_clusters, pair_keys
from fast_solver.lmnn.options import SolverOptions
from lmnn_sdp.core.whitening import ClusterWhitening

COMPILED_COORDINATES = 32  # with several clusters of up to this many coordinates, compiled loops beat BLAS
CROSS_BLOCK = 2048  # rows a block of ``compiled.block_cross``


def compact_index(size: int) -> type:
    """The integer type of positions into arrays of ``size`` elements (and of nodes, fewer):
    4 bytes while they fit (the graphs' index arrays are their largest at 60,000 points)."""
    return np.int32 if size < 2**31 else np.intp


class PairGraph:
    """Pairs ``(a_p, b_p)`` on ``n`` nodes as a symmetric CSR graph (both directions) over the
    nodes they touch (``nodes``; all ``n`` when most are), so a graph of few pairs costs
    little however large ``n`` is."""

    def __init__(self, a: np.ndarray, b: np.ndarray, n: int):
        ends = np.concatenate([a, b]).astype(np.intp)
        touched = np.bincount(ends, minlength=n) > 0
        self.nodes = None if 2 * np.count_nonzero(touched) > n else np.flatnonzero(touched)
        if self.nodes is not None:  # relabel the ends to 0..len(nodes)-1
            ends = np.searchsorted(self.nodes, ends)
            n = len(self.nodes)
        index = compact_index(len(ends))
        self.order = np.argsort(ends, kind="stable").astype(index)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))]).astype(np.intp)
        half = len(a)
        self.neighbours = np.concatenate([ends[half:], ends[:half]])[self.order].astype(index)
        self.n_pairs = half

    def rows(self, X: np.ndarray) -> np.ndarray:
        """The rows of ``X`` (n, r) at the graph's nodes."""
        return X if self.nodes is None else X[self.nodes]

    def laplacian(self, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``Lap_w X`` at the graph's nodes (``rows``): at node ``u``, ``sum_p w_p (x_u - x_v)``
        over the pairs ``p`` joining ``u`` and ``v``; ``X`` (n, r), weights (P,)."""
        return self.node_laplacian(weights, self.rows(X))

    def scatter(self, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` of shape (r, r) for ``X`` (n, r)."""
        rows = self.rows(X)
        S = cross_product(rows, self.node_laplacian(weights, rows))
        return (S + S.T) / 2

    def node_laplacian(self, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``laplacian`` from the rows of ``X`` at the graph's nodes (``rows(X)``, formed once)."""
        edge_w = np.concatenate([weights, weights])[self.order]
        return compiled.laplacian_rows(self.indptr, self.neighbours, edge_w, rows, np.empty_like(rows))


class ClusterGraphs:
    """Pairs ``(a_p, b_p)`` in the cluster of ``b_p``, as one ``PairGraph`` on the stacked
    coordinates ``X`` (C, n, r) -> (C n, r), node ``c n + u`` being point ``u`` in cluster
    ``c``; ``rows`` are the stacked rows at the graph's nodes, gathered once, and cluster ``c``
    holds ``rows[bounds[c]:bounds[c + 1]]``."""

    def __init__(self, a: np.ndarray, b: np.ndarray, clusters: np.ndarray, X: np.ndarray):
        C, n, r = X.shape
        offset = clusters[b].astype(np.intp) * n if C > 1 else 0
        self.graph = PairGraph(a + offset, b + offset, C * n)
        self.n = n
        self.compiled = C > 1 and r <= COMPILED_COORDINATES  # else BLAS, one call per cluster
        self.rows = self.graph.rows(X.reshape(C * n, r))
        first = np.arange(C + 1) * n
        self.bounds = first if self.graph.nodes is None else np.searchsorted(self.graph.nodes, first)
        if self.compiled:  # each cluster's rows in blocks for ``block_cross``, its first block
            pieces = [np.linspace(lo, hi, max(1, -(-(hi - lo) // CROSS_BLOCK)) + 1)[:-1].astype(np.intp)
                      for lo, hi in zip(self.bounds, self.bounds[1:])]
            self.blocks = np.append(np.concatenate(pieces), self.bounds[-1])
            self.first_block = np.cumsum([0] + [len(piece) for piece in pieces[:-1]])
        self._position = None

    @property
    def nodes(self) -> np.ndarray | None:
        """The stacked nodes ``c n + u`` (N,) the pairs touch, None for all ``C n``."""
        return self.graph.nodes

    def scatter(self, weights: np.ndarray) -> np.ndarray:
        """``sum_{p: c(b_p)=c} w_p (x_a - x_b)(x_a - x_b)^T`` in ``X[c]``; (C, r, r)."""
        S = self.cross(weights, self.rows)
        return (S + S.transpose(0, 2, 1)) / 2

    def cross(self, weights: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``sum_{p: c(b_p)=c} w_p (x_a - x_b)(z_a - z_b)^T`` (C, r, s) for rows ``right`` (N, s)
        of ``Z`` at the graph's nodes, in the order of ``rows`` (``gather``): ``X_c^T Lap_w Z_c``."""
        lap = self.graph.node_laplacian(weights, right)
        if self.compiled:
            cross = compiled.block_cross(self.rows, lap, self.blocks,
                                         np.empty((len(self.blocks) - 1, self.rows.shape[1], lap.shape[1]), lap.dtype))
            return np.add.reduceat(cross, self.first_block)
        return np.stack([cross_product(self.rows[lo:hi], lap[lo:hi]) for lo, hi in zip(self.bounds, self.bounds[1:])])

    def gather(self, Z: np.ndarray) -> np.ndarray:
        """The rows of ``Z`` (C, n, s) at the graph's nodes, in the order of ``rows``; (N, s)."""
        return self.graph.rows(Z.reshape(-1, Z.shape[2]))

    @property
    def position(self) -> np.ndarray:
        """The row of ``rows`` (and of a compact ``map``) that holds node ``c n + u``, (C n,);
        -1 where the graph has no node. Formed at the first call."""
        if self._position is None:
            size = (len(self.bounds) - 1) * self.n
            index = compact_index(size)
            if self.nodes is None:
                self._position = np.arange(size, dtype=index)
            else:
                self._position = np.full(size, -1, dtype=index)
                self._position[self.nodes] = np.arange(len(self.nodes), dtype=index)
        return self._position

    def map(self, V: np.ndarray, out: np.ndarray, compact: bool = False) -> np.ndarray:
        """``X[c] V[c]^T`` for ``V`` (C, s, r) at the graph's nodes, the only rows its pairs read:
        with ``compact``, into ``out`` (N, s) in the order of ``rows`` (``position`` finds a
        node's row); else into the rows ``c n + u`` of ``out`` (C, n, s), the others left as
        they were. With every node (``nodes`` None) the two layouts agree."""
        C, s = V.shape[:2]
        if self.nodes is None:
            map_clusters(self.rows.reshape(C, self.n, -1), V, out.reshape(C, self.n, s))
            return out
        flat = out.reshape(-1, s)
        if self.compiled:
            compiled.map_stacked_rows(self.rows, self.nodes, self.n, V, flat, compact)
            return out
        for c, (lo, hi) in enumerate(zip(self.bounds, self.bounds[1:])):
            def fill(start: int, stop: int, c=c, lo=lo) -> None:
                at = slice(lo + start, lo + stop)
                flat[at if compact else self.nodes[at]] = self.rows[at] @ V[c].T
            in_chunks(hi - lo, fill)
        return out


@dataclass
class WorkingSet:
    """Impostor pairs grouped by point: point ``i`` owns ``impostors[ptr[i]:ptr[i+1]]``.

    ``owner`` (P,) is ``i`` for every pair; ``ptr`` (n + 1,); pairs sorted by
    ``(i, l)``. Each pair stands for the ``k`` triplets ``(i, targets[i, a], l)``."""

    owner: np.ndarray
    impostors: np.ndarray
    ptr: np.ndarray

    @classmethod
    def from_pairs(cls, i: np.ndarray, l: np.ndarray, n: int) -> WorkingSet:
        keys = pair_keys(i, l, n)
        if np.any(keys[1:] <= keys[:-1]):  # the searches hand their pairs sorted and distinct
            keys = np.unique(keys)
        owner, impostors = (keys // n).astype(np.intp), (keys % n).astype(np.intp)
        ptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n))]).astype(np.intp)
        return cls(owner, np.ascontiguousarray(impostors), ptr)

    def __len__(self) -> int:
        return len(self.impostors)

    def keys(self) -> np.ndarray:
        """``i n + l`` (P,) of every pair, increasing: pairs of two sets match by key."""
        return pair_keys(self.owner, self.impostors, len(self.ptr) - 1)

    def triplets(self, targets: np.ndarray, pair: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """Triplets ``(i, j, l)`` (T, 3) of pair indices ``pair`` and target ranks ``rank``."""
        i = self.owner[pair]
        return np.column_stack([i, targets[i, rank], self.impostors[pair]]).astype(np.intp)


@dataclass
class Evaluation:
    """``F_gamma`` and what comes with it at one ``L`` (C, p, r)."""

    L: np.ndarray
    gamma: float
    value: float  # F_gamma(L)
    objective: float  # eq. 14 restricted to the working set (exact hinge)
    multiplier_sum: float  # sum_t lambda_t
    complementarity: float  # sum_t mu [h_t]_+ - lambda_t h_t
    n_active: int
    n_transition: int
    dual_matrix: np.ndarray | None  # G (C, r, r); None from an evaluation without it
    gradient: np.ndarray  # 2 L G (C, p, r)


class SmoothedObjective:
    """``F_gamma`` on one working set; ``evaluate`` then ``hessian_product`` at that point.

    Parameters
    ----------
    whitening : ClusterWhitening
    targets : ndarray of int, shape (n, k)
    mu : float
    working_set : WorkingSet
    """

    def __init__(self, whitening: ClusterWhitening, targets: np.ndarray, mu: float,
                 working_set: WorkingSet, options: SolverOptions = SolverOptions()):
        self.options = options  # ``precondition_floor``, ``precondition_sample``, ``ray_reach``
        self.X = whitening.inputs
        self.clusters = whitening.clusters
        self.targets = np.ascontiguousarray(targets, dtype=np.intp)
        self.mu = float(mu)
        self.ws = working_set
        n, k = self.targets.shape
        P = len(working_set)
        self.graphs = ClusterGraphs(np.concatenate([np.repeat(np.arange(n), k), working_set.owner]),
                                    np.concatenate([self.targets.ravel(), working_set.impostors]),
                                    self.clusters, self.X)
        self.target_w = np.empty((n, k))
        self.pair_w = np.empty(P)
        self.pair_d = np.empty(P)
        self.transition = np.zeros((P, k), dtype=bool)
        self.prior = np.zeros((P, k))  # the multipliers that shift each hinge (module docstring)
        self.current: Evaluation | None = None
        self._transition_graph = self._ray = None  # ``_ray``: the last ray's direction and polynomials
        self._X32 = None  # the inputs in float32, for the Hessian products (``hessian_product``)
        self._directions = {}  # scratch of ``_direction`` by dtype, reused by every call
        self.n_evaluations = self.n_hessian_products = 0

    def evaluate(self, L: np.ndarray, gamma: float, dual: bool = True) -> Evaluation:
        """``F_gamma``, its gradient and multipliers at ``L`` (C, p, r); keeps the state for
        ``hessian_product`` and ``multipliers``. With ``dual`` False the dual matrix ``G`` is
        not formed (``dual_matrix`` None, the gradient from ``Z``: module docstring), and the
        point serves ``ray`` and ``advance`` only."""
        Z = self.graphs.map(L, np.empty((len(L), self.X.shape[1], L.shape[1])))
        target_d = compiled.target_distances(Z, self.targets, self.clusters)
        compiled.pair_distances(Z, self.clusters, self.ws.ptr, self.ws.impostors, self.pair_d)
        return self._settle(L, gamma, Z, target_d, dual)

    def advance(self, t: float, dual: bool = True) -> Evaluation:
        """``evaluate`` at ``L + t V``, ``L`` the last evaluated point and ``V`` the direction of
        the last ``ray`` along ``L``, from that ray's polynomials: ``Z + t Y`` and every distance
        ``zz + 2 t zy + t^2 yy``, with no product of the inputs but ``G`` (or, without ``dual``,
        the gradient)."""
        V, Y, target_c, pair_c = self._ray
        ev = self.current
        Z = self.Z
        nodes = self.graphs.nodes  # the rows that ``Z`` and ``Y`` hold
        if nodes is None:
            Z += t * Y
        else:
            compiled.add_rows(Z.reshape(-1, Z.shape[2]), Y.reshape(-1, Y.shape[2]), nodes, t)
        target_d = target_c[:, :, 0] + t * (2.0 * target_c[:, :, 1] + t * target_c[:, :, 2])
        np.add(pair_c[:, 0], t * (2.0 * pair_c[:, 1] + t * pair_c[:, 2]), out=self.pair_d)
        return self._settle(ev.L + t * V, ev.gamma, Z, target_d, dual)

    def _settle(self, L: np.ndarray, gamma: float, Z: np.ndarray, target_d: np.ndarray,
                dual: bool) -> Evaluation:
        """The evaluation at ``L`` from its coordinates ``Z`` and distances (``target_d`` and
        ``self.pair_d``), with ``G`` when ``dual``."""
        self.n_evaluations += 1
        sums = compiled.smoothed_hinge(target_d, self.pair_d, self.ws.ptr, gamma, self.mu, self._scale(gamma),
                                       self.prior, self.target_w, self.pair_w, self.transition)
        smooth, hinge, lam_sum, comp, active, transition = sums.sum(axis=0)
        pull = float(target_d.sum())
        weights = np.concatenate([(self.target_w + (1.0 - self.mu)).ravel(), self.pair_w])
        if dual:
            G = self.graphs.scatter(weights)
            gradient = 2.0 * np.matmul(L, G)
        else:
            G, gradient = None, 2.0 * self.graphs.cross(weights, self.graphs.gather(Z)).transpose(0, 2, 1)
        self.Z, self.target_d, self._transition_graph, self._ray = Z, target_d, None, None
        self.current = Evaluation(
            L=L, gamma=float(gamma), value=(1.0 - self.mu) * pull + self.mu * smooth,
            objective=(1.0 - self.mu) * pull + self.mu * hinge, multiplier_sum=float(lam_sum),
            complementarity=float(comp), n_active=int(active), n_transition=int(transition),
            dual_matrix=G, gradient=gradient)
        return self.current

    def release(self) -> None:
        """Free the arrays of the points and pairs (``Z`` and the scratch of the directions,
        (C, n, p) each; the graphs' rows; ``prior``): an objective that a renewed working set
        replaces no longer holds them while the search runs. Only ``ws`` stays."""
        self.Z = self.target_d = self._X32 = self.graphs = self._transition_graph = self._transition_Z = None
        self.current = self._ray = None
        self.prior = None
        self._directions = {}

    def hessian_product(self, V: np.ndarray) -> np.ndarray:
        """``2 V G + 2 L S(V)`` (C, p, r) at the last evaluated point (module docstring), ``S(V)``
        from float32 inputs: conjugate gradients need the product only to their forcing
        tolerance, far above float32's rounding; values, gradients and ``G`` stay float64.
        Design note: docs/design/fast-lmnn-solver.md, "Preconditioned conjugate gradients"."""
        self.n_hessian_products += 1
        ev = self.current
        out = 2.0 * np.matmul(V, ev.dual_matrix)
        if ev.n_transition == 0:
            return out
        t = self._transition_triplets()
        graph = self._transition_graph
        Y = self._direction(graph, V.astype(np.float32), compact=True)
        c = compiled.triplet_products(self.Z, Y, graph.position, self.clusters, t)
        w = (2.0 * self.mu / ev.gamma) * c
        LS = graph.cross(np.concatenate([w, -w]).astype(np.float32), self._transition_Z)  # (L S)^T = X^T Lap Z
        return out + 2.0 * LS.transpose(0, 2, 1).astype(np.float64)

    def _transition_triplets(self) -> np.ndarray:
        """The triplets (T, 3) in transition at the last evaluated point, with their graphs."""
        if self._transition_graph is None:
            pair, rank = np.nonzero(self.transition)
            t = self.ws.triplets(self.targets, pair, rank)
            self._transition = t
            self._transition_graph = ClusterGraphs(np.concatenate([t[:, 0], t[:, 0]]),
                                                   np.concatenate([t[:, 1], t[:, 2]]),
                                                   self.clusters, self._inputs32())
            self._transition_Z = self._transition_graph.gather(self.Z).astype(np.float32)
        return self._transition

    def _inputs32(self) -> np.ndarray:
        """The inputs (C, n, r) in float32, formed at the first call."""
        if self._X32 is None:
            self._X32 = self.X.astype(np.float32)
        return self._X32

    def preconditioner(self):
        """An approximate inverse of the Hessian in ``L`` at the last evaluated point: the
        inverse of its diagonal in the eigenbases ``U_c`` of ``L_c L_c^T`` and ``Q_c`` of ``G_c``.

        For ``E = u_a q_b^T`` the Hessian's diagonal is ``2 lambda_b + 4 (mu / gamma) sum_t
        (u_a^T L C_t q_b)^2`` (``2 V G`` is diagonal in that basis; the sum runs over the
        triplets in transition, ``C_t = a a^T - b b^T`` with ``a = x_i - x_j``, ``b = x_i - x_l``);
        ``lambda`` below 0 counts as 0, and entries below ``precondition_floor`` of the largest
        are raised to it; a cluster whose diagonal vanishes (a collapsed metric, no triplet in
        transition) is left unscaled. The sum over triplets is formed in float32.

        Returns
        -------
        callable
            ``apply(R)``, ``P^-1 R`` for ``R`` of shape (C, p, r).
        """
        ev = self.current
        bases = [(np.linalg.eigh(L @ L.T)[1], *np.linalg.eigh(G)[::-1]) for L, G in zip(ev.L, ev.dual_matrix)]
        diagonal = self._hinge_curvature([(U, Q) for U, Q, _ in bases])
        inverse = []
        for (_, _, lam), D in zip(bases, diagonal):
            scale = 2.0 * np.maximum(lam, 0.0)[None, :] + D
            top = scale.max()
            inverse.append(1.0 / np.maximum(scale, self.options.precondition_floor * top) if top > 0.0 else np.ones_like(scale))
        U, Q, inverse = np.stack([U for U, _, _ in bases]), np.stack([Q for _, Q, _ in bases]), np.stack(inverse)
        Ut, Qt = U.transpose(0, 2, 1), Q.transpose(0, 2, 1)

        def apply(R: np.ndarray) -> np.ndarray:
            return U @ ((Ut @ R @ Q) * inverse) @ Qt
        return apply

    def _hinge_curvature(self, bases) -> np.ndarray:
        """``4 (mu / gamma) sum_t (u_a^T L_c C_t^c q_b)^2`` (C, p, r) of ``preconditioner``,
        ``C_t^c`` the part of ``C_t`` in cluster ``c``."""
        ev = self.current
        out = np.zeros(ev.L.shape)
        if ev.n_transition == 0:
            return out
        t = self._transition_triplets()
        weight = 1.0
        sample = self.options.precondition_sample
        if len(t) > sample:  # an unbiased estimate from evenly spaced triplets
            weight = len(t) / sample
            t = t[np.linspace(0, len(t) - 1, sample).astype(np.intp)]
        X = self._inputs32()  # a preconditioner needs no more than float32
        for chunk in np.array_split(np.arange(len(t)), max(1, len(t) // 20_000)):
            i, j, l = t[chunk].T
            cj, cl = self.clusters[j], self.clusters[l]
            for c, (U, Q) in enumerate(bases):
                near = np.flatnonzero((cj == c) | (cl == c))  # the triplets cluster c's terms see
                mj, ml = (cj[near] == c)[:, None], (cl[near] == c)[:, None]
                Xi = X[c, i[near]]
                a, b = Xi - X[c, j[near]], Xi - X[c, l[near]]
                LU, Q = (ev.L[c].T @ U).astype(np.float32), Q.astype(np.float32)
                alpha, beta = (a @ Q) * mj, (a @ LU) * mj
                alpha_, beta_ = (b @ Q) * ml, (b @ LU) * ml
                out[c] += ((beta * beta).T @ (alpha * alpha) + (beta_ * beta_).T @ (alpha_ * alpha_)
                           - 2.0 * (beta * beta_).T @ (alpha * alpha_))
        return (4.0 * self.mu / ev.gamma * weight) * out

    def _direction(self, graphs: ClusterGraphs, V: np.ndarray, compact: bool = False) -> np.ndarray:
        """``X[c] V[c]^T`` for ``V`` (C, p, r) at the nodes of ``graphs`` (``ClusterGraphs.map``;
        (N, p) with ``compact``, else (C, n, p) like ``Z``) in the dtype of their rows and ``V``, in one scratch buffer
        per dtype that every call reuses (a fresh one costs its page faults each time); the
        caller consumes it before the next call of that dtype."""
        dtype, p = graphs.rows.dtype, V.shape[1]
        shape = (len(graphs.rows), p) if compact else self.Z.shape
        size = int(np.prod(shape))
        if dtype not in self._directions or len(self._directions[dtype]) < size:
            self._directions[dtype] = np.empty(size, dtype)
        return graphs.map(V, self._directions[dtype][:size].reshape(shape), compact)

    def ray(self, V: np.ndarray, *, metric: bool = False):
        """``t -> F_gamma(t) - F_gamma(0)`` on this working set from the last evaluated point
        ``L`` (at its ``gamma``) along ``L + t V`` or, with ``metric``, along
        ``M_c + t V_c^T V_c`` (``M = L^T L``); ``V`` (C, p, r) like ``L``, clusters with ``V_c = 0`` stay.

        Every distance is a polynomial in ``t`` (``zz + 2 t zy + t^2 yy``, or ``zz + t yy``
        along the metric), so its coefficients are formed once and no ``t`` needs a matrix
        product. On a reach ``[0, ray_reach t]`` (formed at the first ``t`` beyond the last
        reach) the triplets are sorted by the hinge's pieces they meet
        (``compiled.ray_pieces``): those on its zero or its linear piece throughout are summed
        once as polynomials, so a ``t`` passes only over the triplets near a kink. The change
        is summed term by term (``compiled.kink_change``), so decreases far below the
        rounding of ``F_gamma`` itself are seen."""
        Y, target_c, pair_c = self._ray_coefficients(V)
        self._ray = None if metric else (V, Y, target_c, pair_c)
        return self._change(target_c, pair_c, metric)

    def metric_rays(self, V: np.ndarray):
        """``ray(w V, metric=True)`` for every weighting ``w`` (C,) of the clusters, from one
        pass over the working set: returns ``along(w)``, the change along
        ``M_c + t w_c V_c^T V_c``. Along the metric a distance to point ``b`` moves by
        ``t |V_c (x_a - x_b)|^2`` in ``b``'s cluster ``c`` only, so weighting the clusters
        scales each distance's ``yy`` by its cluster's ``w_c``. A change function that
        ``along`` returns holds until its next call."""
        _, target_c, pair_c = self._ray_coefficients(V)
        target_yy, pair_yy = target_c[:, :, 2].copy(), pair_c[:, 2].copy()
        target_of, pair_of = self.clusters[self.targets], self.clusters[self.ws.impostors]

        def along(weights: np.ndarray):
            weights = np.asarray(weights, dtype=float)
            np.multiply(target_yy, weights[target_of], out=target_c[:, :, 2])
            np.multiply(pair_yy, weights[pair_of], out=pair_c[:, 2])
            return self._change(target_c, pair_c, metric=True)
        return along

    def _ray_coefficients(self, V: np.ndarray) -> tuple:
        """``Y = X V^T`` (``_direction``) and the products ``zz, zy, yy`` of every target pair
        (n, k, 3) and working-set pair (P, 3) along it (``compiled.ray_coefficients``)."""
        Y = self._direction(self.graphs, V)
        n, k = self.targets.shape
        target_c, pair_c = np.empty((n, k, 3)), np.empty((len(self.ws), 3))
        compiled.ray_coefficients(self.Z, Y, self.clusters, self.targets, self.ws.ptr, self.ws.impostors,
                                 target_c, pair_c)
        return Y, target_c, pair_c

    def _change(self, target_c: np.ndarray, pair_c: np.ndarray, metric: bool):
        """The change function of ``ray`` from its coefficients; it reads them at every reach,
        so they must stay as they are while it is used."""
        ev = self.current
        scale = self._scale(ev.gamma)
        n, k = self.targets.shape
        pull = target_c[:, :, 1].sum(), target_c[:, :, 2].sum()
        kink, count = np.empty((len(self.ws), k), dtype=bool), np.empty(n, np.intp)
        reach = [-1.0, None]  # t_hi, and the pieces on [0, t_hi]

        def pieces(t_hi: float) -> tuple:
            linear = compiled.ray_pieces(target_c, pair_c, self.ws.ptr, t_hi, not metric, ev.gamma,
                                         scale, self.prior, kink, count).sum(axis=0)
            start = np.concatenate([[0], np.cumsum(count)])
            return (linear, *compiled.kink_terms(target_c, pair_c, self.ws.ptr, scale, self.prior, kink, start))

        def change(t: float) -> float:
            t = float(t)
            if t > reach[0]:
                reach[1] = None  # the last reach's arrays go before the next's are formed
                reach[:] = self.options.ray_reach * t, pieces(self.options.ray_reach * t)
            (lin_beta, lin_kappa), h0, beta, kappa = reach[1]
            lin, q = (0.0, t) if metric else (2.0 * t, t * t)
            kinks = compiled.kink_change(h0, beta, kappa, lin, q, ev.gamma)
            push = lin * lin_beta + q * lin_kappa + kinks
            return (1.0 - self.mu) * (lin * pull[0] + q * pull[1]) + self.mu * push
        return change

    def multipliers(self) -> tuple[np.ndarray, np.ndarray]:
        """Triplets (T, 3) with ``lambda_t > 0`` at the last evaluated point, and ``lambda`` (T,)."""
        lam = self.pair_multipliers()
        pair, rank = np.nonzero(lam > 0)
        return self.ws.triplets(self.targets, pair, rank), lam[pair, rank]

    def pair_multipliers(self) -> np.ndarray:
        """``lambda`` (P, k) of every working-set triplet ``(owner[p], targets[owner[p], a],
        impostors[p])`` at the last evaluated point."""
        ev = self.current
        hinge = 1.0 + self.target_d[self.ws.owner] - self.pair_d[:, None]  # (P, k), as evaluated
        return self.mu * np.clip((hinge + self._scale(ev.gamma) * self.prior) / ev.gamma, 0.0, 1.0)

    def _scale(self, gamma: float) -> float:
        """``gamma / mu``: each hinge is evaluated at ``h + gamma prior / mu`` (module docstring)."""
        return gamma / self.mu if self.mu > 0 else 0.0
