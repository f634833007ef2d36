"""One task: the plan, the errors it measures (by brute force), failures and skips recorded."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import numpy as np
import pytest

from lmnn_sdp.core.distances import distance_matrix
from validation import peers
from validation.experiments import methods, protocol, task
from validation.experiments.methods import Fitted, Method
from validation.experiments.protocol import load_split
from validation.experiments.task import evaluate, plan, run_task


def brute_force_errors(Z_train, y_train, Z_test, y_test, k=3):
    """Test and leave-one-out k-NN error from full distance matrices, ties shrinking k."""
    def vote(labels):
        for size in range(k, 0, -1):
            top = Counter(labels[:size]).most_common()
            if len(top) == 1 or top[0][1] > top[1][1]:
                return top[0][0]

    def error(D, truth):
        return np.mean([vote(list(y_train[np.argsort(row, kind="stable")[:k]])) != t
                        for row, t in zip(D, truth)])

    D_test = ((Z_test[:, None] - Z_train[None]) ** 2).sum(-1)
    D_train = ((Z_train[:, None] - Z_train[None]) ** 2).sum(-1)
    np.fill_diagonal(D_train, np.inf)
    return error(D_test, y_test), error(D_train, y_train)


def test_plan_covers_every_split_and_method_with_the_data_sets_tolerance():
    tasks = plan(["iris", "fashion-mnist"], ["euclidean", "lmnn"], splits=3)
    assert [t.name for t in tasks[:4]] == ["iris/0/euclidean", "iris/0/lmnn", "iris/1/euclidean",
                                           "iris/1/lmnn"]
    assert len(tasks) == 3 * 2 + 1 * 2  # Fashion-MNIST has one fixed split
    assert len({t.key for t in tasks}) == len(tasks)
    lmnn = {t.dataset: json.loads(t.params)["method"] for t in tasks if t.method == "lmnn"}
    assert lmnn == {"iris": {"k": 3, "mu": 0.5, "tol": 1e-6},
                    "fashion-mnist": {"k": 3, "mu": 0.5, "tol": 1e-4}}
    assert len(plan(["iris"], ["euclidean"])) == 100  # Table 1's splits by default


def test_euclidean_task_measures_errors_equal_to_brute_force():
    [euclidean] = plan(["wine"], ["euclidean"], splits=1)
    row = run_task(euclidean)
    assert row["status"] == "ok", row.get("error")
    split = load_split("wine", 0)
    test, loo = brute_force_errors(split.X_train, split.y_train, split.X_test, split.y_test)
    assert row["test_error"] == pytest.approx(test) and row["train_loo_error"] == pytest.approx(loo)
    assert 0.15 < row["test_error"] < 0.45  # raw wine, as Table 1's 25%
    assert row["versions"]["numpy"] == np.__version__ and row["fit_seconds"] >= 0


def test_lmnn_task_records_its_certificate_and_active_triplets():
    [lmnn] = plan(["iris"], ["lmnn"], splits=1, max_rows=60)
    row = run_task(lmnn)
    assert row["status"] == "ok", row.get("error")
    stats = row["stats"]
    assert stats["converged"] and stats["certified_gap"] <= 1e-6
    assert stats["lower_bound"] <= stats["objective"] and stats["active_triplets"] > 0


def test_a_failing_method_is_recorded_with_its_traceback(monkeypatch):
    def broken(X, y, params, checkpoint=None):
        raise ArithmeticError("the method broke")

    monkeypatch.setitem(methods.METHODS, "euclidean", Method(broken, inputs="raw"))
    [failing] = plan(["iris"], ["euclidean"], splits=1)
    row = run_task(failing)
    assert row["status"] == "failed" and "ArithmeticError: the method broke" in row["error"]
    assert "Traceback" in row["error"] and "test_error" not in row


def test_a_peer_not_installed_is_skipped_with_the_reason(monkeypatch):
    def missing(problem):
        raise peers.PeerMissing(f"PyLMNN is not installed: {peers.INSTALL_HINT}")

    monkeypatch.setitem(peers.PEERS, "pylmnn", missing)
    [pylmnn] = plan(["iris"], ["pylmnn"], splits=1, max_rows=60)
    row = run_task(pylmnn)
    assert row["status"] == "skipped" and "pip install" in row["error"]


def test_a_worker_with_other_code_refuses_the_task():
    [euclidean] = plan(["iris"], ["euclidean"], splits=1)
    row = run_task(task.Task(*euclidean.key[:4], "0" * 16))
    assert row["status"] == "failed" and "run workers on the same checkout" in row["error"]


def test_multi_metric_neighbours_are_those_of_eq16_distances():
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(24, 2)), rng.normal(size=(5, 2))
    labels = np.array(["a", "b", "c"])
    clusters = np.repeat([0, 1, 2], 8)
    A = rng.normal(size=(3, 2, 2))
    metrics = A @ A.transpose(0, 2, 1)
    neighbours = methods.eq16_neighbours(metrics, labels)
    D = distance_matrix(np.vstack([X, Q]), metrics, np.concatenate([clusters, [0] * 5]))
    np.testing.assert_array_equal(neighbours(X, labels[clusters], Q, 3), np.argsort(D[24:, :24], axis=1)[:, :3])
    D_train = D[:24, :24]
    np.fill_diagonal(D_train, np.inf)
    np.testing.assert_array_equal(neighbours(X, labels[clusters], None, 3), np.argsort(D_train, axis=1)[:, :3])
    with pytest.raises(ValueError, match="labels outside the fitted classes"):
        neighbours(X, np.where(clusters == 2, "z", labels[clusters]), Q, 3)


def test_multi_metric_task_runs_and_is_certified():
    [task_] = plan(["iris"], ["multimetric"], splits=1, max_rows=45)
    row = run_task(task_)
    assert row["status"] == "ok", row.get("error")
    assert row["stats"]["converged"] and 0 <= row["train_loo_error"] <= 0.2


def test_energy_matlab_is_the_authors_rule_on_the_lmnn_metric():
    # the method's predictions are eq. 15 with test targets by the metric and margin 0, at the
    # certified LMNN metric
    import fast_solver
    split = load_split("iris", 0, max_rows=45)
    params = methods.method_params("energy-matlab", 1e-6)
    fitted = methods.method("energy-matlab").fit(split.Z_train, split.y_train, params)
    lmnn = fast_solver.LMNN(k=3, mu=0.5, tol=1e-6).fit(split.Z_train, split.y_train)
    problem = lmnn.result_.certificate.problem
    rule = {"test_targets": "metric", "test_margin": 0.0}
    E = fast_solver.energies(problem.X, problem.y, problem.targets, 0.5, lmnn.metric_,
                             split.Z_test, **rule)
    np.testing.assert_array_equal(fitted.predict(split.Z_test), problem.classes[E.argmin(1)])
    assert params["test_targets"] == "metric" and params["test_margin"] == 0.0
    assert fitted.stats["converged"]


def test_a_classifier_has_no_leave_one_out_error():
    fitted = Fitted({}, predict=lambda X: np.zeros(len(X), dtype=int))
    test, loo = evaluate(fitted, np.zeros((4, 2)), np.array([0, 0, 1, 1]), np.zeros((3, 2)),
                         np.array([0, 1, 1]), 3)
    assert test == pytest.approx(2 / 3) and np.isnan(loo)


@pytest.mark.parametrize("name", ["nca", "lmca", "kernel-lmca", "mlng"])
def test_local_methods_run_and_report_their_own_objective(name):
    [task_] = plan(["iris"], [name], splits=1, max_rows=60)
    row = run_task(task_)
    assert row["status"] == "ok", row.get("error")
    assert 0 <= row["test_error"] <= 0.3 and 0 <= row["train_loo_error"] <= 0.3
    assert np.isfinite(row["stats"]["objective"]) and row["stats"]["n_iter"] >= 1
    assert "certified_gap" not in row["stats"]  # no certified optimum to compare with


def test_lmca_maps_to_at_most_low_rank_dimensions():
    params = {**methods.method_params("lmca", 1e-6), "max_iter": 5}
    for name in ("wine", "digits"):  # 13 and 64 features
        split = load_split(name, 0, 150)
        fitted = methods.method("lmca").fit(split.Z_train, split.y_train, params)
        d = split.Z_train.shape[1]
        assert fitted.transform(split.Z_train).shape == (len(split.Z_train), min(d, methods.LOW_RANK))


def test_sklearn_nca_peer_is_scored_by_eq14_against_the_certified_bound():
    [task_] = plan(["iris"], ["sklearn-nca"], splits=1, max_rows=60)
    row = run_task(task_)
    assert row["status"] == "ok", row.get("error")
    stats = row["stats"]
    assert stats["lower_bound"] <= stats["objective"]
    assert stats["certified_gap"] == pytest.approx((stats["objective"] - stats["lower_bound"]) / stats["objective"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lmnn", "mmc"])
def test_a_task_killed_mid_fit_resumes_from_its_checkpoint_and_removes_it(tmp_path, kill_during, name):
    [task_] = plan(["wine"], [name], splits=1)
    uninterrupted = run_task(task_)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    path = task.checkpoint_path(task_, folder)
    assert kill_during(run_task, task_, str(folder), 0.0, checkpoint=path, after=0.0)  # at its first save
    assert path.exists()
    row = run_task(task_, str(folder), 0.0)
    assert row["status"] == "ok", row.get("error")
    assert row["stats"]["resumed"] and "resumed" not in uninterrupted["stats"]
    assert row["test_error"] == uninterrupted["test_error"]
    assert row["train_loo_error"] == uninterrupted["train_loo_error"]
    assert row["stats"]["objective"] == pytest.approx(uninterrupted["stats"]["objective"], rel=1e-9)
    assert not path.exists()


def test_the_checkpoint_of_a_task_is_named_by_its_key(tmp_path):
    a, b = plan(["iris"], ["nca", "mlng"], splits=1)
    other_code = task.Task(*a.key[:4], "0" * 16)
    paths = {task.checkpoint_path(t, tmp_path) for t in (a, b, other_code)}
    assert len(paths) == 3 and all(p.parent == tmp_path and p.suffix == ".ckpt" for p in paths)
    assert task.checkpoint_path(a, tmp_path) == task.checkpoint_path(task.Task(*a.key), tmp_path)


def test_with_checkpoint_reaches_the_one_checkpointed_fit_inside_a_method():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fast_solver

    options = {"checkpoint": "f.ckpt", "checkpoint_interval": 5.0}
    nca = methods.with_checkpoint(fast_solver.NCA(), options)
    assert (nca.checkpoint, nca.checkpoint_interval) == ("f.ckpt", 5.0)
    piped = methods.with_checkpoint(make_pipeline(StandardScaler(), fast_solver.NCA()), options)
    assert piped[-1].checkpoint == "f.ckpt" and piped[-1].checkpoint_interval == 5.0
    scaler = methods.with_checkpoint(StandardScaler(), options)  # closed form: nothing to save
    assert "checkpoint" not in scaler.get_params()
    assert methods.with_checkpoint(fast_solver.NCA(), None).checkpoint is None


@pytest.mark.parametrize("name", ["nca", "multimetric"])
def test_a_subset_method_fits_on_the_subset_and_classifies_by_the_whole_training_part(monkeypatch, name):
    seen = []

    def record(X, y, params, checkpoint=None):  # the Euclidean metric, as a map or as eq. 16's neighbours
        seen.append(len(y))
        if name == "nca":
            return Fitted({}, transform=lambda Z: np.asarray(Z))
        classes, d = np.unique(y), X.shape[1]
        identities = np.broadcast_to(np.eye(d), (len(classes), d, d))
        return Fitted({}, neighbours=methods.eq16_neighbours(identities, classes))

    monkeypatch.setitem(methods.METHODS, name, Method(record))
    monkeypatch.setitem(protocol.DATASETS, "wine", dataclasses.replace(protocol.DATASETS["wine"], fit_rows=50))
    [subset_task] = plan(["wine"], [name], splits=1)
    assert json.loads(subset_task.params)["data"]["fit_rows"] == 50
    row = run_task(subset_task)
    split = load_split("wine", 0)
    test, loo = brute_force_errors(split.X_train, split.y_train, split.X_test, split.y_test)
    assert seen == [50] and row["test_error"] == pytest.approx(test) and row["train_loo_error"] == pytest.approx(loo)
