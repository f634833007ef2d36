"""One rule per option: every public solver and estimator that takes a tolerance or an
iteration budget checks it by ``lmnn_sdp.core.checks`` (``check_tol``: a real number, finite,
>= 0; ``check_max_iter``: an integer >= 1, scikit-learn NCA's rule). ``True`` and ``"0.5"`` are
TypeErrors, out of range is a ValueError, and the error names the option.

The solvers are found by introspection (the names exported by ``lmnn_sdp``, ``fast_solver`` and
their public subpackages, the ones that define ``__all__``, whose signature or ``get_params``
has one of the options); each needs a call below, so a new one fails here until it has one.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import warnings
from functools import cache

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.datasets import load_iris

TOL_OPTIONS = ("tol", "rtol", "tolerance")  # check_tol, each by its own name
BUDGET_OPTIONS = ("max_iter", "max_epochs", "max_passes")  # check_max_iter, each by its own name
REFUSED = [(True, TypeError), ("0.5", TypeError), (-1, ValueError), (float("nan"), ValueError)]
REFUSED_BUDGETS = [(True, TypeError), (0, ValueError), (1.5, TypeError)]
EXEMPT = {  # options of these names that are not a tolerance of a solve, with their own rule
    "fast_solver.RCA": "rtol is a rank threshold in [0, 1) of the within-class covariance",
    "fast_solver.rca_components": "rtol is a rank threshold of the within-chunklet covariance",
}


def public_modules() -> list:
    """``lmnn_sdp``, ``fast_solver`` and their subpackages that define ``__all__``."""
    modules = []
    for top in ("lmnn_sdp", "fast_solver"):
        package = importlib.import_module(top)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{top}."):
            if info.ispkg and not any(part.startswith("_") for part in info.name.split(".")):
                module = importlib.import_module(info.name)
                if hasattr(module, "__all__"):
                    modules.append(module)
    return modules


def options_of(obj) -> tuple[str, ...]:
    """The tolerance and budget options ``obj`` takes: an estimator's ``get_params``, else its
    signature; none for a record (a dataclass: certificates and corpus cases hold a ``tol``)."""
    if dataclasses.is_dataclass(obj):
        return ()
    if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
        names = obj().get_params()
    elif callable(obj):
        names = inspect.signature(obj).parameters
    else:
        return ()
    return tuple(name for name in names if name in TOL_OPTIONS + BUDGET_OPTIONS)


@cache
def public_solvers() -> dict[str, tuple]:
    """``{"package.name": (object, options)}`` for every public name with such options."""
    found = {}
    for module in public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            options = options_of(obj)
            key = f"{module.__name__}.{name}"
            if options and key not in EXEMPT and not any(obj is seen for seen, _ in found.values()):
                found[key] = (obj, options)
    return found


@cache
def data() -> dict:
    """Small inputs: 15 iris points (5 per class), their LMNN problems, a kernel, a corpus case."""
    from fast_solver.low_rank.kernel_lmca import make_kernel
    from lmnn_sdp import LMNNProblem
    from lmnn_sdp.testing import corpus_cases

    X, y = load_iris(return_X_y=True)
    X, y = X[::10], y[::10]
    zebra = [case for case in corpus_cases() if case.id.startswith("zebra")][:1]
    return {"X": X, "y": y, "problem": LMNNProblem(X, y, k=1), "pull_only": LMNNProblem(X, y, k=1, mu=0.0),
            "kernel": make_kernel("rbf", n_features=4), "zebra": zebra, "mmc": corpus_cases("mmc")[0]}


def _estimator(cls):
    return lambda **options: cls(**options).fit(data()["X"], data()["y"])


def _calls() -> dict:
    """How to call each solver with ``options`` on ``data()``, quickly when the options are valid."""
    import fast_solver as fs
    import lmnn_sdp as ls
    from lmnn_sdp import testing

    def d():
        return data()

    return {
        "lmnn_sdp.certify": lambda **o: ls.certify(d()["problem"], np.eye(4), **o),
        "lmnn_sdp.certify_mmc": lambda **o: ls.certify_mmc(d()["X"], np.eye(4), d()["y"], **o),
        "lmnn_sdp.excess_over_optimum": lambda **o: ls.excess_over_optimum(d()["pull_only"], np.zeros((4, 4)), **o),
        "lmnn_sdp.solve_lmnn": lambda **o: ls.solve_lmnn(d()["problem"], max_rounds=1, **o),
        "lmnn_sdp.solve_lmnn_dual": lambda **o: ls.solve_lmnn_dual(d()["problem"], **o),
        "lmnn_sdp.solve_mm_lmnn": lambda **o: ls.solve_mm_lmnn(d()["problem"], max_rounds=1, **o),
        "lmnn_sdp.solve_mmc": lambda **o: ls.solve_mmc(d()["X"], d()["y"], **o),
        "lmnn_sdp.MMC": _estimator(ls.MMC),
        "lmnn_sdp.testing.assert_lmnn_optimal": lambda **o: testing.assert_lmnn_optimal(
            d()["X"], d()["y"], np.zeros((4, 4)), k=1, mu=0.0, **o),  # a zero optimum: certified at rtol=0
        "lmnn_sdp.testing.assert_mmc_optimal": lambda **o: testing.assert_mmc_optimal(
            d()["mmc"].X, d()["mmc"].metric, y=d()["mmc"].y, excess=False, **o),
        "lmnn_sdp.testing.check_lmnn_solver": lambda **o: testing.check_lmnn_solver(
            lambda X, y, k, mu: np.eye(X.shape[1]), cases=d()["zebra"], **o),
        "lmnn_sdp.testing.corpus_cases": lambda **o: testing.corpus_cases("mmc-diagonal", **o),
        "fast_solver.solve": lambda **o: fs.solve(d()["problem"], **o),
        "fast_solver.solve_multipass": lambda **o: fs.solve_multipass(d()["problem"], max_iter=1, **o),
        "fast_solver.solve_lmca": lambda **o: fs.solve_lmca(d()["problem"], 2, **o),
        "fast_solver.solve_kernel_lmca": lambda **o: fs.solve_kernel_lmca(d()["problem"], d()["kernel"], 2, **o),
        "fast_solver.price_of_rank": lambda **o: fs.price_of_rank(d()["problem"], [], **o),
        "fast_solver.fit_mlng": lambda **o: fs.fit_mlng(d()["X"], d()["y"], k=1, **o),
        "fast_solver.minimize_nca": lambda **o: fs.minimize_nca(d()["X"], d()["y"], np.eye(4), **o),
        "fast_solver.solve_mmc_fast": lambda **o: fs.solve_mmc_fast(d()["X"], d()["y"], **o),
        **{f"fast_solver.{cls.__name__}": _estimator(cls)
           for cls in (fs.LMNN, fs.MultiMetricLMNN, fs.MultiPassLMNN, fs.LMCA, fs.KernelLMCA, fs.NCA, fs.MLNG)},
    }


def refusals() -> list:
    cases = []
    for key, (_, options) in public_solvers().items():
        for option in options:
            values = REFUSED if option in TOL_OPTIONS else REFUSED_BUDGETS
            cases += [pytest.param(key, option, value, error, id=f"{key}-{option}={value!r}")
                      for value, error in values]
    return cases


def accepted(options) -> dict:
    """The smallest values the rules accept: every tolerance 0, every budget 1."""
    return {option: 0 if option in TOL_OPTIONS else 1 for option in options}


def test_introspection_finds_every_solver_and_each_has_a_call():
    found = public_solvers()
    assert len(found) >= 25, sorted(found)  # the library's solvers and estimators, not none
    assert set(found) == set(_calls()), (sorted(set(found) - set(_calls())), sorted(set(_calls()) - set(found)))
    for key in EXEMPT:  # the exemptions name what exists, with the option they exempt
        module, name = key.rsplit(".", 1)
        assert "rtol" in options_of(getattr(importlib.import_module(module), name)), key
    assert {"tol", "max_iter"} <= set(found["fast_solver.LMNN"][1])


@pytest.mark.parametrize("key, option, value, error", refusals())
def test_a_bad_option_is_refused_by_name(key, option, value, error):
    with pytest.raises(error, match=rf"\b{option}\b"):
        _calls()[key](**{option: value})


@pytest.mark.parametrize("key", sorted(public_solvers()))
def test_tol_zero_and_one_iteration_pass_the_checks(key):
    options = accepted(public_solvers()[key][1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a budget of 1 rarely converges; that is not the point
        try:
            _calls()[key](**options)
        except AssertionError as verdict:  # the testing API judged the metric: the options passed
            assert "metric" in str(verdict)


@pytest.mark.parametrize("method", ["cutting-plane", "aggregated"])
@pytest.mark.parametrize("value, error", REFUSED_BUDGETS)
def test_max_rounds_of_constraint_generation_is_a_budget(method, value, error):
    from lmnn_sdp import solve_lmnn

    with pytest.raises(error, match=r"\bmax_rounds\b"):
        solve_lmnn(data()["problem"], method=method, max_rounds=value)


@pytest.mark.parametrize("method, option", [("cutting-plane", "add_band"), ("cutting-plane", "drop_band"),
                                            ("aggregated", "band"), ("aggregated", "drop_band"),
                                            ("aggregated", "add_ratio")])
@pytest.mark.parametrize("value, error", REFUSED)
def test_the_bands_of_constraint_generation_follow_the_rule_of_tolerances(method, option, value, error):
    from lmnn_sdp import solve_lmnn

    with pytest.raises(error, match=rf"^{option} must be"):
        solve_lmnn(data()["problem"], method=method, **{option: value})


@pytest.mark.parametrize("value, error", REFUSED)
def test_certify_checks_its_band_as_a_tolerance(value, error):
    from lmnn_sdp import certify

    with pytest.raises(error, match=r"^band must be"):
        certify(data()["problem"], np.eye(4), band=value)


@pytest.mark.parametrize("value, error", [*REFUSED, (1.0, ValueError)])
def test_rca_components_checks_its_rank_threshold(value, error):
    from fast_solver import rca_components

    X, y = data()["X"], data()["y"]
    with pytest.raises(error, match=r"^rtol must be"):
        rca_components(X, y, rtol=value)


@pytest.mark.parametrize("value, error", REFUSED_BUDGETS)
def test_mlng_batch_size_is_a_count_by_the_rule_of_budgets(value, error):
    from fast_solver import fit_mlng

    with pytest.raises(error, match=r"^batch_size must be an integer >= 1"):
        fit_mlng(data()["X"], data()["y"], batch_size=value)


def test_the_issue_acceptance_fast_solve_refuses_true_and_a_string():
    from fast_solver import solve

    for tol in (True, "0.5"):
        with pytest.raises(TypeError, match=r"^tol must be a real number"):
            solve(data()["problem"], tol=tol)
