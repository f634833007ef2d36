"""Real, local data sets: fetching Debian's data packages and loading them as arrays.

Two Debian packages carry the data and unpack without installing R:
``r-cran-mlbench`` (``.rda`` files under ``usr/lib/R/site-library/mlbench/data/``, read
with the pure-Python ``rdata`` package) and ``dataset-fashion-mnist`` (IDX files under
``usr/share/datasets/fashion-mnist/``). :func:`fetch_data` (``python -m validation data
fetch``) unpacks them into a cache folder; the loaders look there and at the system paths
where the packages install, and never download anything. scikit-learn's bundled sets come
from :func:`load_bundled`.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from tqdm import tqdm

FETCH_COMMAND = "python -m validation data fetch"
SYSTEM_ROOT = Path("/")


class DebianSource(NamedTuple):
    """A Debian package holding a data set: where it unpacks and a file proving it did."""

    package: str
    data_subdir: str
    marker: str


SOURCES = {
    "mlbench": DebianSource(
        "r-cran-mlbench", "usr/lib/R/site-library/mlbench/data", "LetterRecognition.rda"
    ),
    "fashion-mnist": DebianSource(
        "dataset-fashion-mnist", "usr/share/datasets/fashion-mnist", "train-images-idx3-ubyte.gz"
    ),
}


def default_cache_dir() -> Path:
    """The cache folder: ``$LMNN_SDP_DATA`` if set, else ``~/.cache/lmnn-sdp``."""
    return Path(os.environ.get("LMNN_SDP_DATA") or Path.home() / ".cache" / "lmnn-sdp")


def fetch_data(
    cache_dir: str | os.PathLike | None = None,
    names: Sequence[str] = ("mlbench", "fashion-mnist"),
    progress: bool = True,
) -> dict[str, Path]:
    """Download Debian's data packages and unpack them into the cache folder.

    Runs ``apt-get download PACKAGE`` in a temporary folder, then ``dpkg-deb -x
    PACKAGE*.deb CACHE``. A package already unpacked there is skipped.

    Parameters
    ----------
    cache_dir : path, optional
        Where to unpack; defaults to :func:`default_cache_dir`.
    names : sequence of {"mlbench", "fashion-mnist"}
        Which data sets to fetch.
    progress : bool
        Show a tqdm bar over the packages.

    Returns
    -------
    data_dirs : dict
        Data set name -> folder holding its files inside the cache.
    """
    unknown = [name for name in names if name not in SOURCES]
    if unknown:
        raise ValueError(f"names: unknown data sets {unknown}; choose from {sorted(SOURCES)}")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    data_dirs = {}
    for name in tqdm(names, desc="fetch data", unit="package", disable=not progress):
        source = SOURCES[name]
        data_dir = cache / source.data_subdir
        if not (data_dir / source.marker).is_file():
            _download_and_unpack(source.package, cache)
        data_dirs[name] = data_dir
    return data_dirs


def _download_and_unpack(package: str, cache: Path) -> None:
    """``apt-get download package`` into a temporary folder, then ``dpkg-deb -x`` into cache."""
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise RuntimeError(
                f"{tool} not found: fetching needs Debian's apt tools. On another system, "
                f"download {package}'s .deb from https://packages.debian.org, unpack it with "
                f"`ar x` and `tar -xf data.tar.*` into {cache}, or set LMNN_SDP_DATA to a "
                "folder where it is unpacked."
            )
    with tempfile.TemporaryDirectory(prefix="lmnn-sdp-fetch-") as download_dir:
        _run(["apt-get", "download", package], download_dir,
             hint=f"run `apt-get update` (as root) and check `apt-cache policy {package}`")
        debs = sorted(Path(download_dir).glob(f"{package}_*.deb"))
        if not debs:
            raise RuntimeError(f"apt-get download {package} succeeded but left no .deb file")
        _run(["dpkg-deb", "-x", str(debs[-1]), str(cache)], download_dir,
             hint=f"check that {cache} is writable and has free space")


def _run(command: list[str], cwd: str, hint: str) -> None:
    """Run a command; on failure raise a RuntimeError with its output and what to do."""
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(command)}` failed with exit code {completed.returncode}:\n"
            f"{completed.stderr.strip() or completed.stdout.strip()}\nTo fix: {hint}."
        )


def find_data_dir(name: str, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """The folder holding data set ``name`` (cache first, then system path), or None."""
    source = SOURCES[name]
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    for root in (cache, SYSTEM_ROOT):
        if (root / source.data_subdir / source.marker).is_file():
            return root / source.data_subdir
    return None


def _require_file(
    name: str, filenames: Sequence[str], cache_dir: str | os.PathLike | None
) -> Path:
    """Path of the first of ``filenames`` found for data set ``name``; a clear error if none."""
    source = SOURCES[name]
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    searched = [cache / source.data_subdir, SYSTEM_ROOT / source.data_subdir]
    for folder in searched:
        for filename in filenames:
            if (folder / filename).is_file():
                return folder / filename
    raise FileNotFoundError(
        f"{name} data ({' or '.join(filenames)}) not found in {' or '.join(map(str, searched))}. "
        f"Fetch it with `{FETCH_COMMAND} --only {name}` (it unpacks Debian's {source.package} "
        "into the cache folder; set LMNN_SDP_DATA to choose that folder)."
    )


def load_letters(cache_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UCI Letter Recognition, from mlbench's ``LetterRecognition.rda``.

    Rows in the order distributed (the UCI split is the first 16,000 for training, the last
    4,000 for testing, see :func:`letters_split`); the 16 integer features 0..15 in UCI order
    (x.box, y.box, width, high, onpix, x.bar, y.bar, x2bar, y2bar, xybar, x2ybr, xy2br,
    x.ege, xegvy, y.ege, yegvx), unscaled.

    Returns
    -------
    X : ndarray of shape (20000, 16), float64
    y : ndarray of shape (20000,), str
        Capital letters "A".."Z" (26 classes).
    """
    return load_mlbench("LetterRecognition", cache_dir=cache_dir)


def letters_split(
    cache_dir: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The UCI split of Letter Recognition: first 16,000 rows train, last 4,000 test.

    Returns
    -------
    X_train : ndarray of shape (16000, 16)
    y_train : ndarray of shape (16000,)
    X_test : ndarray of shape (4000, 16)
    y_test : ndarray of shape (4000,)
    """
    X, y = load_letters(cache_dir)
    return X[:16000], y[:16000], X[16000:], y[16000:]


MLBENCH_TARGETS = {"LetterRecognition": "lettr", "Satellite": "classes", "Glass": "Type"}


def load_mlbench(
    name: str, cache_dir: str | os.PathLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A classification data set from R's mlbench (``NAME.rda``) as arrays.

    The target is the column ``lettr`` (LetterRecognition), ``classes`` (Satellite),
    ``Type`` (Glass) or ``Class`` (the others); every other column becomes a feature, in the order stored,
    nothing dropped. Factor features whose levels are all numbers become those numbers
    (not R's 1-based codes); any other non-numeric feature raises a ValueError. Missing
    values stay NaN. In particular:

    - Ionosphere (351, 34): V1 is a 0/1 factor -> 0.0/1.0, V2 is a factor constant at 0 ->
      a constant column of 0.0 (kept; drop it yourself if it harms you), V3..V34 as stored.
    - Vowel (990, 10): V1 is the speaker number, a factor 0..14 (66 rows each: 11 vowels x 6)
      -> 0.0..14.0, a nominal value; use ``X[:, 1:]`` for the 9 numeric features V2..V10.
    - Satellite (6435, 36): 36 integer pixel values 0..255.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), str
    """
    path = _require_file("mlbench", [f"{name}.rda"], cache_dir)
    try:
        import rdata
    except ImportError as err:
        raise ImportError("reading the mlbench data sets needs rdata; install the extra with "
                          "pip install 'lmnn-sdp[experiments]'.") from err
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unknown encoding", category=UserWarning)
        frame = rdata.read_rda(path)[name]
    return frame_to_arrays(frame, MLBENCH_TARGETS.get(name, "Class"))


def frame_to_arrays(frame, target: str) -> tuple[np.ndarray, np.ndarray]:
    """Split a data frame (as ``rdata`` returns it) into a float feature matrix and labels.

    Parameters
    ----------
    frame : pandas.DataFrame
        Numeric and categorical (R factor) columns.
    target : str
        Name of the label column.

    Returns
    -------
    X : ndarray of shape (n_rows, n_columns - 1), float64
        The other columns in order; a categorical column whose categories are all numbers
        holds those numbers.
    y : ndarray of shape (n_rows,), str
    """
    if target not in frame.columns:
        raise ValueError(f"target: no column {target!r}; columns are {list(frame.columns)}")
    features = [_numeric_column(frame[column], column)
                for column in frame.columns if column != target]
    X = np.column_stack(features) if features else np.empty((len(frame), 0))
    y = np.asarray(frame[target].astype(str), dtype=str)
    return X, y


def _numeric_column(column, name: str) -> np.ndarray:
    """A column as float64: numbers as they are, factors with numeric levels as those numbers."""
    if hasattr(column, "cat"):
        try:
            level_values = np.asarray(column.cat.categories, dtype=float)
        except ValueError:
            raise ValueError(
                f"column {name!r} is a factor with non-numeric levels "
                f"{list(column.cat.categories)[:5]}; it has no natural numeric encoding"
            ) from None
        codes = np.asarray(column.cat.codes)
        return np.where(codes >= 0, level_values[codes], np.nan)
    values = np.asarray(column)
    if not np.issubdtype(values.dtype, np.number):
        raise ValueError(f"column {name!r} has non-numeric dtype {values.dtype}")
    return values.astype(float)


def load_fashion_mnist(
    cache_dir: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fashion-MNIST from Debian's ``dataset-fashion-mnist`` IDX files, pixels scaled to [0, 1].

    Returns
    -------
    X_train : ndarray of shape (60000, 784), float64
    y_train : ndarray of shape (60000,), int64
        Classes 0..9 (T-shirt/top, trouser, pullover, dress, coat, sandal, shirt, sneaker,
        bag, ankle boot).
    X_test : ndarray of shape (10000, 784), float64
    y_test : ndarray of shape (10000,), int64
    """
    arrays = []
    for split in ("train", "t10k"):
        for kind, ndim in (("images", 3), ("labels", 1)):
            stem = f"{split}-{kind}-idx{ndim}-ubyte"
            path = _require_file("fashion-mnist", [stem + ".gz", stem], cache_dir)
            arrays.append(read_idx(path))
    train_images, train_labels, test_images, test_labels = arrays
    X_train = train_images.reshape(len(train_images), -1) / 255.0
    X_test = test_images.reshape(len(test_images), -1) / 255.0
    return X_train, train_labels.astype(np.int64), X_test, test_labels.astype(np.int64)


IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzip-compressed or not.

    Layout: two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), the number of dimensions, each dimension as a big-endian
    uint32, then the values big-endian in C order.

    Returns
    -------
    array : ndarray of shape given by the header, native byte order
    """
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (magic bytes {raw[:4].hex()})")
    dtype, ndim = np.dtype(IDX_DTYPES[raw[2]]), raw[3]
    shape = tuple(int(n) for n in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - offset != expected:
        raise ValueError(f"{path}: header says {shape} ({expected} bytes of data), "
                         f"file holds {len(raw) - offset}")
    values = np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


BUNDLED = {
    "iris": ("load_iris", False),
    "wine": ("load_wine", True),
    "breast_cancer": ("load_breast_cancer", True),
    "digits": ("load_digits", False),
}


def load_bundled(
    name: str, pca: int | None = None, standardise: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One of scikit-learn's bundled data sets, ready for metric learning.

    ====================  ===========  ============================================
    name                  shape of X   preprocessing
    ====================  ===========  ============================================
    ``"iris"``            (150, 4)     none
    ``"wine"``            (178, 13)    standardised: zero mean, unit variance
    ``"breast_cancer"``   (569, 30)    standardised: zero mean, unit variance
    ``"digits"``          (1797, 64)   none (pixel values 0..16)
    ====================  ===========  ============================================

    Parameters
    ----------
    name : str
        One of the names above.
    pca : int, optional
        Project onto this many principal components (exact SVD, after standardising),
        e.g. ``load_bundled("digits", pca=10)`` gives X of shape (1797, 10).
    standardise : bool, optional
        Override the table: True standardises any of them, False keeps the features as
        distributed (the paper's Table 1 used raw wine: 25% Euclidean 3-NN error).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features or pca), float64
    y : ndarray of shape (n_samples,), int64
    """
    import sklearn.datasets
    from sklearn.decomposition import PCA

    if name not in BUNDLED:
        raise ValueError(f"name: unknown bundled data set {name!r}; choose from {sorted(BUNDLED)}")
    loader_name, default_standardise = BUNDLED[name]
    standardise = default_standardise if standardise is None else standardise
    X, y = getattr(sklearn.datasets, loader_name)(return_X_y=True)
    X = X.astype(np.float64)
    if standardise:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    if pca is not None:
        if not 1 <= pca <= X.shape[1]:
            raise ValueError(f"pca: must be between 1 and {X.shape[1]} for {name}, got {pca}")
        X = PCA(n_components=pca, svd_solver="full").fit_transform(X)
    return X, y.astype(np.int64)
