"""PNG plots of the experiments (matplotlib's object API and Agg canvas; no pyplot state).

* ``table_bars``: Table 1 / Fig. 3 style bars, test error per method and data set (mean ±
  std over splits) with Table 1's numbers as black ticks.
* ``metric_ellipses``: Fig. 8 style, one metric per class on 2-D inputs, each drawn as
  the effect on a unit circle of its linear transformation (the symmetric square root
  ``M^{1/2}``, so the ellipse lives in input coordinates: its long axis is the direction
  the metric stretches most), centred at the class mean, one common scale for all.
* ``convergence``: the fast solver's bounds per continuation stage against time, the
  certified lower bound rising to the objective, and the relative gap.
* ``neighbour_rows``: Fig. 4/5 style rows of images, a test image and its k nearest
  training images before (Euclidean) and after learning, framed green when of the test
  image's class and red otherwise; ``pick_rows`` chooses test images the metric fixed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from validation.experiments.knn import knn_predict

DPI = 110


def table_bars(lines: list[dict], path: str | Path, per_row: int = 4) -> Path:
    """One panel per data set of ``report.summarise`` lines (``per_row`` panels a row): bars
    of ``test_error_mean`` with ``test_error_std`` whiskers (cut at 0), ``paper_test_error``
    as black ticks."""
    datasets = list(dict.fromkeys(line["dataset"] for line in lines)) or ["(no results)"]
    columns = min(per_row, len(datasets))
    rows = -(-len(datasets) // columns)
    figure = Figure(figsize=(3.6 * columns, 3.4 * rows), dpi=DPI, layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, dataset in zip(axes, datasets):
        own = [line for line in lines if line["dataset"] == dataset]
        x = np.arange(len(own))
        means = np.array([line["test_error_mean"] for line in own], dtype=float)
        stds = np.nan_to_num(np.array([line["test_error_std"] for line in own], dtype=float))
        ax.bar(x, means, yerr=[np.minimum(stds, np.nan_to_num(means)), stds], color="tab:blue",
               alpha=0.8, capsize=2)
        paper = [(i, line["paper_test_error"]) for i, line in enumerate(own)
                 if line["paper_test_error"] is not None]
        if paper:
            ax.scatter(*zip(*paper), marker="_", s=200, color="black", label="Table 1", zorder=3)
            ax.legend(fontsize=7)
        ax.set_xticks(x, [line["method"] for line in own], rotation=60, ha="right", fontsize=7)
        ax.set_title(dataset, fontsize=9)
        ax.set_ylabel("test error (%)", fontsize=8)
    for ax in axes[len(datasets):]:
        ax.set_visible(False)
    return _save(figure, path)


def metric_ellipses(X: np.ndarray, y: np.ndarray, metrics: np.ndarray, path: str | Path,
                    title: str = "") -> Path:
    """Points ``X`` (n, 2) coloured by class ``y`` (n,), and for class ``c`` (in the order of
    ``np.unique(y)``) the image of the unit circle under ``metrics[c]^{1/2}`` (C, 2, 2) at the
    class mean (module docstring), scaled by one factor so the longest axis is a quarter
    of the data's range."""
    X, classes = np.asarray(X, dtype=float), np.unique(y)
    if X.ndim != 2 or X.shape[1] != 2 or np.shape(metrics) != (len(classes), 2, 2):
        raise ValueError(f"X must be (n, 2) and metrics (n_classes, 2, 2) = ({len(classes)}, 2, 2), "
                         f"got {X.shape} and {np.shape(metrics)}")
    circle = np.stack([np.cos(np.linspace(0, 2 * np.pi, 200)), np.sin(np.linspace(0, 2 * np.pi, 200))])
    shapes = [_sqrt_psd(M) @ circle for M in metrics]
    scale = 0.25 * np.ptp(X, axis=0).max() / max(max(np.abs(s).max() for s in shapes), 1e-300)
    figure = Figure(figsize=(5, 5), dpi=DPI, layout="constrained")
    ax = figure.subplots()
    for c, (label, shape) in enumerate(zip(classes, shapes)):
        members = X[y == label]
        colour = f"C{c}"
        ax.scatter(members[:, 0], members[:, 1], s=6, color=colour, alpha=0.5, label=str(label))
        centre = members.mean(axis=0)
        ax.plot(centre[0] + scale * shape[0], centre[1] + scale * shape[1], color=colour, lw=2)
    ax.set_aspect("equal")
    ax.legend(fontsize=8, markerscale=2)
    ax.set_title(title, fontsize=9)
    return _save(figure, path)


def convergence(stages, path: str | Path, title: str = "") -> Path:
    """Upper bound (eq. 14 at the best metric) and certified lower bound per stage against
    seconds, and the relative gap on a log scale. ``stages``: ``fast_solver.Stage`` objects
    (``elapsed``, ``upper``, ``lower``, ``relative_gap``), in order."""
    if not stages:
        raise ValueError("stages: no stage to plot; pass the Stage objects a solve's callback received")
    seconds = [s.elapsed for s in stages]
    figure = Figure(figsize=(9, 3.5), dpi=DPI, layout="constrained")
    bounds, gaps = figure.subplots(1, 2)
    bounds.plot(seconds, [s.upper for s in stages], "o-", label="objective (upper bound)")
    bounds.plot(seconds, [max(s.lower, 0.0) for s in stages], "s-", label="certified lower bound")
    bounds.set_xlabel("seconds")
    bounds.set_ylabel("eq. 14")
    bounds.legend(fontsize=8)
    gaps.semilogy(seconds, [max(s.relative_gap, 1e-16) for s in stages], "o-", color="tab:red")
    gaps.set_xlabel("seconds")
    gaps.set_ylabel("relative gap (upper - lower) / upper")
    figure.suptitle(title, fontsize=9)
    return _save(figure, path)


def pick_rows(y_train, y_test, before: np.ndarray, after: np.ndarray, n_rows: int) -> np.ndarray:
    """Indices of up to ``n_rows`` test points to show: first those the k-NN vote gets wrong
    before (``before`` (m, k) neighbours) and right after (``after`` (m, k)), then those
    right after, then the rest; each group in index order."""
    y_test = np.asarray(y_test)
    right_before = knn_predict(y_train, before) == y_test
    right_after = knn_predict(y_train, after) == y_test
    order = np.concatenate([np.flatnonzero(~right_before & right_after),
                            np.flatnonzero(right_before & right_after), np.flatnonzero(~right_after)])
    return order[:n_rows]


def neighbour_rows(train_images: np.ndarray, y_train, test_images: np.ndarray, y_test,
                   before: np.ndarray, after: np.ndarray, rows, path: str | Path,
                   labels: tuple[str, str] = ("Euclidean", "LMNN")) -> Path:
    """For each test index in ``rows``: the test image, its ``before`` neighbours and its
    ``after`` neighbours ((m, k) training indices, nearest first). Images are (n, h, w)
    arrays shown in grey, neighbours framed green (same class) or red (another class)."""
    return _save(neighbour_figure(train_images, y_train, test_images, y_test, before, after,
                                  rows, labels), path)


def neighbour_figure(train_images: np.ndarray, y_train, test_images: np.ndarray, y_test,
                     before: np.ndarray, after: np.ndarray, rows,
                     labels: tuple[str, str] = ("Euclidean", "LMNN")) -> Figure:
    """The figure of ``neighbour_rows``: one row of axes per test index, 2 k + 1 columns."""
    rows = list(rows)
    k = before.shape[1]
    figure = Figure(figsize=(1.1 * (2 * k + 1), 1.2 * max(len(rows), 1)), dpi=DPI)
    grid = figure.subplots(max(len(rows), 1), 2 * k + 1, squeeze=False)
    for r, t in enumerate(rows):
        cells = [(test_images[t], None)] + [(train_images[j], y_train[j] == y_test[t])
                                            for j in (*before[t], *after[t])]
        for c, (image, same) in enumerate(cells):
            ax = grid[r, c]
            ax.imshow(image, cmap="gray_r")
            ax.set_xticks([])
            ax.set_yticks([])
            if same is not None:
                h, w = image.shape
                ax.add_patch(Rectangle((-0.5, -0.5), w, h, fill=False, lw=3,
                                       edgecolor="tab:green" if same else "tab:red"))
    for c, text in ((0, "test"), (1, f"{labels[0]} {k}-NN"), (k + 1, f"{labels[1]} {k}-NN")):
        grid[0, c].set_title(text, fontsize=8, loc="left")
    return figure


def _sqrt_psd(M: np.ndarray) -> np.ndarray:
    eigenvalues, V = np.linalg.eigh((np.asarray(M) + np.asarray(M).T) / 2)
    return (V * np.sqrt(np.clip(eigenvalues, 0.0, None))) @ V.T


def _save(figure: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path
