"""Certify other libraries' LMNN metrics under the paper's objective (eq. 14).

Each peer is fitted on an instance's data and its metric is certified on our
``LMNNProblem`` (our targets, linear hinge, ``(1-mu)`` pull, ``mu`` push), beside
our fast solver's. The peers optimise other objectives, so their gap measures
how far their answer is from the optimum of *this* objective, not a bug:

* PyLMNN 1.6.4 optimises a squared hinge; we pass ``weight_push_loss = mu``.
* metric-learn 0.7.0 uses a linear hinge but its ``regularization`` weighs the
  *pull* term (its gradient is ``reg * pull + (1 - reg) * push``); we pass
  ``regularization = 1 - mu``.
* mlpack 4.8 (L-BFGS on ``L`` from the identity) uses a linear hinge with
  ``regularization`` weighing the push term, so we pass ``regularization = mu``;
  but each point's hinge runs over its ``k`` nearest impostors only, recomputed at
  every evaluation (``validation.mlpack_objective``). All three pick their own
  target neighbours (ties may fall differently from ours).

Neither runs unmodified on the current stack; the shims below patch nothing on
disk and are reported in the table:

* PyLMNN imports ``six`` (a dependency of the ``peers`` extra) and ``GPyOpt``
  (an optional tuner) at package import: an empty ``GPyOpt`` stand-in module
  is registered, never called. Its ``fit`` passes a 2-D ``x0`` to
  ``scipy.optimize.minimize``, which now raises: a subclass returns the same
  initial transformation flattened.
* metric-learn passes ``force_all_finite`` to scikit-learn validation
  functions that now call it ``ensure_all_finite``: renamed during each fit.
"""

from __future__ import annotations

import contextlib
import sys
import time
import types
from collections.abc import Iterator

import numpy as np

import fast_solver
from lmnn_sdp import LMNNProblem, certify, solve_lmnn
from validation.instances import Instance

NOT_INSTALLED = "not installed"
INSTALL_HINT = 'pip install -e ".[peers]"  (PyLMNN 1.6.4, six, metric-learn 0.7.0, mlpack>=4.8)'
SHIMS = {
    "pylmnn": "GPyOpt stand-in module; x0 flattened for scipy.optimize.minimize",
    "metric-learn": "force_all_finite renamed to ensure_all_finite",
    "mlpack": "none",
    "lmnn-sdp fast": "none",
}


class PeerMissing(ImportError):
    """A peer library is not installed; the message says how to install it."""


def fit_pylmnn(problem: LMNNProblem) -> np.ndarray:
    """PyLMNN's metric on the problem's data (``pylmnn_metric``)."""
    return pylmnn_metric(problem.X, problem.y, problem.k, problem.mu)


def fit_metric_learn(problem: LMNNProblem) -> np.ndarray:
    """metric-learn's metric on the problem's data (``metric_learn_metric``)."""
    return metric_learn_metric(problem.X, problem.y, problem.k, problem.mu)


def pylmnn_metric(X, y, k: int, mu: float) -> np.ndarray:
    """PyLMNN's metric ``L^T L`` (d, d) of ``pylmnn_lmnn(X, y, k, mu)``: the function
    ``fit(X, y, k, mu) -> M`` that ``lmnn_sdp.testing.check_lmnn_solver`` takes."""
    L = pylmnn_lmnn(X, y, k, mu).components_
    return L.T @ L


def metric_learn_metric(X, y, k: int, mu: float) -> np.ndarray:
    """metric-learn's metric (d, d) of ``metric_learn_lmnn(X, y, k, mu)``: the function
    ``fit(X, y, k, mu) -> M`` that ``lmnn_sdp.testing.check_lmnn_solver`` takes."""
    return metric_learn_lmnn(X, y, k, mu).get_mahalanobis_matrix()


def pylmnn_lmnn(X, y, k: int, mu: float):
    """PyLMNN 1.6.4's LMNN fitted through the shims of ``import_pylmnn``.

    PyLMNN minimises a squared hinge over ``L`` with L-BFGS; its push term gets the
    weight ``mu`` (``weight_push_loss``), its pull term ``1 - mu``, as in eq. 14. It
    picks its own target neighbours; every other parameter is its default
    (``random_state=0``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,)
        Labels.
    k : int
        Target neighbours per point (``n_neighbors``).
    mu : float
        Weight of the push term (``weight_push_loss``).

    Returns
    -------
    pylmnn.LargeMarginNearestNeighbor
        The fitted estimator: ``components_`` (L, shape (n_features, n_features)),
        ``n_iter_``, ``max_iter``.

    Raises
    ------
    PeerMissing
        PyLMNN is not installed (the ``peers`` extra).
    """
    estimator_class = import_pylmnn()
    return estimator_class(n_neighbors=k, weight_push_loss=mu, random_state=0).fit(X, y)


def metric_learn_lmnn(X, y, k: int, mu: float):
    """metric-learn 0.7.0's LMNN fitted through ``metric_learn_shim``.

    metric-learn minimises a linear hinge over ``L`` by gradient steps, but its
    ``regularization`` weighs the *pull* term (its gradient is
    ``reg * pull + (1 - reg) * push``), so it gets ``regularization = 1 - mu``. It picks
    its own target neighbours; every other parameter is its default (``random_state=0``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,)
        Labels.
    k : int
        Target neighbours per point (``n_neighbors``).
    mu : float
        Weight of the push term (``regularization = 1 - mu``).

    Returns
    -------
    metric_learn.LMNN
        The fitted estimator: ``get_mahalanobis_matrix()`` (M, shape (n_features,
        n_features)), ``components_``, ``n_iter_``, ``max_iter``.

    Raises
    ------
    PeerMissing
        metric-learn is not installed (the ``peers`` extra).
    """
    try:
        from metric_learn import LMNN
    except ImportError as error:
        raise PeerMissing(f"metric-learn is not installed: {INSTALL_HINT}") from error
    with metric_learn_shim():
        return LMNN(n_neighbors=k, regularization=1.0 - mu, random_state=0).fit(X, y)


def fit_mlpack(problem: LMNNProblem, components=None, **options) -> np.ndarray:
    """mlpack's metric (d, d): L-BFGS, ``k = problem.k``, ``regularization = mu``, else defaults.

    ``components`` (r, d), optional, is the starting ``L`` in our convention (the data maps
    to ``X @ L.T``); without it mlpack starts from the identity. ``options`` go to
    ``mlpack.lmnn`` as they are (``max_iterations``, ``tolerance``, ...). mlpack's binding
    maps the data to ``X @ output``, so its ``output`` is our ``L^T`` and the metric is
    ``output output^T``; it overwrites the starting matrix it is given, so it gets a copy."""
    try:
        import mlpack
    except ImportError as error:
        raise PeerMissing(f"mlpack is not installed: {INSTALL_HINT}") from error
    if components is not None:
        options["distance"] = np.array(components, dtype=float).T.copy()
    output = mlpack.lmnn(input_=problem.X, labels=problem.label_codes.astype(np.int64),
                         k=problem.k, regularization=problem.mu, optimizer="lbfgs",
                         **options)["output"]
    return output @ output.T


def fit_fast(problem: LMNNProblem) -> np.ndarray:
    """Our fast solver, for comparison."""
    return fast_solver.solve(problem).metric


PEERS = {"pylmnn": fit_pylmnn, "metric-learn": fit_metric_learn, "mlpack": fit_mlpack,
         "lmnn-sdp fast": fit_fast}


def peers_table(instances: list[Instance], peers=tuple(PEERS)) -> list[dict]:
    """Certified gap of each peer's metric on each instance, and the certified optimum."""
    rows = []
    for instance in instances:
        problem = instance.problem()
        optimum = solve_lmnn(problem, method="aggregated", tol=1e-7)
        for peer in peers:
            start = time.perf_counter()
            try:
                M = PEERS[peer](problem)
            except PeerMissing:
                rows.append(_row(instance, peer, optimum, None, np.nan, NOT_INSTALLED))
                continue
            seconds = time.perf_counter() - start
            rows.append(_row(instance, peer, optimum, certify(problem, _symmetric_psd(M)), seconds))
    return rows


def _row(instance, peer, optimum, certificate, seconds, note=None) -> dict:
    return {
        "instance": instance.name, "library": peer,
        "objective": certificate.upper if certificate else np.nan,
        "optimum": optimum.upper, "optimum_gap": optimum.relative_gap,
        "gap_to_optimum": (certificate.upper - optimum.lower) / certificate.upper
        if certificate else np.nan,
        "seconds": seconds, "shims": note or SHIMS[peer],
    }


def _symmetric_psd(M: np.ndarray) -> np.ndarray:
    """Peers return ``L^T L`` up to rounding; symmetrise (their metric, our check)."""
    return (M + M.T) / 2


def import_pylmnn():
    """PyLMNN's estimator class with the shims of the module docstring."""
    if "GPyOpt" not in sys.modules:
        stand_in = types.ModuleType("GPyOpt")
        methods = types.ModuleType("GPyOpt.methods")
        methods.BayesianOptimization = None  # only PyLMNN's optional tuner would use it
        stand_in.methods = methods
        sys.modules.update({"GPyOpt": stand_in, "GPyOpt.methods": methods})
    try:
        import pylmnn
    except ImportError as error:
        raise PeerMissing(f"PyLMNN is not installed: {INSTALL_HINT}") from error

    class FlatStartLMNN(pylmnn.LargeMarginNearestNeighbor):
        """PyLMNN with a flattened initial transformation; otherwise unchanged."""

        def _initialize(self, X, init):
            return super()._initialize(X, init).ravel()

    return FlatStartLMNN


@contextlib.contextmanager
def metric_learn_shim() -> Iterator[None]:
    """Let metric-learn 0.7.0 call current scikit-learn validation (module docstring)."""
    import metric_learn._util as util

    originals = util.check_array, util.check_X_y

    def renamed(function):
        def call(*args, force_all_finite=True, **kwargs):
            return function(*args, ensure_all_finite=force_all_finite, **kwargs)
        return call

    util.check_array, util.check_X_y = (renamed(f) for f in originals)
    try:
        yield
    finally:
        util.check_array, util.check_X_y = originals
