"""The PNG plots, on tiny fake data: each writes a PNG; the image rows show the right images."""

from __future__ import annotations

import numpy as np
import pytest

from fast_solver import Stage
from validation.experiments import plots

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(path) -> bool:
    return path.read_bytes()[:8] == PNG and path.stat().st_size > 1000


def test_table_bars(tmp_path):
    lines = [{"dataset": d, "method": m, "test_error_mean": e, "test_error_std": s,
              "paper_test_error": p}
             for d, m, e, s, p in [("iris", "lmnn", 4.0, 1.0, 4.37), ("iris", "svm", 3.0, float("nan"), None),
                                   ("letters", "lmnn", 3.9, 0.1, 3.60)]]
    assert is_png(plots.table_bars(lines, tmp_path / "bars.png"))


def test_metric_ellipses(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 2)), np.repeat([0, 1, 2], 10)
    metrics = np.stack([np.eye(2), np.diag([4.0, 0.0]), [[2.0, 1.0], [1.0, 2.0]]])  # one singular
    assert is_png(plots.metric_ellipses(X, y, metrics, tmp_path / "ellipses.png", "toy"))
    with pytest.raises(ValueError, match="metrics \\(n_classes, 2, 2\\)"):
        plots.metric_ellipses(X, y, metrics[:2], tmp_path / "bad.png")


def test_the_ellipse_is_the_unit_circle_under_the_square_root():
    M = np.array([[5.0, 2.0], [2.0, 2.0]])
    root = plots._sqrt_psd(M)
    np.testing.assert_allclose(root @ root, M, atol=1e-12)
    np.testing.assert_allclose(root, root.T)


def test_convergence(tmp_path):
    stages = [Stage(i, 0.1 * 0.3 ** i, 10, "gap", 100 - i, 100 - i - 10 / 10 ** i,
                    10 / 10 ** i / (100 - i), 50, 5, 500, float(i)) for i in range(4)]
    assert is_png(plots.convergence(stages, tmp_path / "convergence.png", "fake"))
    with pytest.raises(ValueError, match="no stage"):
        plots.convergence([], tmp_path / "none.png")


def fake_images():
    """Six 4x4 training images (classes 0 and 1) and two test images."""
    train = np.zeros((6, 4, 4))
    for i in range(6):
        train[i, i % 4, :] = 1.0 + i
    return train, np.array([0, 0, 0, 1, 1, 1]), np.ones((2, 4, 4)), np.array([0, 1])


def test_pick_rows_puts_the_fixed_test_points_first():
    _, y_train, _, y_test = fake_images()
    y_test = np.array([0, 1, 0])
    before = np.array([[0, 1, 2], [3, 4, 0], [3, 4, 5]])  # right, right, wrong
    after = np.array([[0, 1, 2], [0, 1, 2], [0, 1, 3]])   # right, wrong, right
    np.testing.assert_array_equal(plots.pick_rows(y_train, y_test, before, after, 3), [2, 0, 1])
    np.testing.assert_array_equal(plots.pick_rows(y_train, y_test, before, after, 1), [2])


def test_neighbour_rows_draw_test_image_and_both_neighbour_lists(tmp_path):
    train, y_train, test, y_test = fake_images()
    before, after = np.array([[3, 4, 0], [0, 1, 5]]), np.array([[0, 1, 2], [3, 4, 5]])
    path = plots.neighbour_rows(train, y_train, test, y_test, before, after, [0, 1],
                                tmp_path / "rows.png")
    assert is_png(path)
    figure_axes = plots.neighbour_figure(train, y_train, test, y_test, before, after, [0, 1]).axes
    assert len(figure_axes) == 2 * 7
    shown = [ax.images[0].get_array().sum() for ax in figure_axes[:7]]
    assert shown == [16.0] + [train[j].sum() for j in (3, 4, 0, 0, 1, 2)]
    frames = [ax.patches[0].get_edgecolor()[:3] for ax in figure_axes[1:7]]
    green, red = (0.17254901960784313, 0.6274509803921569, 0.17254901960784313), \
        (0.8392156862745098, 0.15294117647058825, 0.1568627450980392)
    assert [f == pytest.approx(green) for f in frames] == [False, False, True, True, True, True]
    assert frames[0] == pytest.approx(red)
