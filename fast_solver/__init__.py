"""The scalable LMNN solver with a certified stop (``fast_solver.solver``) and its estimator;
MMC at scale (``fast_solver.mmc``).

numpy, scipy and numba only: ``import fast_solver`` never loads cvxpy.
"""

from fast_solver.estimators import LMNN  # noqa: F401
from fast_solver.impostors import impostor_pairs, impostor_radius
from fast_solver.mmc import FastMMCResult, solve_mmc_fast
from fast_solver.result import FastLMNNResult, Stage
from fast_solver.solver import solve

__all__ = [
    "LMNN", "FastLMNNResult", "FastMMCResult", "Stage", "impostor_pairs", "impostor_radius",
    "solve", "solve_mmc_fast",
]
