"""Every public name of ``fast_solver`` and ``lmnn_sdp`` has a numpydoc docstring: a summary,
Parameters (Attributes for the results a solve returns), Returns for functions, and Examples
that run as doctests (pytest collects them from the packages)."""

import inspect
import re

import pytest

import fast_solver
import lmnn_sdp

PUBLIC = [(package, name) for package in (fast_solver, lmnn_sdp) for name in package.__all__]
RESULTS = re.compile(r"(Result|Certificate|Stage)$")  # returned by solves, not built by users


def _sections(obj) -> set[str]:
    doc = inspect.getdoc(obj) or ""
    return set(re.findall(r"^(\w[\w ]*)\n-{3,}$", doc, flags=re.M))


@pytest.mark.parametrize("package, name", PUBLIC, ids=[f"{p.__name__}.{n}" for p, n in PUBLIC])
def test_public_names_have_numpydoc_sections(package, name):
    obj = getattr(package, name)
    sections = _sections(obj)
    if inspect.isclass(obj):
        needed = {"Attributes", "Examples"} if RESULTS.search(name) else {"Parameters", "Examples"}
    else:
        needed = {"Parameters", "Returns", "Examples"}
    assert needed <= sections, f"{package.__name__}.{name} lacks {sorted(needed - sections)}"


ESTIMATORS = [(package, name) for package, name in PUBLIC
              if inspect.isclass(getattr(package, name)) and hasattr(getattr(package, name), "fit")]


@pytest.mark.parametrize("package, name", ESTIMATORS, ids=[n for _, n in ESTIMATORS])
def test_estimator_methods_have_parameters_and_returns(package, name):
    cls = getattr(package, name)
    for method in ("fit", "transform", "predict", "score", "decision_function", "predict_proba"):
        function = getattr(cls, method, None)
        if function is None or not function.__module__.startswith(("fast_solver", "lmnn_sdp")):
            continue
        sections = _sections(function)
        assert {"Parameters", "Returns"} <= sections, f"{name}.{method} lacks {sorted({'Parameters', 'Returns'} - sections)}"
