"""The protocol: 70/30 stratified splits by seed, subsets, fixed splits with PCA on training data."""

from __future__ import annotations

import numpy as np
import pytest

from validation import datasets
from validation.experiments import protocol
from validation.experiments.protocol import DataSpec, data_params, fit_subset, load_split, missing_data


def test_a_split_is_70_30_stratified_and_fixed_by_its_index():
    a, b, again = load_split("iris", 0), load_split("iris", 1), load_split("iris", 0)
    assert len(a.y_train) == 105 and len(a.y_test) == 45
    assert np.bincount(a.y_train).tolist() == [35, 35, 35]
    assert not np.array_equal(a.X_test, b.X_test)
    assert again is a  # cached on the worker
    X, y = datasets.load_bundled("iris")
    rows = {tuple(x) for x in X}
    assert {tuple(x) for x in a.X_train} | {tuple(x) for x in a.X_test} <= rows
    assert a.Z_train is a.X_train  # iris has no PCA


def test_split_arrays_are_read_only():
    split = load_split("wine", 0)
    with pytest.raises(ValueError, match="read-only"):
        split.X_train[0, 0] = 1.0


def test_wine_is_raw_as_in_table_1():
    split = load_split("wine", 0)
    assert split.X_train[:, 12].max() > 500  # proline, unscaled


def test_max_rows_draws_a_stratified_subset_first():
    split = load_split("digits", 3, max_rows=200)
    assert len(split.y_train) + len(split.y_test) == 200
    assert np.bincount(split.y_train, minlength=10).min() >= 13


def fake_fixed(n_train=40, n_test=20, d=6):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_train + n_test, d)) + 3.0
    y = np.arange(n_train + n_test) % 2
    return lambda: (X[:n_train], y[:n_train], X[n_train:], y[n_train:])


def test_a_fixed_split_is_split_zero_only_and_its_pca_is_fitted_on_training_rows(monkeypatch):
    spec = DataSpec("fake", "fake fixed split", fake_fixed(), n_splits=1, fixed_split=True, pca=3)
    monkeypatch.setitem(protocol.DATASETS, "fake", spec)
    protocol.load_split.cache_clear()
    protocol._load.cache_clear()
    split = load_split("fake", 0)
    assert split.Z_train.shape == (40, 3) and split.Z_test.shape == (20, 3)
    np.testing.assert_allclose(split.Z_train.mean(axis=0), 0.0, atol=1e-12)  # centred on training
    assert np.abs(split.Z_test.mean(axis=0)).max() > 1e-3
    small = load_split("fake", 0, max_rows=10)
    assert (len(small.y_train), len(small.y_test)) == (7, 3) and small.Z_train.shape == (7, 3)
    with pytest.raises(ValueError, match="0 \\(the fixed split\\)"):
        load_split("fake", 1)
    protocol.load_split.cache_clear()


def test_unknown_data_set_and_negative_split_raise():
    with pytest.raises(ValueError, match="unknown data set 'mnist'; choose from"):
        load_split("mnist", 0)
    with pytest.raises(ValueError, match="split must be >= 0"):
        load_split("iris", -1)


def test_missing_data_names_the_fetch_command(monkeypatch, tmp_path):
    monkeypatch.setenv("LMNN_SDP_DATA", str(tmp_path))
    monkeypatch.setattr(datasets, "SYSTEM_ROOT", tmp_path)
    assert missing_data("iris") is None
    assert missing_data("letters") == ("letters: its data is not fetched; run "
                                       "`python -m validation data fetch --only mlbench`")
    assert "--only fashion-mnist" in missing_data("fashion-mnist")


def test_data_params_record_the_protocol():
    assert data_params("iris") == {"max_rows": None, "test_fraction": 0.3, "stratified": True,
                                   "pca": None}
    assert data_params("fashion-mnist", 300)["pca"] == 164
    assert data_params("fashion-mnist")["test_fraction"] == "fixed"
    assert protocol.DATASETS["letters"].n_splits == 10 and protocol.DATASETS["iris"].n_splits == 100


def test_quadratic_methods_fit_on_fashion_mnists_stratified_subset_and_others_on_all():
    assert data_params("fashion-mnist", method="nca")["fit_rows"] == 10_000
    assert data_params("fashion-mnist", method="multimetric")["fit_rows"] == 10_000
    assert "fit_rows" not in data_params("fashion-mnist", method="lmnn")
    assert "fit_rows" not in data_params("letters", method="nca")  # letters: every method on all
    y = np.repeat(np.arange(4), [10, 20, 30, 40])
    X = np.arange(100.0)[:, None]
    X_fit, y_fit = fit_subset(X, y, 50)
    assert np.bincount(y_fit).tolist() == [5, 10, 15, 20] and np.all(np.diff(X_fit[:, 0]) > 0)
    assert fit_subset(X, y, None)[0] is X and fit_subset(X, y, 100)[0] is X
