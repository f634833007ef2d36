"""Every result speaks one status vocabulary (``lmnn_sdp.status``): ``status`` is one of the
constants, ``converged`` is ``status == "converged"``, and ``certified`` comes from bounds."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from fast_solver import fit_mlng, minimize_nca, solve, solve_lmca, solve_mmc_fast, solve_multipass
from lmnn_sdp import LMNNProblem, solve_lmnn, solve_mmc
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED, STATUSES


@pytest.fixture(scope="module")
def iris30():
    X, y = load_iris(return_X_y=True)
    rows = np.r_[0:10, 50:60, 100:110]
    return X[rows], y[rows]


def _results(X, y):
    problem = LMNNProblem(X, y, k=2, mu=0.5)
    codes = np.unique(y, return_inverse=True)[1]
    return {
        "fast LMNN": (solve(problem), CONVERGED),
        "fast LMNN, budget": (solve(problem, max_iter=1), MAX_ITER),
        "multi-pass": (solve_multipass(problem, max_passes=1, stop="passes"), CONVERGED),
        "multi-pass, targets still change": (solve_multipass(problem, max_passes=1), None),
        "fast MMC": (solve_mmc_fast(X, y), CONVERGED),
        "fast MMC, budget": (solve_mmc_fast(X, y, max_iter=1), MAX_ITER),
        "MLNG, budget": (fit_mlng(X, codes, k=2, max_epochs=1, random_state=0), MAX_ITER),
        "LMCA": (solve_lmca(problem, 2, random_state=0), CONVERGED),
        "NCA": (minimize_nca(X, y, np.eye(4)), CONVERGED),
        "NCA, budget": (minimize_nca(X, y, np.eye(4), max_iter=1), MAX_ITER),
        "exact LMNN": (solve_lmnn(problem, method="full"), CONVERGED),
        "exact LMNN, one round": (solve_lmnn(problem, method="cutting-plane", max_rounds=1,
                                             working_set=np.array([[0, problem.targets[0, 0], 29]])),
                                  MAX_ITER),
        "exact MMC": (solve_mmc(X, y), CONVERGED),
    }


def test_every_result_speaks_the_status_vocabulary(iris30):
    for name, (result, expected) in _results(*iris30).items():
        assert result.status in STATUSES, name
        assert result.converged == (result.status == CONVERGED), name
        assert isinstance(result.message, str) and result.message, name
        assert result.message.startswith("not converged") != result.converged or "pass" in name, name
        if expected is not None:
            assert result.status == expected, (name, result.status, result.message)
        if hasattr(result, "certificate") and result.status == CONVERGED:
            assert result.certified, name  # the certified solvers' rule is their certificate


def test_exact_results_report_the_solver_status_apart(iris30):
    X, y = iris30
    result = solve_lmnn(LMNNProblem(X, y, k=2), method="full")
    assert result.solver_status in {"optimal", "optimal_inaccurate"}
    assert result.status == CONVERGED and STALLED != result.status


def test_nca_keeps_lbfgsb_own_code_and_text_apart(iris30):
    X, y = iris30
    budget = minimize_nca(X, y, np.eye(4), max_iter=1)
    assert budget.status == MAX_ITER and budget.message.startswith("not converged: max_iter=1")
    assert budget.lbfgsb_status == 1 and isinstance(budget.lbfgsb_status, int)
    assert budget.lbfgsb_message in budget.message and "LIMIT" in budget.lbfgsb_message.upper()
    done = minimize_nca(X, y, np.eye(4))
    assert done.status == CONVERGED and done.lbfgsb_status == 0 and done.success
    assert done.message == f"converged: L-BFGS-B's test held ({done.lbfgsb_message})"


def test_nca_reports_the_evaluation_limit_as_stalled_not_max_iter():
    from scipy.optimize import OptimizeResult

    from fast_solver.nca.objective import _in_library_terms

    evaluations = OptimizeResult(success=False, status=1, nit=7, message="STOP: TOTAL NO. OF F,G EVALUATIONS "
                                 "EXCEEDS LIMIT")
    result = _in_library_terms(evaluations, max_iter=50)  # L-BFGS-B's code 1, but 7 of 50 iterations
    assert (result.status, result.lbfgsb_status, result.converged) == (STALLED, 1, False)
    assert result.message.startswith("not converged: L-BFGS-B stopped after 7 iterations")
