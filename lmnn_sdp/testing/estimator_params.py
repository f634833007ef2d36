"""The parameters that set a corpus case's ``k`` and ``mu`` on an LMNN estimator.

``check_lmnn_solver`` fits, for each case, a clone of the estimator it is given with the
parameters ``params(case)`` set, ``params`` being the user's or one of the known estimators'
below. An estimator is known by the module and name of its class or of a class it derives
from, so this module imports none of the libraries it knows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def estimator_settings(estimator, params: Callable | None, cases: list) -> list[dict]:
    """The ``set_params`` of the estimator's clone for each case, every refusal raised before any fit.

    Parameters
    ----------
    estimator : estimator
        The estimator given to ``check_lmnn_solver``.
    params : callable or None
        ``params(case) -> dict`` of ``set_params``; None for the known estimators' own.
    cases : list of CorpusCase
        The cases to fit.

    Returns
    -------
    list of dict
        One per case.

    Raises
    ------
    TypeError
        ``params`` is not callable.
    ValueError
        The estimator is not known and no ``params`` is given, or it cannot take a case
        (a multi-metric case for a single-metric estimator, or clusters it cannot express).

    Examples
    --------
    >>> from fast_solver import LMNN
    >>> from lmnn_sdp.testing import corpus_cases
    >>> from lmnn_sdp.testing.estimator_params import estimator_settings
    >>> estimator_settings(LMNN(k=7), None, corpus_cases()[:2])
    [{'k': 3, 'mu': 0.5}, {'k': 1, 'mu': 0.2}]
    """
    if params is None:
        params = known_params(estimator)
    elif not callable(params):
        raise TypeError(f"params must be a callable (case) -> dict of the estimator's set_params, e.g. "
                        f"lambda case: {{'n_neighbors': case.k, 'mu': case.mu}}; got {type(params).__name__}.")
    return [dict(params(case)) for case in cases]


def known_params(estimator) -> Callable:
    """The ``params(case)`` of a known estimator class (or of a class it derives from).

    Raises
    ------
    ValueError
        The estimator is of no known class: the message names the argument and the fix.
    """
    for cls in type(estimator).__mro__:
        found = KNOWN.get((cls.__module__, cls.__name__))
        if found is not None:
            return found
    cls = type(estimator)
    names = ", ".join(sorted(estimator.get_params())) if hasattr(estimator, "get_params") else "unknown"
    raise ValueError(
        f"fit: check_lmnn_solver does not know which parameters of {cls.__module__}.{cls.__name__} set a "
        f"case's k and mu, and will not score a metric fitted for another problem. Pass "
        f"params=lambda case: {{'<its k>': case.k, '<its mu>': case.mu}} (set on a clone for each case; "
        f"its parameters: {names}), or fit as a callable fit(X, y, k, mu) -> M.")


def lmnn_params(case) -> dict:
    """``fast_solver.LMNN``: ``k`` and ``mu`` as they are (``mu`` weighs the push term)."""
    _one_metric(case, "fast_solver.LMNN")
    return {"k": case.k, "mu": case.mu}


def multi_metric_params(case) -> dict:
    """``fast_solver.MultiMetricLMNN``: ``k``, ``mu`` and ``clusters="classes"``, the only
    clustering it can be given explicitly (an int asks for k-means)."""
    if case.clusters is None:
        raise ValueError(f"case {case.id} is single-metric LMNN: fast_solver.MultiMetricLMNN learns one "
                         "metric per class; check it with kind='multi-metric-lmnn'.")
    if not np.array_equal(case.clusters, np.unique(case.y, return_inverse=True)[1]):
        raise ValueError(f"case {case.id} has clusters other than its classes, which "
                         "fast_solver.MultiMetricLMNN cannot be given (clusters='classes' or a k-means "
                         "count); leave it out of cases=, or pass a callable fit(X, y, k, mu, clusters) -> M.")
    return {"k": case.k, "mu": case.mu, "clusters": "classes"}


def metric_learn_params(case) -> dict:
    """metric-learn 0.7.0's ``LMNN``: ``n_neighbors = k``, ``regularization = 1 - mu``.

    Its ``regularization`` weighs the *pull* term: ``_loss_grad`` (metric_learn/lmnn.py)
    forms ``G = dfG * reg + df * (1 - reg)`` (``dfG`` the pull outer products) and the
    objective ``total_active * (1 - reg) + <G, L>``, which is eq. 14 with ``mu = 1 - reg``.
    """
    _one_metric(case, "metric_learn.LMNN")
    return {"n_neighbors": case.k, "regularization": 1.0 - case.mu}


def pylmnn_params(case) -> dict:
    """PyLMNN's ``LargeMarginNearestNeighbor``: ``n_neighbors = k``, ``weight_push_loss = mu``.

    PyLMNN 1.6.4 minimises ``(1 - mu) / mu * pull + push`` (``pull_loss_coef`` in
    pylmnn/lmnn.py): eq. 14 divided by ``mu``, hence no ``mu = 0``, with a squared hinge.
    """
    _one_metric(case, "pylmnn.LargeMarginNearestNeighbor")
    if case.mu == 0:
        raise ValueError(f"case {case.id} has mu = 0, which PyLMNN's weight_push_loss refuses "
                         "(its objective is divided by mu); leave it out of cases=.")
    return {"n_neighbors": case.k, "weight_push_loss": case.mu}


def _one_metric(case, name: str) -> None:
    if case.clusters is not None:
        raise ValueError(f"case {case.id} is multi-metric LMNN (one metric per cluster); {name} learns one "
                         "metric: check it with kind='lmnn', or pass a callable fit(X, y, k, mu, clusters) -> M.")


KNOWN = {
    ("fast_solver.lmnn.estimator", "LMNN"): lmnn_params,
    ("fast_solver.lmnn.multi_metric", "MultiMetricLMNN"): multi_metric_params,
    ("metric_learn.lmnn", "LMNN"): metric_learn_params,
    ("pylmnn.lmnn", "LargeMarginNearestNeighbor"): pylmnn_params,
}
