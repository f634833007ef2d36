"""Kernel LMCA: loss and gradient in Omega against brute force, the linear kernel against
LMCA, blockwise kernel products against dense ones, transform, bad input, degenerate data
and the estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs, make_circles
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import check_estimator

from fast_solver.low_rank import kernel_lmca
from fast_solver.low_rank.kernel_lmca import (
    KERNEL_MEMORY,
    KernelLMCA,
    TrainingKernel,
    initial_coefficients,
    kernel_lmca_loss,
    kernel_product,
    make_kernel,
    solve_kernel_lmca,
)
from fast_solver.low_rank.lmca import LMCA, lmca_loss
from lmnn_sdp.core.problem import LMNNProblem


def brute_force(problem: LMNNProblem, K: np.ndarray, Omega: np.ndarray, width: float) -> float:
    """``F_width`` of the embedding ``K Omega^T`` over all triplets (eq. 14 at ``width = 0``)."""
    embedded = LMNNProblem(K @ Omega.T, problem.y, targets=problem.targets, mu=problem.mu)
    h = embedded.triplet_margins(np.eye(len(Omega)), problem.all_triplets())
    if width == 0:
        push = np.maximum(h, 0.0)
    else:
        push = np.where(h >= width, h - width / 2, np.where(h > 0, h * h / (2 * width), 0.0))
    pull = embedded.target_distances(np.eye(len(Omega))).sum()
    return (1 - problem.mu) * pull + problem.mu * push.sum()


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(24, 3, centers=3, cluster_std=2.0, random_state=2)
    return LMNNProblem(X, y, k=2, mu=0.4)


@pytest.mark.parametrize("kernel", [make_kernel("rbf", 3, gamma=0.2),
                                    make_kernel("poly", 3, gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf", "poly"])
@pytest.mark.parametrize("width", [0.0, 1.0])
def test_loss_and_gradient_in_omega_equal_brute_force(blobs, kernel, width):
    problem = blobs
    K = kernel(problem.X, problem.X)
    rng = np.random.default_rng(4)
    Omega = rng.normal(size=(2, 24)) / np.sqrt(np.trace(K))
    embedded = LMNNProblem(K @ Omega.T, problem.y, targets=problem.targets)
    h = embedded.triplet_margins(np.eye(2), problem.all_triplets())
    assert np.min(np.abs(h)) > 1e-4 and np.min(np.abs(h - width)) > 1e-4  # away from the kinks
    value, gradient, Gamma = kernel_lmca_loss(problem, Omega, kernel, width)
    assert value == pytest.approx(brute_force(problem, K, Omega, width), rel=1e-12)
    np.testing.assert_allclose(gradient, Gamma @ K, rtol=1e-10, atol=1e-12)  # eq. 4: d/dL = Gamma Phi
    step, numeric = 1e-6, np.zeros_like(Omega)
    for index in np.ndindex(*Omega.shape):
        E = np.zeros_like(Omega)
        E[index] = step
        numeric[index] = (brute_force(problem, K, Omega + E, width)
                          - brute_force(problem, K, Omega - E, width)) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())


@pytest.mark.parametrize("width", [0.0, 1.0])
def test_linear_kernel_matches_lmca_at_l_equal_omega_x(blobs, width):
    problem = blobs
    linear = make_kernel("poly", 3, gamma=1.0, degree=1, coef0=0.0)
    Omega = np.random.default_rng(5).normal(size=(2, 24)) * 0.05
    value, gradient, _ = kernel_lmca_loss(problem, Omega, linear, width)
    L = Omega @ problem.X
    lmca_value, lmca_gradient = lmca_loss(problem, L, width)
    assert value == pytest.approx(lmca_value, rel=1e-12)
    np.testing.assert_allclose(gradient, lmca_gradient @ problem.X.T, rtol=1e-10, atol=1e-9)


def test_blockwise_products_equal_dense_ones(blobs, monkeypatch):
    problem = blobs
    monkeypatch.setattr(kernel_lmca, "BLOCK", 5)  # blocks that do not divide 24 or 7
    kernel = make_kernel("rbf", 3, gamma=0.3)
    A = np.random.default_rng(6).normal(size=(7, 3))
    V = np.random.default_rng(7).normal(size=(24, 2))
    np.testing.assert_allclose(kernel_product(kernel, A, problem.X, V),
                               rbf_kernel(A, problem.X, gamma=0.3) @ V, rtol=1e-12)
    kept, blockwise = TrainingKernel(kernel, problem.X), TrainingKernel(kernel, problem.X, memory=0)
    assert kept.matrix is not None and blockwise.matrix is None
    np.testing.assert_allclose(blockwise.dot(V), kept.dot(V), rtol=1e-12)
    poly = make_kernel("poly", 3, gamma=0.5, degree=3, coef0=2.0)
    np.testing.assert_allclose(poly(A, problem.X), polynomial_kernel(A, problem.X, 3, 0.5, 2.0))


@pytest.mark.parametrize("memory, dense_rows", [(0, 2000), (KERNEL_MEMORY, 0)], ids=["blockwise", "kept"])
def test_kernel_pca_start_is_the_same_dense_or_by_lanczos(blobs, monkeypatch, memory, dense_rows):
    problem = blobs
    kernel = make_kernel("rbf", 3, gamma=0.1)
    kept, other = TrainingKernel(kernel, problem.X), TrainingKernel(kernel, problem.X, memory=memory)
    Z_dense = kept.dot(initial_coefficients(problem, kept, 3, "kpca").T)
    monkeypatch.setattr(kernel_lmca, "DENSE_KPCA_ROWS", dense_rows)
    monkeypatch.setattr(np.linalg, "eigh", None)  # the Lanczos path must not decompose densely
    Z_lanczos = other.dot(initial_coefficients(problem, other, 3, "kpca").T)
    monkeypatch.undo()
    distances = lambda Z: np.sum((Z[:, None] - Z[None]) ** 2, axis=2)  # per-axis signs do not matter
    np.testing.assert_allclose(distances(Z_lanczos), distances(Z_dense), rtol=1e-6, atol=1e-9)
    Kc = kept.matrix - kept.matrix.mean(0) - kept.matrix.mean(1)[:, None] + kept.matrix.mean()
    top = np.linalg.eigvalsh(Kc)[::-1][:3]
    scale = np.sum((Z_dense - Z_dense.mean(0)) ** 2, axis=0)
    np.testing.assert_allclose(scale / scale[0], top / top[0], rtol=1e-8)  # kernel-PCA variances


def test_solve_is_the_same_with_kept_or_blockwise_kernel(blobs):
    problem = blobs
    kernel = make_kernel("rbf", 3, gamma=0.1)
    start = initial_coefficients(problem, TrainingKernel(kernel, problem.X), 2, "kpca")
    kept = solve_kernel_lmca(problem, kernel, 2, init=start, max_iter=15)
    blockwise = solve_kernel_lmca(problem, kernel, 2, init=start, max_iter=15, kernel_memory=0)
    assert kept.n_iter == blockwise.n_iter == 15
    assert blockwise.objective == pytest.approx(kept.objective, rel=1e-8)
    np.testing.assert_allclose(blockwise.components, kept.components, rtol=1e-6, atol=1e-8)


def test_transform_of_training_points_is_the_training_embedding():
    X, y = load_iris(return_X_y=True)
    model = KernelLMCA(n_components=2, max_iter=50)
    with pytest.warns(ConvergenceWarning):
        model.fit(X, y)
    np.testing.assert_allclose(model.transform(X), model.embedding_, rtol=1e-10, atol=1e-10)
    assert model.dual_coef_.shape == (2, 150) and model.embedding_.shape == (150, 2)
    assert model.objective_ == pytest.approx(brute_force(LMNNProblem(X, y, k=3), rbf_kernel(X, X, gamma=0.25),
                                                         model.dual_coef_, 0.0), rel=1e-10)
    assert list(model.get_feature_names_out()) == ["kernellmca0", "kernellmca1"]


def test_rbf_kernel_separates_circles_that_no_line_does():
    X, y = make_circles(160, noise=0.05, factor=0.4, random_state=0)
    train, test = np.arange(160) % 2 == 0, np.arange(160) % 2 == 1

    def error(model):
        knn = KNeighborsClassifier(3).fit(model.transform(X[train]), y[train])
        return np.mean(knn.predict(model.transform(X[test])) != y[test])

    kernel = KernelLMCA(n_components=1, gamma=2.0).fit(X[train], y[train])
    linear = LMCA(n_components=1).fit(X[train], y[train])
    assert error(kernel) < 0.05 < 0.2 < error(linear)


@pytest.mark.parametrize("call, match", [
    (lambda p: make_kernel("sigmoid", 3), "kernel must be one of"),
    (lambda p: make_kernel("rbf", 3, gamma=0.0), "gamma must be a finite number > 0"),
    (lambda p: make_kernel("poly", 3, degree=0), "degree must be an integer >= 1"),
    (lambda p: solve_kernel_lmca(p, make_kernel("rbf", 3), 0), "n_components must be a positive integer"),
    (lambda p: solve_kernel_lmca(p, make_kernel("rbf", 3), 2, init=np.ones((2, 3))), r"shape \(2, 24\)"),
    (lambda p: solve_kernel_lmca(p, make_kernel("rbf", 3), 2, init="pca"), "init must be one of"),
    (lambda p: kernel_lmca_loss(p, np.full((2, 24), np.nan), make_kernel("rbf", 3)), "Omega contains NaN"),
])
def test_bad_input_raises_clear_errors(blobs, call, match):
    with pytest.raises(ValueError, match=match):
        call(blobs)


def test_bad_estimator_input_and_degenerate_data():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="kernel"):
        KernelLMCA(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        KernelLMCA().fit(np.where(X == X[0, 0], np.nan, X), y)
    with pytest.raises(ValueError, match="two classes"):
        KernelLMCA().fit(X, np.zeros(150))
    with pytest.raises(ValueError, match="k="):
        KernelLMCA(k=3).fit(X[:53], y[:53])  # class 1 has 3 members
    twice = LMNNProblem(np.vstack([X[::3], X[::3]]), np.concatenate([y[::3], y[::3]]), k=3)
    result = solve_kernel_lmca(twice, make_kernel("rbf", 4), 2, max_iter=40)  # duplicate points
    K = rbf_kernel(twice.X, twice.X, gamma=0.25)
    assert result.objective == pytest.approx(brute_force(twice, K, result.components, 0.0), rel=1e-10)


# -- the estimator ---------------------------------------------------------------------
EXPECTED_FAILURES = {
    "check_fit2d_1feature": "a class of 3 points cannot supply k=3 target neighbours; "
                            "KernelLMCA raises a ValueError naming k (DESIGN.md)",
}


# scikit-learn's whole suite stays quick for LMNN (test_estimators.py::test_passes_sklearn_estimator_checks)
@pytest.mark.slow
def test_passes_sklearn_estimator_checks():
    results = check_estimator(KernelLMCA(max_iter=30), expected_failed_checks=EXPECTED_FAILURES,
                              on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
    assert sum(r["status"] == "passed" for r in results) >= 45


def test_warm_start_and_callback():
    X, y = load_iris(return_X_y=True)
    seen = []
    model = KernelLMCA(n_components=2, max_iter=20, warm_start=True,
                       callback=lambda Omega, it: seen.append((Omega.shape, it)))
    with pytest.warns(ConvergenceWarning):
        model.fit(X, y)
    assert seen == [((2, 150), it) for it in range(1, 21)]
    first = model.dual_coef_.copy()
    model.set_params(max_iter=1, callback=None)
    with pytest.warns(ConvergenceWarning):
        model.fit(X, y)
    # one iteration from the last coefficients: the fit started at them, given as init
    from_first = KernelLMCA(n_components=2, init=first, max_iter=1)
    with pytest.warns(ConvergenceWarning):
        from_first.fit(X, y)
    assert model.n_iter_ == 1
    np.testing.assert_array_equal(model.dual_coef_, from_first.dual_coef_)
    with pytest.raises(ValueError, match="warm_start continues from dual_coef_ over the 150 points"):
        model.fit(X[:100], y[:100])


def test_gamma_scale_follows_the_units_of_the_inputs():
    X, y = make_blobs(60, n_features=3, centers=3, random_state=2)
    small = KernelLMCA(n_components=2, gamma="scale", max_iter=20).fit(X, y)
    large = KernelLMCA(n_components=2, gamma="scale", max_iter=20).fit(1000 * X, y)
    assert small.kernel_.gamma == pytest.approx(1 / (3 * X.var()), rel=1e-12)
    assert large.kernel_.gamma == pytest.approx(small.kernel_.gamma / 1e6, rel=1e-12)
    np.testing.assert_allclose(large.transform(1000 * X[:5]), small.transform(X[:5]), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fit", [lambda X, y: KernelLMCA(max_iter=60).fit(X, y),
                                 lambda X, y: LMCA(max_iter=60).fit(X, y)], ids=["kernel-lmca", "lmca"])
def test_the_fit_has_the_same_bits_whatever_the_callers_blas_threads(fit):
    """The start (the kernel, its PCA, the scale) runs on one BLAS thread as the fit does, so a
    fit in a process of one BLAS thread (a Dask worker) equals one in a process of two."""
    from threadpoolctl import threadpool_limits

    X, y = load_iris(return_X_y=True)
    with threadpool_limits(1, user_api="blas"):
        one = fit(X[::2], y[::2])
    with threadpool_limits(2, user_api="blas"):
        two = fit(X[::2], y[::2])
    assert one.result_.objective == two.result_.objective
    np.testing.assert_array_equal(one.result_.components, two.result_.components)
