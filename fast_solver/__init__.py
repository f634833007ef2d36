"""The scalable LMNN solver with a certified stop (``fast_solver.solver``), its estimator
and energy-based classification (``fast_solver.energy``).

numpy, scipy and numba only: ``import fast_solver`` never loads cvxpy.
"""

from fast_solver.energy import energies
from fast_solver.energy_estimator import EnergyClassifier
from fast_solver.estimators import LMNN  # noqa: F401
from fast_solver.impostors import impostor_pairs, impostor_radius
from fast_solver.result import FastLMNNResult, Stage
from fast_solver.solver import solve

__all__ = [
    "EnergyClassifier", "LMNN", "FastLMNNResult", "Stage", "energies", "impostor_pairs",
    "impostor_radius", "solve",
]
