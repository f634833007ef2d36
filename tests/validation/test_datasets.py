from __future__ import annotations

import gzip
import struct

import numpy as np
import pandas as pd
import pytest

from validation import cli, datasets


@pytest.fixture
def no_system_data(tmp_path, monkeypatch):
    """Point the system paths at an empty folder so only the cache under test counts."""
    empty_root = tmp_path / "system-root"
    empty_root.mkdir()
    monkeypatch.setattr(datasets, "SYSTEM_ROOT", empty_root)
    return empty_root


def write_idx(path, values, type_code, compress=False):
    """Write ``values`` as an IDX file: magic, big-endian dims, big-endian data."""
    header = bytes([0, 0, type_code, values.ndim]) + struct.pack(f">{values.ndim}I", *values.shape)
    dtype = {0x08: ">u1", 0x0C: ">i4", 0x0D: ">f4"}[type_code]
    payload = header + values.astype(dtype).tobytes()
    path.write_bytes(gzip.compress(payload) if compress else payload)


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_recovers_uint8_images_plain_or_gzipped(tmp_path, compress):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4) * 10
    path = tmp_path / "images.idx"
    write_idx(path, images, 0x08, compress)
    array = datasets.read_idx(path)
    assert array.shape == (2, 3, 4)
    assert array.dtype == np.uint8
    np.testing.assert_array_equal(array, images)
    assert array[1, 2, 3] == 230


def test_read_idx_reads_big_endian_int32_and_float32(tmp_path):
    integers = np.array([-2, 1, 65536, 2**31 - 1])
    write_idx(tmp_path / "int.idx", integers, 0x0C)
    np.testing.assert_array_equal(datasets.read_idx(tmp_path / "int.idx"), integers)
    floats = np.array([[0.5, -1.25], [3.0, 1e-3]])
    write_idx(tmp_path / "float.idx", floats, 0x0D)
    read = datasets.read_idx(tmp_path / "float.idx")
    assert read.dtype == np.float32 and read.dtype.byteorder in "=|<"
    np.testing.assert_allclose(read, floats, rtol=1e-7)


def test_read_idx_rejects_bad_magic_and_truncated_data(tmp_path):
    (tmp_path / "text.idx").write_bytes(b"hello world")
    with pytest.raises(ValueError, match="not an IDX file"):
        datasets.read_idx(tmp_path / "text.idx")
    write_idx(tmp_path / "short.idx", np.zeros((2, 5), dtype=np.uint8), 0x08)
    (tmp_path / "short.idx").write_bytes((tmp_path / "short.idx").read_bytes()[:-1])
    with pytest.raises(ValueError, match=r"\(2, 5\) \(10 bytes.*holds 9"):
        datasets.read_idx(tmp_path / "short.idx")


def test_load_fashion_mnist_scales_pixels_and_flattens_images(tmp_path, no_system_data):
    folder = tmp_path / "cache" / datasets.SOURCES["fashion-mnist"].data_subdir
    folder.mkdir(parents=True)
    train_images = np.zeros((3, 28, 28), dtype=np.uint8)
    train_images[1, 0, 1] = 255
    train_images[2, 27, 27] = 51
    write_idx(folder / "train-images-idx3-ubyte.gz", train_images, 0x08, compress=True)
    write_idx(folder / "train-labels-idx1-ubyte.gz", np.array([9, 0, 4]), 0x08, compress=True)
    write_idx(folder / "t10k-images-idx3-ubyte", np.full((2, 28, 28), 255), 0x08)
    write_idx(folder / "t10k-labels-idx1-ubyte", np.array([1, 2]), 0x08)
    X_train, y_train, X_test, y_test = datasets.load_fashion_mnist(tmp_path / "cache")
    assert X_train.shape == (3, 784) and X_test.shape == (2, 784)
    assert X_train.dtype == np.float64
    assert X_train[1, 1] == 1.0 and X_train[2, 783] == pytest.approx(0.2)
    assert X_train.sum() == pytest.approx(1.2)
    assert np.all(X_test == 1.0)
    np.testing.assert_array_equal(y_train, [9, 0, 4])
    np.testing.assert_array_equal(y_test, [1, 2])
    assert y_train.dtype == np.int64


def test_frame_to_arrays_maps_numeric_factor_levels_to_their_values():
    frame = pd.DataFrame({
        "lettr": pd.Categorical(["T", "I", "D"]),
        # categories deliberately out of order: codes would be 0, 1 for "5", "0"
        "flag": pd.Categorical(["0", "5", None], categories=["5", "0"]),
        "width": [3.0, 3.0, 6.0],
        "count": np.array([1, 2, 6], dtype=np.int32),
    })
    X, y = datasets.frame_to_arrays(frame, target="lettr")
    assert X.shape == (3, 3) and X.dtype == np.float64
    np.testing.assert_array_equal(X[:2], [[0.0, 3.0, 1.0], [5.0, 3.0, 2.0]])
    assert np.isnan(X[2, 0]) and X[2, 1] == 6.0 and X[2, 2] == 6.0
    np.testing.assert_array_equal(y, ["T", "I", "D"])


def test_frame_to_arrays_keeps_constant_columns_and_rejects_word_factors():
    frame = pd.DataFrame({
        "V1": pd.Categorical(["0", "0"]),
        "V2": [0.25, -0.5],
        "Class": pd.Categorical(["good", "bad"]),
    })
    X, y = datasets.frame_to_arrays(frame, target="Class")
    np.testing.assert_array_equal(X, [[0.0, 0.25], [0.0, -0.5]])
    np.testing.assert_array_equal(y, ["good", "bad"])
    with pytest.raises(ValueError, match="'Class' is a factor with non-numeric levels"):
        datasets.frame_to_arrays(frame, target="V2")
    with pytest.raises(ValueError, match="target: no column 'label'"):
        datasets.frame_to_arrays(frame, target="label")


@pytest.mark.parametrize("loader", [datasets.load_letters, datasets.load_fashion_mnist,
                                    lambda cache_dir: datasets.load_mlbench("Vowel", cache_dir)])
def test_missing_data_error_names_the_fetch_command(tmp_path, no_system_data, loader):
    with pytest.raises(FileNotFoundError, match="python -m validation data fetch") as error:
        loader(cache_dir=tmp_path / "empty")
    assert str(tmp_path / "empty") in str(error.value)


def test_cache_dir_defaults_to_the_environment_variable(tmp_path, no_system_data, monkeypatch):
    monkeypatch.setenv("LMNN_SDP_DATA", str(tmp_path / "from-env"))
    assert datasets.default_cache_dir() == tmp_path / "from-env"
    with pytest.raises(FileNotFoundError, match=r"from-env.*data fetch --only mlbench"):
        datasets.load_letters()
    monkeypatch.delenv("LMNN_SDP_DATA")
    assert datasets.default_cache_dir().parts[-2:] == (".cache", "lmnn-sdp")


def test_find_data_dir_prefers_the_cache_over_the_system_path(tmp_path, no_system_data):
    source = datasets.SOURCES["mlbench"]
    for root in (tmp_path / "cache", no_system_data):
        (root / source.data_subdir).mkdir(parents=True)
        (root / source.data_subdir / source.marker).write_bytes(b"")
    assert datasets.find_data_dir("mlbench", tmp_path / "cache") == (
        tmp_path / "cache" / source.data_subdir)
    assert datasets.find_data_dir("mlbench", tmp_path / "other") == (
        no_system_data / source.data_subdir)
    assert datasets.find_data_dir("fashion-mnist", tmp_path / "cache") is None


def test_letters_split_is_first_16000_then_last_4000(monkeypatch):
    X = np.arange(20000 * 16, dtype=float).reshape(20000, 16)
    y = np.arange(20000)
    monkeypatch.setattr(datasets, "load_letters", lambda cache_dir=None: (X, y))
    X_train, y_train, X_test, y_test = datasets.letters_split()
    assert X_train.shape == (16000, 16) and X_test.shape == (4000, 16)
    assert y_train[-1] == 15999 and y_test[0] == 16000 and y_test[-1] == 19999
    assert X_test[0, 0] == 16000 * 16


def test_fetch_skips_packages_already_unpacked(tmp_path, monkeypatch):
    source = datasets.SOURCES["mlbench"]
    (tmp_path / source.data_subdir).mkdir(parents=True)
    (tmp_path / source.data_subdir / source.marker).write_bytes(b"")

    def no_download(*args, **kwargs):
        raise AssertionError("fetch_data ran a command although the data were unpacked")

    monkeypatch.setattr(datasets.subprocess, "run", no_download)
    data_dirs = datasets.fetch_data(tmp_path, names=["mlbench"], progress=False)
    assert data_dirs == {"mlbench": tmp_path / source.data_subdir}


def test_fetch_without_apt_tools_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.shutil, "which", lambda tool: None)
    with pytest.raises(RuntimeError, match="apt-get not found.*r-cran-mlbench.*LMNN_SDP_DATA"):
        datasets.fetch_data(tmp_path, names=["mlbench"], progress=False)
    with pytest.raises(ValueError, match="names: unknown data sets \\['mnist'\\]"):
        datasets.fetch_data(tmp_path, names=["mnist"], progress=False)


def test_fetch_reports_a_failing_apt_get_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.shutil, "which", lambda tool: f"/usr/bin/{tool}")

    def failing_run(command, **kwargs):
        return datasets.subprocess.CompletedProcess(command, 100, "", "E: Unable to locate")

    monkeypatch.setattr(datasets.subprocess, "run", failing_run)
    expected = r"exit code 100:\nE: Unable to locate\n.*apt-get update"
    with pytest.raises(RuntimeError, match=expected):
        datasets.fetch_data(tmp_path, names=["fashion-mnist"], progress=False)


def test_list_command_shows_missing_and_found_data(tmp_path, no_system_data, capsys):
    source = datasets.SOURCES["fashion-mnist"]
    (tmp_path / source.data_subdir).mkdir(parents=True)
    (tmp_path / source.data_subdir / source.marker).write_bytes(b"")
    assert cli.main(["data", "list", "--cache", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("mlbench") and "data fetch --only mlbench" in lines[0]
    assert lines[1].endswith(str(tmp_path / source.data_subdir))


@pytest.mark.parametrize("name, shape, classes", [
    ("iris", (150, 4), [50, 50, 50]),
    ("wine", (178, 13), [59, 71, 48]),
    ("breast_cancer", (569, 30), [212, 357]),
    ("digits", (1797, 64), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]),
])
def test_bundled_sets_have_documented_shapes_and_class_counts(name, shape, classes):
    X, y = datasets.load_bundled(name)
    assert X.shape == shape and X.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(y), classes)


@pytest.mark.parametrize("name", ["wine", "breast_cancer"])
def test_bundled_wine_and_breast_cancer_are_standardised(name):
    X, _ = datasets.load_bundled(name)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-12)


def test_bundled_iris_and_digits_are_left_as_distributed():
    X_iris, _ = datasets.load_bundled("iris")
    np.testing.assert_array_equal(X_iris[0], [5.1, 3.5, 1.4, 0.2])
    X_digits, _ = datasets.load_bundled("digits")
    assert X_digits.min() == 0.0 and X_digits.max() == 16.0


def test_bundled_standardise_overrides_the_table():
    from sklearn.datasets import load_wine

    X, y = datasets.load_bundled("wine", standardise=False)
    np.testing.assert_array_equal(X, load_wine().data)
    X_iris, _ = datasets.load_bundled("iris", standardise=True)
    np.testing.assert_allclose(X_iris.std(axis=0), 1.0, rtol=1e-12)


def test_glass_labels_come_from_its_type_column():
    frame = pd.DataFrame({"RI": [1.52, 1.51], "Na": [13.6, 13.9],
                          "Type": pd.Categorical(["1", "7"])})
    X, y = datasets.frame_to_arrays(frame, datasets.MLBENCH_TARGETS["Glass"])
    assert X.shape == (2, 2) and y.tolist() == ["1", "7"]


def test_bundled_digits_pca_keeps_the_leading_components():
    X_full, _ = datasets.load_bundled("digits")
    X, y = datasets.load_bundled("digits", pca=10)
    assert X.shape == (1797, 10) and y.shape == (1797,)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    variances = X.var(axis=0)
    assert np.all(np.diff(variances) <= 0)
    centred = X_full - X_full.mean(axis=0)
    top_eigenvalues = np.linalg.eigvalsh(centred.T @ centred / len(X_full))[::-1][:10]
    np.testing.assert_allclose(variances, top_eigenvalues, rtol=1e-8)
    with pytest.raises(ValueError, match="pca: must be between 1 and 64"):
        datasets.load_bundled("digits", pca=65)
    with pytest.raises(ValueError, match="unknown bundled data set 'mnist'"):
        datasets.load_bundled("mnist")
