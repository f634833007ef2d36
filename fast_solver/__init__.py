"""The scalable LMNN solvers with a certified stop (``fast_solver.solver``: LMNN and multi-metric
LMNN; ``multipass``), low-rank LMNN / LMCA and kernel LMCA (``lmca``, ``kernel_lmca``),
energy-based classification (``energy``), MMC at scale (``mmc``), NCA (``nca``, memory-bounded),
MLNG (``mlng``, ``mlng_sgd``) and their estimators; RCA (``rca``), the closed-form baseline of
the experiments.

numpy, scipy and numba only: ``import fast_solver`` never loads cvxpy.
"""

from fast_solver.energy import energies
from fast_solver.energy_estimator import EnergyClassifier
from fast_solver.estimators import LMNN  # noqa: F401
from fast_solver.impostors import impostor_pairs, impostor_radius
from fast_solver.kernel_lmca import KernelLMCA, solve_kernel_lmca
from fast_solver.lmca import LMCA, price_of_rank, solve_lmca
from fast_solver.low_rank import LMCAResult
from fast_solver.mlng_estimator import MLNG
from fast_solver.mlng_sgd import MLNGResult, fit_mlng
from fast_solver.mmc import FastMMCResult, solve_mmc_fast
from fast_solver.multi_metric import MultiMetricLMNN, cluster_neighbors
from fast_solver.multipass import MultiPassLMNN, MultiPassResult, solve_multipass
from fast_solver.nca import minimize_nca, nca_objective
from fast_solver.nca_estimator import NCA
from fast_solver.rca import RCA, rca_components
from fast_solver.result import FastLMNNResult, Stage
from fast_solver.solver import solve

__all__ = [
    "EnergyClassifier", "KernelLMCA", "LMCA", "LMCAResult", "LMNN", "FastLMNNResult", "FastMMCResult",
    "MLNG", "MLNGResult", "MultiMetricLMNN", "MultiPassLMNN", "MultiPassResult", "NCA", "RCA", "Stage",
    "cluster_neighbors", "energies", "fit_mlng", "impostor_pairs", "impostor_radius", "minimize_nca",
    "nca_objective", "price_of_rank", "rca_components", "solve", "solve_kernel_lmca", "solve_lmca",
    "solve_mmc_fast", "solve_multipass",
]
