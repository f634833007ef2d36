"""The scalable LMNN solvers with a certified stop (``fast_solver.solver``: LMNN and multi-metric
LMNN; ``multipass``), energy-based classification (``energy``), MMC at scale (``mmc``) and
their estimators; RCA (``rca``), the closed-form baseline of the experiments.

numpy, scipy and numba only: ``import fast_solver`` never loads cvxpy.
"""

from fast_solver.energy import energies
from fast_solver.energy_estimator import EnergyClassifier
from fast_solver.estimators import LMNN  # noqa: F401
from fast_solver.impostors import impostor_pairs, impostor_radius
from fast_solver.mmc import FastMMCResult, solve_mmc_fast
from fast_solver.multi_metric import MultiMetricLMNN, cluster_neighbors
from fast_solver.multipass import MultiPassLMNN, MultiPassResult, solve_multipass
from fast_solver.rca import RCA, rca_components
from fast_solver.result import FastLMNNResult, Stage
from fast_solver.solver import solve

__all__ = [
    "EnergyClassifier", "LMNN", "FastLMNNResult", "FastMMCResult", "MultiMetricLMNN",
    "MultiPassLMNN", "MultiPassResult", "RCA", "Stage", "cluster_neighbors", "energies",
    "impostor_pairs", "impostor_radius", "rca_components", "solve", "solve_mmc_fast", "solve_multipass",
]
