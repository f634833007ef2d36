"""The methods of Table 1, by name: what each fits and how it classifies.

A method's ``fit(X, y, params)`` returns a ``Fitted``: a ``transform`` (3-NN with
Euclidean distances after it), ``neighbours`` (its own nearest-neighbour search, as
multi-metric LMNN's eq. 16 distances) or a ``predict`` (a classifier: energy, SVM), and
statistics (certified gap, active triplets, iterations where the method has them). The
protocol (``validation.experiments.task``) measures the fit time and the errors.

``params`` is the method's ``params`` with ``tol`` set to the data set's (Table 1's
data sets: 1e-6; Fashion-MNIST 1e-4) and is part of the stored task key. ``gate`` names
the cross-check rows (``validation.crosscheck.SOLVERS``) that must pass on the built-in
instances before the method may run (``validation.experiments.gate``). ``inputs`` is
"raw" for Euclidean k-NN only; every other method sees the data set's PCA-reduced inputs
(Table 1: "all variations of lmnn, rca and lda were applied after pre-processing with
pca"; only Fashion-MNIST is reduced here, elsewhere the reduced inputs are the raw ones).

Choices: multi-pass LMNN runs 3 passes (as the letters benchmark); the multi-class SVM is
scikit-learn's ``SVC`` (one-vs-one, RBF kernel, C = 10, gamma = "scale") on standardised
inputs without model selection (the paper cross-validated linear, polynomial and RBF
kernels of Crammer-Singer SVMs); the peers PyLMNN and metric-learn run through
``validation.peers`` and are scored by eq. 14 at their metric against our certified lower
bound; a peer that is not installed is skipped with the reason recorded.

NCA, MLNG, LMCA and kernel LMCA join with one line each in ``METHODS``, e.g. a
scikit-learn transformer ``"nca": transformer(NCA, gate=("nca",), tol=None)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import fast_solver
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from validation import peers
from validation.experiments.knn import drop_self
from validation.experiments.protocol import K, MU


@dataclass(frozen=True)
class Fitted:
    """A fitted method: exactly one of ``transform`` (X (m, d) -> (m, r)), ``neighbours``
    ((X_query (m, d) or None for leave-one-out, k) -> training indices (m, k), nearest
    first) or ``predict`` (X (m, d) -> labels (m,)); and its statistics (JSON values)."""

    stats: dict
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    neighbours: Callable[[np.ndarray | None, int], np.ndarray] | None = None
    predict: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class Method:
    """A registered method (module docstring)."""

    fit: Callable[[np.ndarray, np.ndarray, dict], Fitted]
    params: dict = field(default_factory=dict)
    gate: tuple[str, ...] = ()
    inputs: str = "reduced"
    description: str = ""


def transformer(make: Callable, gate: tuple[str, ...] = (), description: str = "", **params) -> Method:
    """A method from a scikit-learn transformer: ``make(**params).fit(X, y)``, then 3-NN
    after its ``transform``. A pipeline's statistics are its last step's."""
    def fit(X, y, params):
        estimator = make(**params).fit(X, y)
        return Fitted(estimator_stats(estimator), transform=estimator.transform)
    return Method(fit, params, gate, description=description)


def classifier(make: Callable, gate: tuple[str, ...] = (), description: str = "", **params) -> Method:
    """A method from a scikit-learn classifier: ``make(**params).fit(X, y).predict``."""
    def fit(X, y, params):
        estimator = make(**params).fit(X, y)
        return Fitted(estimator_stats(estimator), predict=estimator.predict)
    return Method(fit, params, gate, description=description)


def estimator_stats(estimator) -> dict:
    """The certified statistics of a fitted estimator (its ``result_``, or its learner's
    or last pipeline step's): objective, lower bound, gap, converged, iterations, active
    triplets; empty for closed-form methods."""
    if isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    estimator = getattr(estimator, "learner_", estimator)
    result = getattr(estimator, "result_", None)
    return {} if result is None else certified_stats(result)


def certified_stats(result) -> dict:
    """Statistics of a fast-solver result (LMNN, multi-metric, multi-pass or MMC)."""
    passes = getattr(result, "passes", None)
    last = passes[-1] if passes else result
    stats = {"objective": getattr(last, "upper", None), "lower_bound": getattr(last, "lower", None),
             "certified_gap": result.relative_gap, "converged": bool(result.converged),
             "n_iter": int(result.n_iter), "active_triplets": getattr(last, "n_active", None)}
    if passes:
        stats["passes"] = len(passes)
        stats["pass_gaps"] = [p.relative_gap for p in passes]
    return {name: value for name, value in stats.items() if value is not None}


def identity_fit(X: np.ndarray, y: np.ndarray, params: dict) -> Fitted:
    """No learning: 3-NN on the inputs as they are."""
    return Fitted({}, transform=np.asarray)


def mmc_fit(X: np.ndarray, y: np.ndarray, params: dict) -> Fitted:
    """MMC (Xing et al. 2002), full metric, on all label pairs (``solve_mmc_fast``)."""
    result = fast_solver.solve_mmc_fast(X, y, tol=params["tol"])
    L = psd_factor(result.metric)
    return Fitted(certified_stats(result), transform=lambda Z: np.asarray(Z) @ L.T)


def multi_metric_fit(X: np.ndarray, y: np.ndarray, params: dict) -> Fitted:
    """Multi-metric LMNN (sec. 5.2), one metric per class; 3-NN under eq. 16's distances."""
    model = fast_solver.MultiMetricLMNN(**params).fit(X, y)
    return Fitted(certified_stats(model.result_),
                  neighbours=eq16_neighbours(X, model.metrics_, model.clusters_))


def eq16_neighbours(X_train, metrics: np.ndarray, clusters: np.ndarray) -> Callable:
    """The ``neighbours`` of ``Fitted`` under eq. 16's distances ``D^(x, x_b) = (x - x_b)^T
    M_{c(b)} (x - x_b)``: ``X_train`` (n, d), ``metrics`` (C, d, d), ``clusters`` (n,)."""
    X_train = np.asarray(X_train, dtype=float)

    def neighbours(X_query, k):
        if X_query is None:
            return drop_self(fast_solver.cluster_neighbors(X_train, metrics, clusters, X_train, k + 1))
        return fast_solver.cluster_neighbors(X_train, metrics, clusters,
                                             np.asarray(X_query, dtype=float), k)
    return neighbours


def peer_fit(peer: str) -> Callable[[np.ndarray, np.ndarray, dict], Fitted]:
    """A peer library's LMNN (``validation.peers.PEERS``): its metric, scored by eq. 14 with
    our targets against the certified lower bound of ``fast_solver.solve`` on the same
    problem. Raises ``peers.PeerMissing`` when it is not installed."""
    def fit(X, y, params):
        problem = LMNNProblem(X, y, k=params["k"], mu=params["mu"])
        M = peers.PEERS[peer](problem)
        M = (M + M.T) / 2
        objective = problem.objective(M)
        bound = fast_solver.solve(problem, tol=params["tol"])
        stats = {"objective": objective, "lower_bound": bound.lower,
                 "certified_gap": (objective - bound.lower) / objective,
                 "active_triplets": len(problem.active_triplets(M))}
        L = psd_factor(M)
        return Fitted(stats, transform=lambda Z: np.asarray(Z) @ L.T)
    return fit


LMNN_PARAMS = {"k": K, "mu": MU, "tol": None}  # tol None: the data set's

METHODS: dict[str, Method] = {
    "euclidean": Method(identity_fit, inputs="raw", description="3-NN, Euclidean, raw inputs"),
    "pca": Method(identity_fit, description="3-NN after the data set's PCA (Fashion-MNIST: 164)"),
    "lda": transformer(LinearDiscriminantAnalysis, description="3-NN after LDA (scikit-learn)"),
    "rca": transformer(fast_solver.RCA, description="3-NN after RCA, chunklets = classes"),
    "mmc": Method(mmc_fit, {"tol": None}, gate=("mmc",), description="3-NN under MMC's metric"),
    "lmnn": transformer(fast_solver.LMNN, gate=("lmnn",), description="3-NN under LMNN (eq. 14)",
                        **LMNN_PARAMS),
    "lmnn-lda": transformer(lambda **p: make_pipeline(LinearDiscriminantAnalysis(), fast_solver.LMNN(**p)),
                            gate=("lmnn",), description="LMNN on LDA-reduced inputs", **LMNN_PARAMS),
    "energy": classifier(lambda **p: fast_solver.EnergyClassifier(fast_solver.LMNN(**p)),
                         gate=("lmnn", "energy"), description="energy classification (eq. 15)",
                         **LMNN_PARAMS),
    "multipass": transformer(fast_solver.MultiPassLMNN, gate=("lmnn",), max_passes=3,
                             description="multi-pass LMNN (sec. 5.1), 3 passes", **LMNN_PARAMS),
    "multimetric": Method(multi_metric_fit, {**LMNN_PARAMS, "clusters": "classes"},
                          gate=("multi-metric",), description="multi-metric LMNN (sec. 5.2)"),
    "svm": classifier(lambda **p: make_pipeline(StandardScaler(), SVC(**p)), C=10.0, kernel="rbf",
                      gamma="scale", description="multi-class SVM (SVC, RBF, standardised)"),
    "pylmnn": Method(peer_fit("pylmnn"), LMNN_PARAMS, description="PyLMNN 1.6.4 (peer)"),
    "metric-learn": Method(peer_fit("metric-learn"), LMNN_PARAMS, description="metric-learn 0.7.0 LMNN (peer)"),
}


def method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose from {list(METHODS)}")
    return METHODS[name]


def method_params(name: str, tol: float) -> dict:
    """The parameters ``name`` runs with on a data set whose LMNN tolerance is ``tol``."""
    params = dict(method(name).params)
    if "tol" in params and params["tol"] is None:
        params["tol"] = tol
    return params
