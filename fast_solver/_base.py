"""What the fast solvers' scikit-learn estimators share: metric-learn's Mahalanobis view of a
linear map, the input checks of ``fit`` and ``transform``, the constraints of the checkpoint
parameters, and the progress table of ``verbose``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from lmnn_sdp.core.mahalanobis import MahalanobisMixin, fitted_inputs, reject_complex

__all__ = ["CHECKPOINT_PARAMETERS", "LinearMetricTransformer", "MahalanobisMixin", "ProgressTable", "fitted_inputs", "labelled_inputs",
           "reject_complex"]

# ``_parameter_constraints`` of every estimator that takes ``checkpoint`` (a path) and
# ``checkpoint_interval`` (seconds >= 0): ``fast_solver.checkpoint``
CHECKPOINT_PARAMETERS = {"checkpoint": [str, os.PathLike, None],
                         "checkpoint_interval": [Interval(Real, 0, None, closed="left")]}


class LinearMetricTransformer(MahalanobisMixin, TransformerMixin):
    """The transformer side of the estimators that learn one linear map ``L``.

    ``transform(X) = X @ components_.T`` and metric-learn's ``get_mahalanobis_matrix``,
    ``pair_distance``, ``pair_score`` and ``get_metric``, all from
    ``lmnn_sdp.core.mahalanobis.MahalanobisMixin``; scikit-learn's ``fit_transform``; ``fit``
    needs ``y``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def labelled_inputs(estimator: BaseEstimator, X, y) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (n_samples, n_features) and class labels ``y`` (n_samples,) of ``fit(X, y)``:
    scikit-learn's validation (sets ``n_features_in_``), complex input refused."""
    reject_complex(X)
    X, y = validate_data(estimator, X, y, ensure_min_samples=2)
    check_classification_targets(y)
    return X, y


class ProgressTable:
    """The table a ``verbose`` fit prints to stdout, one row per stage, pass or epoch, as
    scikit-learn's NCA prints one per iteration.

    Parameters
    ----------
    name : str
        The estimator's name, the prefix of every line.
    columns : sequence of (title, width, format)
        One per column: its title, its width in characters, a format spec without the width
        (``"d"``, ``".2e"``, ``""``).

    Examples
    --------
    >>> table = ProgressTable("LMNN", [("Stage", 6, "d"), ("Gap", 9, ".2e")])
    [LMNN]
    [LMNN]  Stage       Gap
    [LMNN] ----------------
    >>> table.row(0, 0.5)
    [LMNN]      0  5.00e-01
    """

    def __init__(self, name: str, columns: Sequence[tuple[str, int, str]]):
        self.name, self.columns = name, tuple(columns)
        header = " ".join(f"{title:>{width}}" for title, width, _ in self.columns)
        print(f"[{name}]\n[{name}] {header}\n[{name}] {'-' * len(header)}", file=sys.stdout)

    def row(self, *values) -> None:
        """Print one row, ``values`` in the order of ``columns``."""
        cells = " ".join(f"{value:>{width}{spec}}" for value, (_, width, spec) in zip(values, self.columns))
        print(f"[{self.name}] {cells}", file=sys.stdout)
