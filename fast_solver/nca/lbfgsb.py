"""L-BFGS-B that saves its whole state at each iterate and resumes from it.

scipy's ``minimize(method="L-BFGS-B")`` drives the reverse-communication routine ``setulb`` of
L-BFGS-B 3.0 (Zhu, Byrd, Lu & Nocedal 1997; Morales & Nocedal 2011): ``setulb`` returns to its
caller for each function value and at each new iterate, and keeps everything else it knows (the
``m`` correction pairs, the line search, its counters) in arrays that the caller owns.
``minimize_lbfgsb`` runs scipy's loop (``scipy.optimize._lbfgsb_py._minimize_lbfgsb`` without
bounds, scipy's default options), so it visits scipy's iterates bit for bit, and at each new
iterate -- a restart point: the rest of the run is a function of those arrays and of two
counters -- it saves them to a ``fast_solver.checkpoint.Checkpoint`` when one is due. The loop
calls scipy's private ``_lbfgsb.setulb``, whose arguments changed in scipy 1.15 (the Fortran
routine became C, its text task a pair of codes); both forms are driven, and
``tests/fast_solver/test_lbfgsb.py`` pins the iterates, counters and messages to ``minimize``'s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy
from scipy.optimize import OptimizeResult

from fast_solver.checkpoint import Checkpoint, CheckpointError

__all__ = ["minimize_lbfgsb"]

MEMORY = 10  # scipy's maxcor: correction pairs kept
LINE_SEARCH_STEPS = 20  # scipy's maxls
MAX_EVALUATIONS = 15000  # scipy's maxfun
C_ROUTINE = np.lib.NumpyVersion(scipy.__version__) >= "1.15.0"  # setulb in C, its task two codes
ENGINE = "setulb-c" if C_ROUTINE else "setulb-fortran"
_FG, _NEW_X, _STOP, _CONVERGED = 3, 1, 5, 4  # the C routine's task codes
_ITERATIONS, _EVALUATIONS = 504, 502  # its reasons to stop


def minimize_lbfgsb(fun: Callable, x0, *, max_iter: int, tol: float,
                    callback: Callable | None = None, checkpoint: Checkpoint | None = None) -> OptimizeResult:
    """Minimise ``fun`` from ``x0`` by L-BFGS-B, as ``scipy.optimize.minimize(fun, x0, jac=True,
    method="L-BFGS-B", tol=tol, options={"maxiter": max_iter})``, resumable from a checkpoint.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` with ``x`` and ``gradient`` of shape (n,).
    x0 : array-like of shape (n,)
        Starting point.
    max_iter : int
        Iterations (scipy's ``maxiter``).
    tol : float
        scipy's ``tol``: both ``ftol`` and ``gtol``.
    callback : callable, optional
        ``callback(x, value, n_iter)`` at each new iterate, ``n_iter`` counted from 1 over the
        whole run (resumed runs continue the count).
    checkpoint : fast_solver.checkpoint.Checkpoint, optional
        Where the state is saved at each new iterate when ``checkpoint.due()``, and at the end;
        its saved state, when there is one, is resumed (a finished run returns at once).

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``njev``, ``status`` (0 converged, 1 an
        iteration or evaluation limit, 2 otherwise), ``success`` and ``message``, as scipy's.

    Raises
    ------
    fast_solver.checkpoint.CheckpointError
        If the checkpoint is damaged or foreign (``Checkpoint.load``), or was written for
        another starting dimension or by the other form of scipy's routine.

    Examples
    --------
    >>> import numpy as np
    >>> result = minimize_lbfgsb(lambda x: (float(x @ x), 2 * x), np.ones(3), max_iter=20, tol=1e-8)
    >>> result.success, float(abs(result.x).max()) < 1e-8
    (True, True)
    """
    checkpoint = checkpoint if checkpoint is not None else Checkpoint(None, kind="lbfgsb", fingerprint="")
    x0 = np.asarray(x0, dtype=float).ravel()
    state = _resumed(checkpoint, len(x0)) or _fresh(x0)
    factr, pgtol, ended = tol / np.finfo(float).eps, tol, state["done"]
    while not state["done"]:
        _call(state, factr, pgtol)
        request = _request(state)
        if request == _FG:
            _evaluate(fun, state)
        elif request == _NEW_X:
            state["nit"] += 1
            if callback is not None:
                callback(state["x"].copy(), state["f"], state["nit"])
            if state["nit"] >= max_iter:
                _stop(state, _ITERATIONS)
            elif state["nfev"] > MAX_EVALUATIONS:
                _stop(state, _EVALUATIONS)
            if checkpoint.due():
                checkpoint.save(state)
        else:
            state["done"] = True
    if not ended:
        checkpoint.save(state)
    return _result(state, max_iter)


def _scipy_routine():
    """scipy's private ``_lbfgsb`` and ``_lbfgsb_py`` modules, imported when a run starts (so
    that ``import fast_solver`` does not depend on them); a clear error when this scipy lacks them."""
    try:
        from scipy.optimize import _lbfgsb, _lbfgsb_py
        _lbfgsb.setulb
    except (ImportError, AttributeError) as error:
        raise ImportError(f"fast_solver.nca.lbfgsb drives scipy's private L-BFGS-B routine, which scipy "
                          f"{scipy.__version__} does not provide as scipy 1.11-1.17 do ({error}); use a "
                          "scipy release from that range.") from error
    return _lbfgsb, _lbfgsb_py


def _fresh(x0: np.ndarray) -> dict:
    """The routine's arrays before its first call (task START), and the run's counters."""
    n, m = len(x0), MEMORY
    integer = np.int32 if C_ROUTINE else _scipy_routine()[0].types.intvar.dtype
    state = {"engine": ENGINE, "x": x0.copy(), "f": 0.0, "g": np.zeros(n),
             "wa": np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m), "iwa": np.zeros(3 * n, integer),
             "lsave": np.zeros(4, integer), "isave": np.zeros(44, integer), "dsave": np.zeros(29),
             "evaluated": (x0.copy(), 0.0, np.zeros(n)), "nit": 0, "nfev": 0, "done": False}
    if C_ROUTINE:
        state.update(task=np.zeros(2, np.int32), ln_task=np.zeros(2, np.int32))
    else:
        state.update(task=np.zeros(1, "S60"), csave=np.zeros(1, "S60"))
        state["task"][:] = "START"
    return state


def _evaluate(fun: Callable, state: dict) -> None:
    """Hand the routine ``fun`` at its ``x``; a point asked for twice in a row is evaluated once,
    as by scipy's ``ScalarFunction``."""
    x, (last, value, gradient) = state["x"], state["evaluated"]
    if state["nfev"] == 0 or not np.array_equal(x, last):
        value, gradient = fun(x.copy())
        value, gradient = float(value), np.array(gradient, dtype=float).ravel()
        state["evaluated"], state["nfev"] = (x.copy(), value, gradient), state["nfev"] + 1
    state["f"], state["g"] = value, gradient.copy()


def _resumed(checkpoint: Checkpoint, n: int) -> dict | None:
    """The saved state, checked against this run's dimension and scipy's routine, or None."""
    state = checkpoint.load()
    if state is None:
        return None
    if state.get("engine") != ENGINE or len(state["x"]) != n:
        raise CheckpointError(f"{checkpoint.path} holds an L-BFGS-B state of {state.get('engine')} over "
                              f"{len(state['x'])} variables; this scipy ({scipy.__version__}) runs "
                              f"{ENGINE} over {n}: give another path, or delete it to start afresh.")
    return state


def _call(state: dict, factr: float, pgtol: float) -> None:
    """One call of ``setulb``: it updates the state's arrays in place."""
    n, routine = len(state["x"]), _scipy_routine()[0]
    bounds, free = np.zeros(n), np.zeros(n, state["iwa"].dtype)  # nbd = 0: every variable unbounded
    state["g"] = np.array(state["g"], dtype=float)
    common = (MEMORY, state["x"], bounds, bounds, free, state["f"], state["g"], factr, pgtol,
              state["wa"], state["iwa"], state["task"])
    if C_ROUTINE:
        routine.setulb(*common, state["lsave"], state["isave"], state["dsave"], LINE_SEARCH_STEPS,
                       state["ln_task"])
    else:
        routine.setulb(*common, -1, state["csave"], state["lsave"], state["isave"], state["dsave"],
                       LINE_SEARCH_STEPS)


def _request(state: dict) -> int:
    """What the routine asks for: ``_FG``, ``_NEW_X``, or another code (it has stopped)."""
    if C_ROUTINE:
        return int(state["task"][0])
    task = state["task"].tobytes()
    return _FG if task.startswith(b"FG") else _NEW_X if task.startswith(b"NEW_X") else _STOP


def _stop(state: dict, reason: int) -> None:
    if C_ROUTINE:
        state["task"][:] = (_STOP, reason)
    else:
        state["task"][:] = {_ITERATIONS: "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT",
                            _EVALUATIONS: "STOP: TOTAL NO. of f AND g EVALUATIONS EXCEEDS LIMIT"}[reason]


def _result(state: dict, max_iter: int) -> OptimizeResult:
    """scipy's ``OptimizeResult`` of the finished run (without ``hess_inv``)."""
    if C_ROUTINE:
        code, reason = (int(c) for c in state["task"])
        converged = code == _CONVERGED
        messages = _scipy_routine()[1]
        message = f"{messages.status_messages[code]}: {messages.task_messages[reason]}"
    else:
        message = state["task"].tobytes().strip(b"\x00").strip().decode()
        converged = message.startswith("CONV")
    status = 0 if converged else 1 if state["nfev"] > MAX_EVALUATIONS or state["nit"] >= max_iter else 2
    return OptimizeResult(x=state["x"], fun=state["f"], jac=state["g"], nit=state["nit"], nfev=state["nfev"],
                          njev=state["nfev"], status=status, success=status == 0, message=message)
