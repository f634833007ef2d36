"""The methods of Table 1, by name: what each fits and how it classifies.

A method's ``fit(X, y, params, checkpoint)`` returns a ``Fitted``: a ``transform`` (3-NN with
Euclidean distances after it), ``neighbours`` (its own nearest-neighbour search, as
multi-metric LMNN's eq. 16 distances) or a ``predict`` (a classifier: energy, SVM), and
statistics (certified gap, active triplets, iterations where the method has them). The
protocol (``validation.experiments.task``) measures the fit time and the errors.
``checkpoint`` (None, or the options ``{"checkpoint": PATH, "checkpoint_interval": SECONDS}``)
goes to the iterative fit inside the method (``with_checkpoint``; for a peer, the fast solver
of its lower bound), which saves its state there and resumes from it when the task runs
again (``fast_solver.checkpoint``).

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
kernels of Crammer-Singer SVMs); the peers PyLMNN, metric-learn and mlpack run through
``validation.peers`` and are scored by eq. 14 at their metric against our certified lower
bound; a peer that is not installed is skipped with the reason recorded.

NCA (ours, memory-bounded, and scikit-learn's as a peer: both from scikit-learn's default
start, at most 50 L-BFGS iterations), MLNG (C = 0.1, the value tuned on letters), LMCA and
kernel LMCA are local methods with no certified optimum: no cross-check can gate them, and
they report their own objective only. LMCA maps to ``min(d, LOW_RANK)`` dimensions (so it is
LMNN in ``L`` where ``d`` is small) from PCA; kernel LMCA is the LMCA paper's RBF kernel with
``d`` components and scikit-learn SVC's ``gamma = 1 / (d var X)`` (``1 / d``, the LMCA paper's
Ionosphere choice, makes the kernel of raw wine the identity), its training kernel kept in
memory up to ``KERNEL_MEMORY_MIB`` (letters' 14,000 rows: 1.5 GiB, a product ``K V`` 0.19 s
where the blockwise one takes 1.4 s) and blockwise beyond (Fashion-MNIST's 60,000: 28.8 GB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.neighbors import NeighborhoodComponentsAnalysis
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import fast_solver
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from validation import peers
from validation.experiments.knn import drop_self
from validation.experiments.protocol import MU, K


@dataclass(frozen=True)
class Fitted:
    """A fitted method: exactly one of ``transform`` (X (m, d) -> (m, r)), ``neighbours``
    ((X_train (n, d), y_train (n,), X_query (m, d) or None for leave-one-out, k) -> indices
    into X_train (m, k), nearest first; the training part may be larger than the rows fitted
    on) or ``predict`` (X (m, d) -> labels (m,)); and its statistics (JSON values)."""

    stats: dict
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    neighbours: Callable[[np.ndarray | None, int], np.ndarray] | None = None
    predict: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class Method:
    """A registered method (module docstring)."""

    fit: Callable[[np.ndarray, np.ndarray, dict, dict | None], Fitted]
    params: dict = field(default_factory=dict)
    gate: tuple[str, ...] = ()
    inputs: str = "reduced"
    description: str = ""


def transformer(make: Callable, gate: tuple[str, ...] = (), description: str = "", **params) -> Method:
    """A method from a scikit-learn transformer: ``make(**params).fit(X, y)``, then 3-NN
    after its ``transform``. A pipeline's statistics are its last step's."""
    def fit(X, y, params, checkpoint=None):
        estimator = with_checkpoint(make(**params), checkpoint).fit(X, y)
        return Fitted(estimator_stats(estimator), transform=estimator.transform)
    return Method(fit, params, gate, description=description)


def classifier(make: Callable, gate: tuple[str, ...] = (), description: str = "", **params) -> Method:
    """A method from a scikit-learn classifier: ``make(**params).fit(X, y).predict``."""
    def fit(X, y, params, checkpoint=None):
        estimator = with_checkpoint(make(**params), checkpoint).fit(X, y)
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


def local_stats(estimator) -> dict:
    """The statistics of a local method (no certificate): its objective, iterations and, for
    the LMNN-loss methods, active triplets."""
    estimator = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    result = getattr(estimator, "result_", None)
    stats = {"objective": getattr(estimator, "objective_", None),
             "n_iter": getattr(estimator, "n_iter_", None),
             "active_triplets": getattr(result, "n_active", None)}
    return {name: float(v) if name == "objective" else int(v)
            for name, v in stats.items() if v is not None}


def local_transformer(make: Callable, description: str = "", **params) -> Method:
    """A transformer without a certified optimum (``local_stats``). A ``max_components``
    parameter is passed as ``n_components = min(d, max_components)`` (``d`` when None)."""
    def fit(X, y, params, checkpoint=None):
        params = dict(params)
        if "max_components" in params:
            cap, d = params.pop("max_components"), np.shape(X)[1]
            params["n_components"] = d if cap is None else min(d, cap)
        estimator = with_checkpoint(make(**params), checkpoint).fit(X, y)
        return Fitted(local_stats(estimator), transform=estimator.transform)
    return Method(fit, params, description=description)


def with_checkpoint(estimator, checkpoint):
    """``estimator`` with the ``checkpoint`` options (module docstring; None leaves it as it is)
    given to the one estimator within it that takes them (its ``checkpoint`` parameter, or a
    pipeline step's or wrapped estimator's ``..__checkpoint``); unchanged when none does
    (closed-form methods)."""
    if checkpoint is None:
        return estimator
    names = [name for name in estimator.get_params() if name.split("__")[-1] == "checkpoint"]
    if len(names) > 1:
        raise ValueError(f"{type(estimator).__name__} holds {len(names)} checkpointed fits ({names}); "
                         "a task has one checkpoint.")
    if not names:
        return estimator
    prefix = names[0][: -len("checkpoint")]
    return estimator.set_params(**{prefix + option: value for option, value in checkpoint.items()})


def identity_fit(X: np.ndarray, y: np.ndarray, params: dict, checkpoint=None) -> Fitted:
    """No learning: 3-NN on the inputs as they are."""
    return Fitted({}, transform=np.asarray)


def mmc_fit(X: np.ndarray, y: np.ndarray, params: dict, checkpoint=None) -> Fitted:
    """MMC (Xing et al. 2002), full metric, on all label pairs (``solve_mmc_fast``)."""
    result = fast_solver.solve_mmc_fast(X, y, tol=params["tol"], **(checkpoint or {}))
    L = psd_factor(result.metric)
    return Fitted(certified_stats(result), transform=lambda Z: np.asarray(Z) @ L.T)


def multi_metric_fit(X: np.ndarray, y: np.ndarray, params: dict, checkpoint=None) -> Fitted:
    """Multi-metric LMNN (sec. 5.2), one metric per class; 3-NN under eq. 16's distances."""
    model = with_checkpoint(fast_solver.MultiMetricLMNN(**params), checkpoint).fit(X, y)
    return Fitted(certified_stats(model.result_), neighbours=eq16_neighbours(model.metrics_, model.classes_))


def eq16_neighbours(metrics: np.ndarray, classes: np.ndarray) -> Callable:
    """The ``neighbours`` of ``Fitted`` under eq. 16's distances ``D^(x, x_b) = (x - x_b)^T
    M_{c(b)} (x - x_b)``, the cluster ``c(b)`` of a training point its class: ``metrics``
    (C, d, d), one per class of ``classes`` (C,), sorted."""
    def neighbours(X_train, y_train, X_query, k):
        X_train = np.asarray(X_train, dtype=float)
        clusters = np.searchsorted(classes, y_train)
        if not np.array_equal(classes[np.minimum(clusters, len(classes) - 1)], y_train):
            raise ValueError(f"y_train has labels outside the fitted classes {classes.tolist()}; "
                             "classify by a training part of the classes fitted on.")
        if X_query is None:
            return drop_self(fast_solver.cluster_neighbors(X_train, metrics, clusters, X_train, k + 1))
        return fast_solver.cluster_neighbors(X_train, metrics, clusters, np.asarray(X_query, dtype=float), k)
    return neighbours


def peer_fit(fit_metric: Callable[[LMNNProblem], np.ndarray]) -> Callable[[np.ndarray, np.ndarray, dict], Fitted]:
    """A peer library's metric (``fit_metric(problem) -> M`` (d, d), e.g. ``validation.peers.PEERS``),
    scored by eq. 14 with our targets against the certified lower bound of
    ``fast_solver.solve`` on the same problem. ``peers.PeerMissing`` when it is not installed."""
    def fit(X, y, params, checkpoint=None):
        problem = LMNNProblem(X, y, k=params["k"], mu=params["mu"])
        M = fit_metric(problem)
        M = (M + M.T) / 2
        objective = problem.objective(M)
        bound = fast_solver.solve(problem, tol=params["tol"], **(checkpoint or {}))
        stats = {"objective": objective, "lower_bound": bound.lower,
                 "certified_gap": (objective - bound.lower) / objective,
                 "active_triplets": len(problem.active_triplets(M))}
        L = psd_factor(M)
        return Fitted(stats, transform=lambda Z: np.asarray(Z) @ L.T)
    return fit


def library(name: str) -> Callable[[LMNNProblem], np.ndarray]:
    """The metric of peer library ``name`` (``validation.peers.PEERS``, looked up at fit time)."""
    return lambda problem: peers.PEERS[name](problem)


def sklearn_nca_metric(problem: LMNNProblem) -> np.ndarray:
    """scikit-learn's NCA (its defaults but at most 50 iterations, ``random_state=0``) as a
    metric ``A^T A`` (d, d)."""
    A = NeighborhoodComponentsAnalysis(max_iter=50, random_state=0).fit(problem.X, problem.y).components_
    return A.T @ A


LOW_RANK = 15  # LMCA's dimensions where d is larger (Fashion-MNIST's smaller acceptance rank)
KERNEL_MEMORY_MIB = 2048  # kernel LMCA keeps its training kernel up to 16,384 rows
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
    "energy-matlab": classifier(
        lambda test_targets, test_margin, **p: fast_solver.EnergyClassifier(
            fast_solver.LMNN(**p), test_targets=test_targets, test_margin=test_margin),
        gate=("lmnn", "energy"), test_targets="metric", test_margin=0.0,
        description="energy classification by the authors' MATLAB rule (sec. 3.5: test targets "
                    "by the learned metric, no margin on the test point's perimeter)",
        **LMNN_PARAMS),
    "multipass": transformer(fast_solver.MultiPassLMNN, gate=("lmnn",), max_passes=3,
                             description="multi-pass LMNN (sec. 5.1), 3 passes", **LMNN_PARAMS),
    "multimetric": Method(multi_metric_fit, {**LMNN_PARAMS, "clusters": "classes"},
                          gate=("multi-metric",), description="multi-metric LMNN (sec. 5.2)"),
    "nca": local_transformer(fast_solver.NCA, max_iter=50, random_state=0,
                             description="3-NN after NCA (f, eq. 3; memory-bounded)"),
    "lmca": local_transformer(fast_solver.LMCA, max_components=LOW_RANK, k=K, mu=MU, random_state=0,
                              description=f"3-NN after LMCA, min(d, {LOW_RANK}) dimensions, from PCA"),
    "kernel-lmca": local_transformer(fast_solver.KernelLMCA, max_components=None, gamma="scale", k=K,
                                     mu=MU, random_state=0, kernel_memory=KERNEL_MEMORY_MIB,
                                     description="3-NN after kernel LMCA (RBF, gamma 1/(d var X), d components)"),
    "mlng": local_transformer(fast_solver.MLNG, k=K, C=0.1, batch_size=10, random_state=0,
                              description="3-NN after MLNG (C = 0.1, batches of 10)"),
    "svm": classifier(lambda **p: make_pipeline(StandardScaler(), SVC(**p)), C=10.0, kernel="rbf",
                      gamma="scale", description="multi-class SVM (SVC, RBF, standardised)"),
    "pylmnn": Method(peer_fit(library("pylmnn")), LMNN_PARAMS,
                     description="PyLMNN 1.6.4 (peer)"),
    "metric-learn": Method(peer_fit(library("metric-learn")), LMNN_PARAMS,
                           description="metric-learn 0.7.0 LMNN (peer)"),
    "mlpack": Method(peer_fit(library("mlpack")), LMNN_PARAMS,
                     description="mlpack 4.8 LMNN, L-BFGS (peer)"),
    "sklearn-nca": Method(peer_fit(sklearn_nca_metric), LMNN_PARAMS,
                          description="scikit-learn's NCA (peer), at most 50 iterations"),
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
