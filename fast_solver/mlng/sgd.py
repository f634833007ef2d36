"""Alg. 1 of Trivedi, McAllester & Shakhnarovich (NIPS 2014): stochastic (sub)gradient
descent on eq. 10, ``||W||_F^2 + C sum_i L_i(W)``, with a projection onto the PSD cone.

Step ``t = 1, 2, ...`` takes a mini-batch ``B`` (an epoch visits every point once, in an order
drawn from ``random_state``; ``batch_size = 1`` is the paper's single sample), runs both
inference problems at ``W_t`` and moves along the stochastic gradient of eq. 10 with the
paper's learning rate ``eta(t) = 1/t``:

    W_{t+1} = P_S[(1 - eta(t)) W_t - eta(t) (C n / 2|B|) sum_{i in B} dL_i/dW],

which is Alg. 1's ``(1 - eta) W - C dW`` with the step applied to both terms of the gradient
``2 W + C n dL_i/dW`` (steps ``1/(2t)``, the Pegasos rate for a 2-strongly convex
regulariser). The first step replaces ``W_0``: the starting metric enters through the
neighbour sets of the first step. ``P_S`` zeroes negative eigenvalues (eq. 20 of the LMNN
paper, ``lmnn_sdp.core.psd``). The run stops, as in sec. 6, when the average of the mini-batch
estimates of eq. 10 over an epoch falls by less than ``tol`` (relative) from the epoch before,
or after ``max_epochs``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from numbers import Real

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from fast_solver.checkpoint import Checkpoint, as_checkpoint, fingerprint
from fast_solver.mlng.objective import batch_losses, check_model, summed_losses
from lmnn_sdp.core.checks import check_inputs, check_max_iter, check_tol
from lmnn_sdp.core.psd import psd_factor
from lmnn_sdp.status import CONVERGED, MAX_ITER, Stopped


@dataclass(frozen=True)
class MLNGEpoch:
    """One pass over the data: the epoch's average of the mini-batch estimates of eq. 10
    (``objective``) and of the surrogate loss ``L_i`` (``mean_loss``), ``||W||_F`` at its end,
    the SGD steps so far and the seconds since the start."""

    epoch: int
    objective: float
    mean_loss: float
    norm: float
    n_steps: int
    elapsed: float


@dataclass(frozen=True, repr=False)
class MLNGResult(Stopped):
    """What ``fit_mlng`` returns; nothing is printed.

    Attributes
    ----------
    metric : ndarray of shape (d, d)
        The learned PSD ``W``.
    components : ndarray of shape (d, d)
        ``L`` with ``L^T L = metric``, rows by decreasing eigenvalue.
    objective : float
        Eq. 10 at ``metric``, over all points.
    mean_loss : float
        The average surrogate loss ``L_i`` (eq. 5-6) at ``metric``.
    status : {"converged", "max_iter"}
        How SGD stopped (``lmnn_sdp.status``): an epoch's average of eq. 10 fell by at most
        ``tol`` (relative), or ``max_epochs`` epochs were spent first.
    message : str
        Why it stopped, for people.
    n_epochs, n_steps : int
    history : list of MLNGEpoch
    timings : dict of str to float
        Seconds in ``sgd``, ``objective`` (the final evaluation) and ``total``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import fit_mlng
    >>> X, y = load_iris(return_X_y=True)
    >>> result = fit_mlng(X[::5], y[::5], k=2, max_epochs=2, random_state=0)
    >>> result.status, result.converged, result.n_epochs
    ('max_iter', False, 2)
    >>> result.metric.shape
    (4, 4)
    """

    metric: np.ndarray
    components: np.ndarray
    objective: float
    mean_loss: float
    status: str
    message: str
    n_epochs: int
    n_steps: int
    history: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"MLNGResult(objective={self.objective:.6g}, mean_loss={self.mean_loss:.4g}, "
                f"status={self.status!r}, n_epochs={self.n_epochs}, n_steps={self.n_steps}, "
                f"time={self.timings.get('total', float('nan')):.3g} s)")


def fit_mlng(X, labels, k: int = 3, C: float = 0.1, loss_matrix=None, W0=None,
             max_epochs: int = 100, batch_size: int = 1, tol: float = 1e-3, random_state=None,
             callback: Callable[[MLNGEpoch], None] | None = None, checkpoint=None,
             checkpoint_interval: float = 60.0) -> MLNGResult:
    """Learn the MLNG metric ``W`` by projected stochastic gradient descent.

    Alg. 1 of Trivedi, McAllester & Shakhnarovich (NIPS 2014): minimises eq. 10,
    ``||W||_F^2 + C sum_i L_i(W)`` with the surrogate loss ``L_i`` of eq. 5-6, by
    steps with the learning rate ``1/t`` projected onto the PSD cone (module
    docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Real inputs.
    labels : array-like of int, shape (n,)
        Class codes ``0..R-1``.
    k : int, default=3
        Neighbours per vote.
    C : float > 0, default=0.1
        Weight of the summed surrogate loss in eq. 10.
    loss_matrix : array of shape (R, R), optional
        ``Lambda`` (sec. 3); default the 0-1 loss.
    W0 : array of shape (d, d), optional
        Starting PSD metric; default zero (Alg. 1).
    max_epochs : int >= 1, default=100
        Largest number of passes over the data.
    batch_size : int, default=1
        Points per SGD step.
    tol : float >= 0, default=1e-3
        The run stops when the epoch average of eq. 10 falls by at most ``tol``
        (relative) from the epoch before.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which each epoch visits the points.
    callback : callable, optional
        Called with an ``MLNGEpoch`` after every epoch.
    checkpoint : str, path-like or None, default=None
        A file where the fit saves its state (``fast_solver.checkpoint``: the factor of
        ``W``, the step count, the epochs' history and the random state) at the end of an
        epoch at most every ``checkpoint_interval`` seconds, and when it ends. A fit started
        again with the same inputs, options and path resumes from the state saved last and
        ends with the same ``metric``, objective, history and counters, bit for bit, as an
        uninterrupted fit (timings aside); a finished fit's file returns its result after one
        evaluation of eq. 10. Needs a fixed ``random_state``: its state when the fit starts is
        part of what the file was written for, with ``X``, ``labels``, ``k``, ``C``,
        ``loss_matrix``, ``W0``, ``max_epochs``, ``batch_size`` and ``tol``; a damaged file or
        one written for others is refused.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves after every epoch.

    Returns
    -------
    result : MLNGResult
        The metric ``W`` (d, d), its factor, eq. 10 there, whether the stopping rule
        fired and the epochs' history.

    Raises
    ------
    ValueError
        If ``C``, ``max_epochs``, ``batch_size`` or ``tol`` is out of its range, ``W0`` or
        ``loss_matrix`` does not fit the data, or ``checkpoint`` is given with
        ``random_state=None``.
    TypeError
        If ``max_epochs`` is not an integer or ``tol`` not a real number (``True``, ``"0.5"``).
    fast_solver.checkpoint.CheckpointError
        If ``checkpoint`` is damaged or was written by another fit (a ``ValueError``).

    See Also
    --------
    MLNG : The scikit-learn estimator over this function.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import fit_mlng
    >>> X, y = load_iris(return_X_y=True)
    >>> result = fit_mlng(X[::5], y[::5], k=3, C=0.1, random_state=0)
    >>> result.converged, result.metric.shape
    (True, (4, 4))
    >>> bool(np.linalg.eigvalsh(result.metric).min() >= -1e-12)  # PSD
    True
    """
    X = check_inputs(X)
    W0 = np.zeros((X.shape[1], X.shape[1])) if W0 is None else W0
    X, labels, W, loss_matrix = check_model(X, labels, W0, k, loss_matrix, name="W0")
    _check_run(C, max_epochs, batch_size, tol)
    if checkpoint is not None and random_state is None:
        raise ValueError("checkpoint needs a fixed random_state (an int or a RandomState): the order "
                         "in which SGD visits the points must be the same when the fit resumes.")
    rng, n = check_random_state(random_state), len(X)
    saved = as_checkpoint(checkpoint, kind="mlng", interval=checkpoint_interval, fingerprint=lambda: fingerprint(
        X, labels, W, loss_matrix, k=k, C=C, max_epochs=max_epochs, batch_size=batch_size, tol=tol,
        random_state=rng.get_state()))
    L, step, history, start = _resumed(saved, rng, psd_factor(W))
    resumed_epochs = len(history)
    X = X - X.mean(axis=0)  # D_W is translation invariant; centring keeps Z small
    with threadpool_limits(1, user_api="blas"):  # small products: threads only contend
        while len(history) < max_epochs and not _stalled(history, tol):
            L, step, epoch = _epoch(X, labels, L, step, k, C, loss_matrix,
                                    np.array_split(rng.permutation(n), -(-n // batch_size)))
            history.append(MLNGEpoch(len(history) + 1, *epoch, step, time.perf_counter() - start))
            if callback is not None:
                callback(history[-1])
            if saved.due():  # an epoch's end: the rest of the run is a function of this state
                saved.save(_state(L, step, history, rng, start))
    if len(history) > resumed_epochs:  # the end, unless it was read back
        saved.save(_state(L, step, history, rng, start))
    sgd = time.perf_counter() - start
    loss, _ = summed_losses(X, X @ L.T, labels, k, loss_matrix)
    W, total = L.T @ L, time.perf_counter() - start
    status = CONVERGED if _stalled(history, tol) else MAX_ITER
    message = (f"converged: the last epoch's average of eq. 10 fell by at most tol={tol:g}"
               if status == CONVERGED else f"not converged: max_epochs={max_epochs} epochs spent")
    return MLNGResult(W, L, float(np.sum(W * W)) + C * loss, loss / n, status, message,
                      len(history), step, history, {"sgd": sgd, "objective": total - sgd,
                                                    "total": total})


def _resumed(saved: Checkpoint, rng: np.random.RandomState, L0: np.ndarray) -> tuple:
    """``(L, step, history, start)`` from the checkpoint, with ``rng`` set to its saved state,
    or the fresh start from the factor ``L0``; ``start`` is the ``perf_counter`` time from which
    the history's seconds count."""
    state = saved.load()
    if state is None:
        return L0, 0, [], time.perf_counter()
    rng.set_state(state["rng"])
    history = [MLNGEpoch(**epoch) for epoch in state["history"]]
    return state["L"], state["step"], history, time.perf_counter() - state["elapsed"]


def _state(L: np.ndarray, step: int, history: list, rng: np.random.RandomState, start: float) -> dict:
    """What ``_resumed`` reads back: the factor of ``W``, the steps, the epochs, the random state
    and the seconds spent."""
    return {"L": L, "step": step, "history": [asdict(epoch) for epoch in history], "rng": rng.get_state(),
            "elapsed": time.perf_counter() - start}


def _epoch(X, labels, L, step, k, C, loss_matrix, batches) -> tuple[np.ndarray, int, tuple]:
    """One pass of Alg. 1 over ``batches`` from the factor ``L`` of ``W_t``: the new factor,
    the step count and ``(epoch average of eq. 10, mean loss, ||W||_F)``."""
    n = len(X)
    estimate = loss_sum = 0.0
    for batch in batches:
        step += 1
        W = L.T @ L
        losses, gradient = batch_losses(X, X @ L.T, labels, batch, k, loss_matrix)
        estimate += len(batch) * float(np.sum(W * W)) + C * n * float(losses.sum())
        loss_sum += float(losses.sum())
        eta = 1.0 / step
        L = psd_factor((1.0 - eta) * W - eta * C * n / (2 * len(batch)) * gradient)
    return L, step, (estimate / n, loss_sum / n, float(np.linalg.norm(L.T @ L)))


def _stalled(history: list, tol: float) -> bool:
    """Sec. 6's stop: the last epoch's average of eq. 10 fell by at most ``tol`` (relative)."""
    return len(history) > 1 and (history[-2].objective - history[-1].objective
                                 <= tol * abs(history[-2].objective))


def _check_run(C, max_epochs, batch_size, tol) -> None:
    """An error naming the argument unless the run's numbers are valid: ``max_epochs``,
    ``batch_size`` (a count, by the rule of budgets) and ``tol`` by the library's rules
    (``lmnn_sdp.core.checks``)."""
    if not (_finite_number(C) and C > 0):
        raise ValueError(f"C must be a finite number > 0 (the weight of the loss), got {C!r}.")
    check_max_iter(max_epochs, "max_epochs")
    check_max_iter(batch_size, "batch_size")
    check_tol(tol)


def _finite_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and bool(np.isfinite(value))
