"""check_lmnn_solver with an estimator: a clone set to each case's k and mu (and clusters), by the
known estimators' parameter names or the user's ``params``; refused where it cannot be set."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import fast_solver
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.testing import check_lmnn_solver, corpus_cases
from lmnn_sdp.testing.estimator_params import estimator_settings

CASES = {case.id: case for case in corpus_cases() + corpus_cases("multi-metric-lmnn")}
# k = 1 and 3, mu = 0.2 and 0.8: a swapped mu (or 1 - mu) or a kept k misses both optima
MIXED = [CASES["zebra-n80-k1-mu0.2"], CASES["blobs-n50-d2-c2-k3-mu0.8"]]


def solved(X, y, k, mu) -> np.ndarray:
    return fast_solver.solve(LMNNProblem(X, y, k=k, mu=mu), tol=1e-7).metric


class RecordingLMNN(fast_solver.LMNN):
    """Our LMNN, recording the (k, mu) of each fit (a subclass is known by its base class)."""

    fits: list = []

    def fit(self, X, y):
        RecordingLMNN.fits.append((self.k, self.mu))
        return super().fit(X, y)


class MetricLearnLMNN(BaseEstimator):
    """A stand-in for metric-learn 0.7.0's LMNN: its names, its weights (regularization on the pull)."""

    def __init__(self, n_neighbors=3, regularization=0.5):
        self.n_neighbors = n_neighbors
        self.regularization = regularization

    def fit(self, X, y):
        self.metric = solved(X, y, self.n_neighbors, 1.0 - self.regularization)
        return self

    def get_mahalanobis_matrix(self):
        return self.metric


MetricLearnLMNN.__module__, MetricLearnLMNN.__name__ = "metric_learn.lmnn", "LMNN"


class LargeMarginNearestNeighbor(BaseEstimator):
    """A stand-in for PyLMNN's estimator: its names, ``components_`` (L with M = L^T L)."""

    def __init__(self, n_neighbors=3, weight_push_loss=0.5):
        self.n_neighbors = n_neighbors
        self.weight_push_loss = weight_push_loss

    def fit(self, X, y):
        w, V = np.linalg.eigh(solved(X, y, self.n_neighbors, self.weight_push_loss))
        self.components_ = (V * np.sqrt(np.maximum(w, 0))).T
        return self


LargeMarginNearestNeighbor.__module__ = "pylmnn.lmnn"


class FlatStartLMNN(LargeMarginNearestNeighbor):
    """As ``validation.peers`` subclasses PyLMNN's estimator: known by its base class."""


class PullPush(BaseEstimator):
    """An estimator of no known class: other names, and a weight on the pull term."""

    def __init__(self, neighbours=3, pull=0.5):
        self.neighbours = neighbours
        self.pull = pull

    def fit(self, X, y):
        self.metric_ = solved(X, y, self.neighbours, 1.0 - self.pull)
        return self


def test_our_estimator_is_cloned_to_each_cases_k_and_mu():
    RecordingLMNN.fits.clear()
    estimator = RecordingLMNN(k=7, mu=0.9, tol=1e-7)  # fitted as it is, it misses both optima by 10-30 %
    check = check_lmnn_solver(estimator, cases=MIXED)
    check.assert_passed()
    assert all(0 <= gap <= 1e-6 for gap in check.gaps.values())
    assert RecordingLMNN.fits == [(1, 0.2), (3, 0.8)]
    assert estimator.get_params()["k"] == 7 and not hasattr(estimator, "metric_")  # never fitted itself


@pytest.mark.parametrize("estimator, fits", [
    (MetricLearnLMNN(n_neighbors=7, regularization=0.9), [(1, 0.8), (3, 0.2)]),  # regularization = 1 - mu
    (LargeMarginNearestNeighbor(n_neighbors=7, weight_push_loss=0.1), [(1, 0.2), (3, 0.8)]),  # = mu
    (FlatStartLMNN(), [(1, 0.2), (3, 0.8)]),
], ids=["metric-learn", "pylmnn", "pylmnn-subclass"])
def test_metric_learn_and_pylmnn_are_known_by_module_and_name(estimator, fits):
    settings = estimator_settings(estimator, None, MIXED)
    np.testing.assert_allclose([list(setting.values()) for setting in settings], fits, rtol=1e-15)
    assert list(settings[0]) == list(estimator.get_params())
    check_lmnn_solver(estimator, cases=MIXED).assert_passed()


def test_an_unknown_estimator_is_refused_before_any_fit():
    with pytest.raises(ValueError, match=r"^fit: .*PullPush set a case's k and mu.* params=lambda case: .* its parameters: neighbours, "
                                         r"pull\), or fit as a callable fit\(X, y, k, mu\) -> M\.$") as info:
        check_lmnn_solver(PullPush(), cases=MIXED)
    assert "test_testing_estimators.PullPush" in str(info.value)


def test_params_maps_each_case_to_the_estimators_parameters():
    check = check_lmnn_solver(PullPush(), cases=MIXED, params=lambda case: {"neighbours": case.k, "pull": 1 - case.mu})
    check.assert_passed()
    swapped = check_lmnn_solver(PullPush(), cases=MIXED, params=lambda case: {"neighbours": case.k, "pull": case.mu})
    assert all(gap > 1e-3 for gap in swapped.gaps.values())
    with pytest.raises(ValueError, match="Invalid parameter 'n_neighbors'"):
        check_lmnn_solver(PullPush(), cases=MIXED, params=lambda case: {"n_neighbors": case.k})
    with pytest.raises(TypeError, match=r"params must be a callable \(case\) -> dict"):
        check_lmnn_solver(PullPush(), cases=MIXED, params={"k": "neighbours", "mu": "pull"})
    with pytest.raises(ValueError, match="params applies to an estimator.*drop params="):
        check_lmnn_solver(solved, cases=MIXED, params=lambda case: {})


def test_a_multi_metric_case_needs_an_estimator_that_takes_its_clusters():
    by_class, by_kmeans = CASES["mm-iris-n90-k3-mu0.5-c3"], CASES["mm-circles-n18-k2-mu0.5-c3"]
    check = check_lmnn_solver(fast_solver.MultiMetricLMNN(k=1, mu=0.9, tol=1e-7), cases=[by_class])
    check.assert_passed()
    assert check.gaps[by_class.id] <= 1e-6
    with pytest.raises(ValueError, match=r"mm-circles.* has clusters other than its classes.*leave it out of "
                                         r"cases=, or pass a callable fit\(X, y, k, mu, clusters\)"):
        check_lmnn_solver(fast_solver.MultiMetricLMNN(), cases=[by_class, by_kmeans])
    with pytest.raises(ValueError, match=r"is single-metric LMNN.*kind='multi-metric-lmnn'"):
        check_lmnn_solver(fast_solver.MultiMetricLMNN(), cases=MIXED)
    for estimator in (fast_solver.LMNN(), MetricLearnLMNN(), FlatStartLMNN()):
        with pytest.raises(ValueError, match=r"mm-iris.* is multi-metric LMNN .* learns one metric: check it "
                                             r"with kind='lmnn'"):
            check_lmnn_solver(estimator, cases=[by_class])


def test_pylmnn_is_refused_a_zero_mu():
    zero = dataclasses.replace(MIXED[0], mu=0.0)
    with pytest.raises(ValueError, match="mu = 0, which PyLMNN's weight_push_loss refuses"):
        check_lmnn_solver(FlatStartLMNN(), cases=[zero])


def test_a_case_with_other_targets_than_its_k_nearest_is_refused():
    case = CASES["zebra-n80-k3-mu0.5"]
    targets = case.targets.copy()
    same_class = np.flatnonzero(case.y == case.y[0])
    targets[0, 0] = next(i for i in same_class if i != 0 and i not in targets[0])
    other = dataclasses.replace(case, targets=targets)
    for fit in (solved, fast_solver.LMNN()):
        with pytest.raises(ValueError, match=r"^cases: case zebra-n80-k3-mu0.5 has targets other than the 3 "
                                             r"nearest same-class points"):
            check_lmnn_solver(fit, cases=[other])
    reordered = dataclasses.replace(case, targets=case.targets[:, ::-1])  # the same targets: accepted
    assert check_lmnn_solver(lambda X, y, k, mu: case.metric, cases=[reordered]).passed


def eq14_at_identity(case, hinge_power: int = 1) -> float:
    """Eq. 14 at M = I with the case's targets (the hinge squared with ``hinge_power=2``)."""
    problem = LMNNProblem(case.X, case.y, mu=case.mu, targets=case.targets)
    eye = np.eye(case.X.shape[1])
    hinges = problem.triplet_margins(eye, problem.active_triplets(eye))
    return (1 - problem.mu) * problem.target_distances(eye).sum() + problem.mu * np.sum(hinges ** hinge_power)


def test_metric_learn_weighs_its_objective_as_check_lmnn_solver_sets_it():
    """The real metric-learn 0.7.0, where installed: its own objective at the identity, of the clone
    check_lmnn_solver fits (mu = 0.8, so regularization = 0.2), is eq. 14; and a default fit scores
    as validation.peers' (the project's peers benchmark) does, on iris-n90-k1-mu0.2 (0.1 s a fit; a
    kept k = 3 or a swapped mu there would score 0.072 or 0.36, not 0.49)."""
    metric_learn = pytest.importorskip("metric_learn")
    peers = pytest.importorskip("validation.peers")

    class Probe(metric_learn.LMNN):
        objectives: list = []

        def _loss_grad(self, *args):
            loss_grad = super()._loss_grad(*args)
            Probe.objectives.append(loss_grad[1])
            return loss_grad

    case, fitted = MIXED[1], CASES["iris-n90-k1-mu0.2"]
    with peers.metric_learn_shim():
        check_lmnn_solver(Probe(init="identity", max_iter=2), cases=[case])
        gap = check_lmnn_solver(metric_learn.LMNN(random_state=0), cases=[fitted]).gaps[fitted.id]
    assert Probe.objectives[0] == pytest.approx(eq14_at_identity(case), rel=1e-12)
    assert gap == check_lmnn_solver(peers.metric_learn_metric, cases=[fitted]).gaps[fitted.id]


@pytest.mark.filterwarnings("ignore:scipy.optimize. The .disp. and .iprint.:DeprecationWarning")
def test_pylmnn_weighs_its_objective_as_check_lmnn_solver_sets_it():
    """The real PyLMNN 1.6.4, where installed: mu times its own loss at the identity, of the clone
    check_lmnn_solver fits (mu = 0.8), is eq. 14 with a squared hinge; and a default fit scores as
    validation.peers' does."""
    peers = pytest.importorskip("validation.peers")
    try:
        pylmnn = peers.import_pylmnn()  # validation.peers' shims: a subclass of PyLMNN's class
    except peers.PeerMissing as missing:
        pytest.skip(str(missing))

    class Probe(pylmnn):
        losses: list = []

        def _loss_grad_lbfgs(self, *args):
            loss_grad = super()._loss_grad_lbfgs(*args)
            Probe.losses.append(loss_grad[0])
            return loss_grad

    case = MIXED[1]
    check_lmnn_solver(Probe(init="identity", max_iter=1), cases=[case])
    assert case.mu * Probe.losses[0] == pytest.approx(eq14_at_identity(case, hinge_power=2), rel=1e-12)
    gap = check_lmnn_solver(pylmnn(random_state=0), cases=[case]).gaps[case.id]
    assert gap == check_lmnn_solver(peers.pylmnn_metric, cases=[case]).gaps[case.id]
