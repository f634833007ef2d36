"""Fast LMNN solvers (Appendix A of Weinberger & Saul, JMLR 2009) and their peers."""

from fast_solver.active_set import IterationInfo, solve
from fast_solver.estimators import LMNN
from fast_solver.gradient import incremental_gradient, lmnn_gradient, pull_gradient, push_gradient
from fast_solver.impostors import active_triplets, impostor_pairs, impostor_radius
from fast_solver.polish import polish_metric
from fast_solver.psd import project_psd, transformation_from_metric
from fast_solver.result import FastLMNNResult

__all__ = [
    "LMNN", "FastLMNNResult", "IterationInfo", "active_triplets", "impostor_pairs", "impostor_radius",
    "incremental_gradient", "lmnn_gradient", "polish_metric", "project_psd", "pull_gradient",
    "push_gradient", "solve", "transformation_from_metric",
]
