"""How a method stopped: the one vocabulary of every result's ``status``.

``status`` reports the method's own stopping rule and nothing else. Whether an answer is
proved is ``certified``, decided from the result's own bounds; people read ``message``; the
status a cvxpy solver reported, where there is one, is ``solver_status``. No code decides on
``message`` or ``solver_status``.

Examples
--------
>>> from lmnn_sdp.status import CONVERGED, STATUSES
>>> CONVERGED in STATUSES
True
"""

CONVERGED = "converged"
"""The method's stopping rule was met: a certified gap at most ``tol`` for the certified
solvers, their own test (a fixed point, stationarity, no further decrease) for the others."""

MAX_ITER = "max_iter"
"""The budget (iterations, epochs, passes or rounds) ran out before the stopping rule was met."""

STALLED = "stalled"
"""The method stopped short of its rule before its budget: no further progress in floating
point, or bounds that its certificate does not prove."""

STATUSES = (CONVERGED, MAX_ITER, STALLED)


class Stopped:
    """What every result derives from its ``status``: ``converged``."""

    status: str

    @property
    def converged(self) -> bool:
        """The method's stopping rule was met: ``status == "converged"``."""
        return self.status == CONVERGED


def push_only(lower: float, upper: float) -> str:
    """Why a solve at ``mu = 1`` (push only) ends without a certificate: the sentence every
    method adds to its message. The dual bound scales multipliers into the dual cone through
    the pull term ``(1 - mu) sum C_ij``, which vanishes at ``mu = 1``; design note
    docs/design/certificates.md, "Push only"."""
    return (f"at mu = 1 (push only) the pull term, through which the dual bound scales multipliers "
            f"into the cone, is 0, so the bound proves only {lower:.7g}; {upper:.7g} is the best "
            "objective found. The infimum may not be attained (eq. 14 decreasing as the metric grows "
            "without bound), or be attained where no bound of this form proves it")



def singular_pull(mu: float) -> str:
    """Why a bound at ``mu < 1`` is weak where a cluster's pull matrix counts as singular
    (``Certificate.singular_clusters``): the clause every method adds to its message. Near
    ``mu = 1`` the weight ``1 - mu`` alone can put the pull term below its float64 rounding,
    and the bound then proves as little as at ``mu = 1`` (``push_only``)."""
    return (f"the pull matrix, weighted by 1 - mu = {1.0 - mu:.3g}, is singular in float64 on the data "
            "range (target neighbours coincide along some directions, as with duplicated points or "
            "binary features, or 1 - mu is below the rounding of the push term), where the bound sets "
            "impostor multipliers to 0, so it is weak")
