"""The scalable solvers, one subpackage per family:

- ``lmnn``: LMNN with a certified stop (solver ``solve``, result ``FastLMNNResult``, estimator
  ``LMNN``), multi-metric LMNN (``MultiMetricLMNN``), multi-pass LMNN (``solve_multipass``,
  ``MultiPassResult``, ``MultiPassLMNN``), energy-based classification (``EnergyClassifier``);
- ``low_rank``: LMCA and kernel LMCA (``solve_lmca``, ``solve_kernel_lmca``, ``LMCAResult``,
  ``LMCA``, ``KernelLMCA``; not convex, kept apart from the certified side);
- ``mmc``: MMC at scale, a solver and its result (``solve_mmc_fast``, ``FastMMCResult``) and no
  estimator (``lmnn_sdp.MMC`` is the exact one);
- ``nca``: NCA, memory-bounded, a solver and an estimator (``minimize_nca``, ``NCA``) and no
  result class: ``minimize_nca`` returns scipy's ``OptimizeResult`` in the library's status terms;
- ``mlng``: MLNG (``fit_mlng``, ``MLNGResult``, ``MLNG``);
- ``rca``: RCA, the closed-form baseline of the experiments: a function and an estimator
  (``rca_components``, ``RCA``), no iterations and no result.

numpy, scipy and numba only: ``import fast_solver`` never loads cvxpy.
"""

from fast_solver.lmnn.energy import energies
from fast_solver.lmnn.energy_classifier import EnergyClassifier
from fast_solver.lmnn.estimator import LMNN  # noqa: F401
from fast_solver.lmnn.impostors import impostor_pairs, impostor_radius
from fast_solver.lmnn.multi_metric import MultiMetricLMNN, cluster_neighbors
from fast_solver.lmnn.multipass import MultiPassLMNN, MultiPassResult, solve_multipass
from fast_solver.lmnn.result import FastLMNNResult, Stage
from fast_solver.lmnn.solver import solve
from fast_solver.low_rank.kernel_lmca import KernelLMCA, solve_kernel_lmca
from fast_solver.low_rank.lmca import LMCA, price_of_rank, solve_lmca
from fast_solver.low_rank.solver import LMCAResult
from fast_solver.mlng.estimator import MLNG
from fast_solver.mlng.sgd import MLNGResult, fit_mlng
from fast_solver.mmc.solver import FastMMCResult, solve_mmc_fast
from fast_solver.nca.estimator import NCA
from fast_solver.nca.objective import minimize_nca, nca_objective
from fast_solver.rca import RCA, rca_components

__all__ = [
    "EnergyClassifier", "KernelLMCA", "LMCA", "LMCAResult", "LMNN", "FastLMNNResult", "FastMMCResult",
    "MLNG", "MLNGResult", "MultiMetricLMNN", "MultiPassLMNN", "MultiPassResult", "NCA", "RCA", "Stage",
    "cluster_neighbors", "energies", "fit_mlng", "impostor_pairs", "impostor_radius", "minimize_nca",
    "nca_objective", "price_of_rank", "rca_components", "solve", "solve_kernel_lmca", "solve_lmca",
    "solve_mmc_fast", "solve_multipass",
]
