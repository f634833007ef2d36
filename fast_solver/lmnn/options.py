"""The tuned values of the fast LMNN solver, in one place.

``fast_solver.solve`` runs with ``SolverOptions()``; each note below says what its value
trades. The alternatives and their costs are in the design note
``docs/design/fast-lmnn-solver.md`` (the sections named in brackets). What only picks a
path by size stays in the module that uses it: block sizes and thread thresholds (``impostors``,
``energy``, ``compiled``, ``smoothed``) and the largest rank searched by ball trees
(``impostors.BALLTREE_MAX_RANK``); so do the checkpoint's version (``state.ITERATIONS``) and
multi-pass LMNN's rounding tolerances (``multipass``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fast_solver.lmnn.impostors import SEARCH_METHODS
from lmnn_sdp.core.checks import check_max_iter, check_tol


@dataclass(frozen=True)
class SolverOptions:
    """Tuned values of ``fast_solver.solve`` (the module docstring of
    ``fast_solver.lmnn.solver`` says where each acts).

    Changing one changes the iterates: a solve with other values is another solve, and its
    checkpoints are not those of the default one.

    Examples
    --------
    >>> from dataclasses import replace
    >>> options = SolverOptions()
    >>> options.initial_gamma, options.shrink
    (0.1, 0.3)
    >>> replace(options, max_stages=2).max_stages
    2
    """

    # -- the start (``start.euclidean_start``, ``start.best_scale``; "The starting rank",
    #    "The starting scale")
    start_tail: float = 0.03  # variance the default start leaves out: lower starts wider (more costly
    # iterations while the spectrum collapses), higher starts below the optimum's rank
    min_start_rank: int = 32  # fewest directions of the default start, so small d keep the identity
    anchors: int = 128  # points whose triplets score a starting scale: more cost time, fewer mislead
    scale_range: float = 1e3  # the scale search's reach each side of mean target distance 1
    search_steps: int = 30  # golden-section steps of that search: its precision against its time

    # -- continuation (``continuation.first_width``, ``continuation.next_width``; "Multiplier updates between stages",
    #    "Multi-metric LMNN at image scale")
    initial_gamma: float = 0.1  # first smoothing width: wider is easier to minimise, further from eq. 14
    shrink: float = 0.3  # the width's factor per stage: smaller takes fewer stages of more iterations each
    max_widenings: int = 3  # widenings of several metrics' first width by 1 / shrink while few
    # triplets are in transition: each buys curvature with a stage more
    max_stages: int = 60  # stages before the solve ends stalled: a bound on a solve that cannot prove tol

    # -- the first phase (``solver._Run._quasi_newton``; "A first phase of quasi-Newton steps" in
    #    ``docs/design/high-dimension.md``)
    quasi_newton_memory: int = 10  # L-BFGS pairs kept: more curvature per direction against more products
    quasi_newton_window: int = 5  # steps over which the first phase's fall is measured; 0: no first phase
    quasi_newton_fall: float = 1e-3  # that fall, of F_gamma, at which Newton takes over: lower takes more
    # cheap steps where Newton would converge in fewer, higher hands over further from the optimum

    # -- Newton (``trust_region.minimize``; "Line searches on changes", "Where `G` is indefinite")
    initial_radius: float = 0.1  # first trust radius, of |L|_F: larger risks wasted first steps
    max_radius: float = 0.5  # largest step, of |L|_F: no step lands on L = 0, where the gradient vanishes
    max_cg: int = 250  # conjugate-gradient steps a Newton step may take: its accuracy against its products
    min_radius_ratio: float = 1e-14  # radius, of |x|, at which the trust region has collapsed (rounding)
    saddle_patience: int = 10  # iterations with a scaling-dominated gap before an escape: escapes
    # cost evaluations, waiting costs Newton iterations
    precondition_floor: float = 1e-3  # floor of the preconditioner's diagonal, of its largest entry:
    # lower fits the Hessian better and lets CG steps run to the boundary ("Preconditioned conjugate gradients")
    precondition_sample: int = 2000  # transition triplets that estimate that diagonal: its time against its noise
    ray_reach: float = 4.0  # a line search sorts its triplets' hinge pieces on [0, ray_reach t]: more
    # sorting per ray against more rays

    # -- searches (``solver._Run._stage``; the drift rule at the top,
    #    "Multi-metric LMNN at image scale" for retractions)
    stale_drift: float = 0.1  # relative move of the metric since the last search that calls for a new
    # one: lower searches more often, higher risks steps on a set that misses impostors
    retreat: float = 0.25  # radius after a retraction, of the move taken back: smaller starts safer, slower

    # -- narrowing ``L`` (``factors.narrowed``; "Narrow factors")
    rank_floor: float = 1e-8  # eigenvalues of M_c at most this of the largest count as null
    rank_margin: float = 0.25  # rows kept beyond the rank, of it: fewer escapes against wider products
    min_margin: int = 8  # and at least this many
    narrow_below: float = 0.75  # narrow only to at most this of the rows: a cut must save a quarter

    # -- the proof (``solver._Run``; "When the certificate is computed")
    prove_within: float = 10  # the certificate is tried once the estimated gap is within this many tol:
    # its repair can close what the scale into the dual cone costs the estimate; earlier proofs cost time
    provable_margin: float = 1e-6  # relative slack of the test that the multipliers' sum can prove tol
    # (the rounding between whitened and input coordinates)
    unprovable_below: float = 0.01  # an estimated gap this many tol that the certificate does not prove
    # ends the solve stalled: iterating further shrinks the estimate, not what the proof loses
    retry_below: float = 0.5  # after a failed proof, the stages aim at this of its estimated gap:
    # lower gives the next proof better candidates at the cost of more iterations

    # -- push only (mu = 1, ``degenerate.push_only_stop``; "Push only" in ``docs/design/certificates.md``)
    push_only_window: int = 3  # stages over which a solve at mu = 1 must lower its best objective: more
    # spends stages on a plateau, fewer takes a stage that happened to find nothing for a stall
    push_only_decrease: float = 1e-9  # relative fall over that window at or below which it ends stalled:
    # higher stops where eq. 14 still creeps down (a less exact best objective), lower spends stages on a plateau


def check_solve_options(tol, max_iter, search: str) -> None:
    """``fast_solver.solve``'s ``tol`` and ``max_iter`` by the library's rules (``core.checks``)
    and ``search`` one of ``impostors.SEARCH_METHODS``; the values are used as given."""
    check_tol(tol)
    check_max_iter(max_iter)
    if search not in SEARCH_METHODS:
        raise ValueError(f"search must be one of {SEARCH_METHODS}, got {search!r}.")
