"""Kernel LMCA (Torresani & Lee, NIPS 2006, sec. 3): eq. 14 in a feature space, at low rank.

With features ``phi_i = phi(x_i)``, ``Phi = [phi_1, ..., phi_n]^T`` and a map
``L = Omega Phi`` from the feature space to ``R^r`` (Lemma 3.1; ``Omega`` (r, n)),
the embedding is ``L phi_i = Omega k_i``, ``k_i = [k(x_1, x_i), ..., k(x_n, x_i)]``:

    Z = K Omega^T  (n, r),     D(i, j) = |z_i - z_j|^2,

and eq. 14 is that of ``fast_solver.low_rank.embedding_loss`` at ``Z``. Its gradient in
feature space is ``Gamma Phi`` with ``Gamma = (dF/dZ)^T`` (eq. 4), so the paper's
update is ``Omega <- Omega - lambda Gamma`` (eq. 5); the gradient in ``Omega`` is
``Gamma K``. Here L-BFGS runs on ``Omega`` with that gradient
(``fast_solver.low_rank.solver``), and a new point maps to ``Omega k(X_train, x)``.

With an RBF kernel the training eq. 14 can be driven towards 0, so the iteration budget
``max_iter`` regularises, as the paper's early-stopped steepest descent did
(docs/design/low-rank.md, "Kernel LMCA").

Memory is bounded in ``n``: the training kernel matrix is kept only when its
``8 n^2`` bytes fit ``kernel_memory`` (default ``KERNEL_MEMORY``, 256 MiB, so up
to n = 5,792); otherwise every product ``K V`` is formed block by block
(``BLOCK`` x ``BLOCK`` kernel blocks, 32 MiB each per thread) and nothing of size
``n^2`` exists, at the price of two kernel passes per evaluation. Kernels follow
scikit-learn (``sklearn.metrics.pairwise``): ``"rbf"`` ``exp(-gamma |x - z|^2)``,
``"poly"`` ``(gamma x.z + coef0)^degree``, ``gamma = 1 / n_features`` by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse.linalg
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from fast_solver._base import CHECKPOINT_PARAMETERS, fitted_inputs
from fast_solver.lmnn.estimator import labelled_problem
from fast_solver.lmnn.impostors import in_chunks, map_rows
from fast_solver.low_rank.embedding_loss import embedding_loss
from fast_solver.low_rank.lmca import check_init_array, stage_table, warn_unless_stationary
from fast_solver.low_rank.solver import HINGES, LMCAResult, low_rank_checkpoint, minimise, start_scale
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.core.problem import LMNNProblem

KERNELS = ("rbf", "poly")
KERNEL_MEMORY = 256 * 2**20  # bytes for the training kernel matrix
BLOCK = 2048
INITS = ("kpca", "random")
DENSE_KPCA_ROWS = 2000  # kernel PCA by a dense eigendecomposition up to this many rows
KPCA_RTOL = 1e-10  # centred-kernel eigenvalues below this fraction of the largest are 0


@dataclass(frozen=True)
class Kernel:
    """A kernel function with scikit-learn's parameters; ``kernel(A, B)`` is (len(A), len(B))."""

    name: str
    gamma: float
    degree: int = 3
    coef0: float = 1.0

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        if self.name == "rbf":
            return rbf_kernel(A, B, gamma=self.gamma)
        return polynomial_kernel(A, B, degree=self.degree, gamma=self.gamma, coef0=self.coef0)


def make_kernel(name: str, n_features: int, gamma: float | None = None, degree: int = 3,
                coef0: float = 1.0) -> Kernel:
    """A checked ``Kernel``; ``gamma=None`` is scikit-learn's ``1 / n_features``."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {name!r}; a linear kernel is "
                         "kernel='poly' with degree=1, coef0=0.")
    gamma = 1.0 / n_features if gamma is None else gamma
    if isinstance(gamma, bool) or not isinstance(gamma, Real) or not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be a finite number > 0 (or None for 1 / n_features), got {gamma!r}.")
    if isinstance(degree, bool) or not isinstance(degree, Integral) or degree < 1:
        raise ValueError(f"degree must be an integer >= 1, got {degree!r}.")
    if isinstance(coef0, bool) or not isinstance(coef0, Real) or not np.isfinite(coef0):
        raise ValueError(f"coef0 must be a finite number, got {coef0!r}.")
    return Kernel(name, float(gamma), int(degree), float(coef0))


def kernel_product(kernel: Kernel, A: np.ndarray, B: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``k(A, B) V`` for ``A`` (m, d), ``B`` (p, d), ``V`` (p, s): shape (m, s), formed in
    ``BLOCK`` x ``BLOCK`` kernel blocks on the search threads, so memory does not grow with
    ``m p``."""
    out = np.zeros((len(A), V.shape[1]))

    def fill(start, stop):
        for r0 in range(start, stop, BLOCK):
            r1 = min(r0 + BLOCK, stop)
            for c0 in range(0, len(B), BLOCK):
                out[r0:r1] += kernel(A[r0:r1], B[c0:c0 + BLOCK]) @ V[c0:c0 + BLOCK]

    in_chunks(len(A), fill)
    return out


class TrainingKernel:
    """The training kernel ``K`` (n, n) as products ``K V``: kept when ``8 n^2`` bytes fit
    ``memory``, else formed block by block (``kernel_product``) at every product."""

    def __init__(self, kernel: Kernel, X: np.ndarray, memory: int = KERNEL_MEMORY):
        self.kernel, self.X = kernel, X
        self.matrix = kernel(X, X) if 8 * len(X) ** 2 <= memory else None

    def dot(self, V: np.ndarray) -> np.ndarray:
        """``K V`` for ``V`` (n, s), shape (n, s)."""
        if self.matrix is None:
            return kernel_product(self.kernel, self.X, self.X, V)
        return map_rows(self.matrix, V.T)


def solve_kernel_lmca(
    problem: LMNNProblem,
    kernel: Kernel,
    n_components: int | None = None,
    *,
    init="kpca",
    hinge: str = "linear",
    tol: float = 1e-5,
    max_iter: int = 1000,
    random_state=None,
    kernel_memory: int = KERNEL_MEMORY,
    callback=None,
    report=None,
    checkpoint=None,
    checkpoint_interval: float = 60.0,
) -> LMCAResult:
    """Minimise the LMNN objective over a low-rank map of a kernel feature space.

    Kernel LMCA (Torresani & Lee, NIPS 2006, sec. 3): eq. 14 of Weinberger & Saul
    (JMLR 2009) in the feature space of ``kernel``, over maps ``L = Omega Phi``
    (Lemma 3.1), with the embedding ``Z = K Omega^T``; L-BFGS on ``Omega`` with the
    gradient ``Gamma K`` of eq. 4 (module docstring). Not convex: the answer is a
    stationary point, not certified.

    Parameters
    ----------
    problem : LMNNProblem
        Its inputs ``X`` are mapped by ``kernel``; targets as in ``problem``.
    kernel : Kernel
        The kernel function (``fast_solver.low_rank.kernel_lmca.make_kernel``).
    n_components : int, optional
        Rows of ``Omega`` (default ``d``, the paper's setting for low-dimensional data).
    init : {"kpca", "random"} or ndarray of shape (n_components, n), default="kpca"
        ``initial_coefficients``; the paper starts at kernel PCA.
    hinge : {"linear", "smooth"}, default="linear"
        eq. 14's hinge (by continuation) or the paper's smooth hinge.
    tol : float >= 0, default=1e-5
        L-BFGS stops when the objective falls by at most ``tol`` (relative) over 10
        iterations; also the continuation's tolerance.
    max_iter : int >= 1, default=1000
        Budget of L-BFGS iterations over all stages.
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``.
    kernel_memory : int, default=KERNEL_MEMORY
        Bytes the training kernel matrix may take (else blockwise products).
    callback : callable, optional
        ``callback(Omega, n_iter)`` after every L-BFGS iteration.
    report : callable, optional
        Called with a ``LowRankStage`` after every smoothing stage.
    checkpoint : str or path-like, optional
        File in which the fit saves its state (``fast_solver.checkpoint``: ``Omega``, the
        working set, the smoothing stage, the best stage answer and the counters) whenever
        L-BFGS starts afresh on a renewed working set, at most every ``checkpoint_interval``
        seconds, and its result at the end. The same call with the same path resumes from
        the state saved last and ends with the result of an uninterrupted fit, bit for bit
        with the same thread settings (``components``, ``objective``, ``n_iter`` and the other
        counters; not ``timings``); when the file holds a finished fit its result is returned
        at once. A file written for other inputs or options (another ``init``, or for
        ``init="random"`` another seed; the start is named by ``init`` and the seed, not by its
        computed numbers), or damaged, raises ``CheckpointError``.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Returns
    -------
    result : LMCAResult
        ``components`` is ``Omega`` (n_components, n); ``embedding`` is ``K Omega^T``
        (n, n_components); ``objective`` is eq. 14 there.

    Raises
    ------
    ValueError
        If ``n_components``, ``init`` or ``hinge`` is invalid, or ``tol`` or ``max_iter`` out
        of its range.
    TypeError
        If ``tol`` is not a real number or ``max_iter`` not an integer (``True``, ``"0.5"``,
        ``max_iter=1.5``; ``lmnn_sdp.core.checks``).
    CheckpointError
        If ``checkpoint`` is damaged or was written by another fit.

    See Also
    --------
    KernelLMCA : The scikit-learn estimator over this function.
    solve_lmca : The linear version.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> from fast_solver import solve_kernel_lmca
    >>> from fast_solver.low_rank.kernel_lmca import make_kernel
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3)
    >>> kernel = make_kernel("rbf", n_features=4)  # gamma = 1 / 4
    >>> result = solve_kernel_lmca(problem, kernel, n_components=2, max_iter=50)
    >>> result.components.shape, result.embedding.shape
    ((2, 30), (30, 2))
    >>> result.status, result.n_iter
    ('max_iter', 50)
    """
    check_tol(tol)
    check_max_iter(max_iter)
    with threadpool_limits(1, user_api="blas"):  # the kernel and the start too: the same bits on any BLAS threads
        K = TrainingKernel(kernel, problem.X, kernel_memory)
        Omega0 = initial_coefficients(problem, K, n_components, init, random_state)
        saved = low_rank_checkpoint(checkpoint, checkpoint_interval, "kernel-lmca", problem, Omega0, init,
                                    random_state, hinge=hinge, tol=tol, max_iter=max_iter, kernel=kernel.name,
                                    gamma=kernel.gamma, degree=kernel.degree, coef0=kernel.coef0,
                                    kernel_kept=K.matrix is not None)
        return minimise(problem, Omega0, lambda Omega: K.dot(Omega.T), lambda dZ: K.dot(dZ).T, hinge=hinge,
                        tol=tol, max_iter=max_iter, callback=callback, report=report, checkpoint=saved)


def initial_coefficients(problem: LMNNProblem, K: TrainingKernel, n_components: int | None, init,
                         random_state=None) -> np.ndarray:
    """``Omega`` (n_components, n) to start from: kernel PCA (rows ``u / sqrt(s)`` for the
    leading eigenpairs of the centred kernel, so ``K Omega^T`` are the kernel-PCA coordinates
    up to a shift; rows past its rank are 0) or standard normal entries, each scaled by
    ``fast_solver.low_rank.solver.start_scale``; an array is used as given."""
    n = problem.n_samples
    r = problem.n_features if n_components is None else n_components
    if isinstance(r, bool) or not isinstance(r, Integral) or r < 1:
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
    if isinstance(init, np.ndarray):
        return check_init_array(init, (r, n))
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS} or an array of shape ({r}, {n}), got {init!r}.")
    if init == "random":
        Omega = check_random_state(random_state).standard_normal((r, n))
    else:
        Omega = _kernel_pca(K, r)
    return start_scale(problem, K.dot(Omega.T)) * Omega


def _kernel_pca(K: TrainingKernel, r: int) -> np.ndarray:
    """Rows ``u_c / sqrt(s_c)`` (r, n) of the leading eigenpairs of ``H K H`` (``H`` the
    centring): dense when ``K`` is kept and ``n <= DENSE_KPCA_ROWS``, else by Lanczos on the
    products ``K V`` (docs/design/low-rank.md, "Kernel LMCA")."""
    n = len(K.X)
    if K.matrix is not None and n <= DENSE_KPCA_ROWS:
        Kc = K.matrix - K.matrix.mean(axis=0) - K.matrix.mean(axis=1)[:, None] + K.matrix.mean()
        s, U = np.linalg.eigh((Kc + Kc.T) / 2)
    else:
        def centred(V):
            V = V.reshape(n, -1)
            V = V - V.mean(axis=0)
            KV = K.dot(V)
            return KV - KV.mean(axis=0)

        op = scipy.sparse.linalg.LinearOperator((n, n), matvec=centred, matmat=centred, dtype=float)
        s, U = scipy.sparse.linalg.eigsh(op, k=min(r, n - 2), which="LA")
    order = np.argsort(s)[::-1][:r]
    s, U = s[order], U[:, order]
    keep = s > KPCA_RTOL * max(float(s[0]), 0.0) if s[0] > 0 else np.zeros(len(s), dtype=bool)
    Omega = np.zeros((r, n))
    Omega[:int(keep.sum())] = (U[:, keep] / np.sqrt(s[keep])).T
    return Omega


def kernel_lmca_loss(problem: LMNNProblem, Omega, kernel: Kernel,
                     width: float = 0.0) -> tuple[float, np.ndarray, np.ndarray]:
    """eq. 14 (``width = 0``) or its smoothed hinge over all triplets at ``Omega`` (r, n),
    its gradient in ``Omega`` (r, n) and ``Gamma`` (r, n) of eq. 4 (the gradient in feature
    space is ``Gamma Phi``)."""
    Omega = check_init_array(np.asarray(Omega, dtype=float), (len(Omega), problem.n_samples), "Omega")
    K = TrainingKernel(kernel, problem.X)
    ev = embedding_loss(K.dot(Omega.T), problem.targets, problem.label_codes, problem.mu, width)
    Gamma = ev.gradient.T
    return ev.value, K.dot(ev.gradient).T, Gamma


def kernel_transform(kernel: Kernel, X_train: np.ndarray, Omega: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``Omega k(X_train, x)`` for every row of ``X`` (m, d): shape (m, r), blockwise."""
    return kernel_product(kernel, X, X_train, Omega.T)


class KernelLMCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel Large Margin Component Analysis: LMNN at low rank in a kernel feature space.

    Implements Torresani & Lee (NIPS 2006, sec. 3). Learns ``Omega`` (n_components, n_samples) of the feature-space map ``L = Omega Phi``
    minimising eq. 14 (``solve_kernel_lmca``); ``transform(X) = k(X, X_fit_) Omega^T``.
    Not convex: a local answer (``result_`` tells how it stopped). The map is not linear
    in the inputs, so there is no Mahalanobis matrix: unlike the linear learners it has no
    ``get_mahalanobis_matrix``, ``pair_distance``, ``pair_score`` or ``get_metric``;
    distances are Euclidean distances after ``transform``.

    Parameters
    ----------
    n_components : int, default=None
        Dimension of the embedding; None means ``n_features`` (the paper's setting).
    kernel : {"rbf", "poly"}, default="rbf"
        ``exp(-gamma |x - z|^2)`` or ``(gamma x.z + coef0)^degree``.
    gamma : float or "scale", default=None
        Kernel coefficient; None means ``1 / n_features`` (scikit-learn's kernel functions),
        "scale" ``1 / (n_features X.var())`` (scikit-learn's SVC: inputs of any units).
    degree : int, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1
        Constant of the polynomial kernel.
    k : int, default=3
        Target neighbours per point (nearest same-class points, Euclidean).
    mu : float in [0, 1], default=0.5
        Weight of the push term; the pull term has ``1 - mu``.
    init : {"kpca", "random"} or ndarray of shape (n_components, n_samples), default="kpca"
        Starting ``Omega``; the paper starts at kernel PCA.
    hinge : {"linear", "smooth"}, default="linear"
        eq. 14's hinge (by smoothing continuation) or the paper's smooth hinge.
    max_iter : int >= 1, default=1000
        Budget of L-BFGS iterations; with an RBF kernel it regularises, since the
        training objective can be driven towards 0.
    tol : float >= 0, default=1e-5
        Relative decrease over 10 L-BFGS iterations at which L-BFGS stops; the
        continuation's tolerance.
    warm_start : bool, default=False
        Start from the previous ``dual_coef_`` (``init`` and ``n_components`` are then
        ignored); needs the same training points.
    callback : callable, default=None
        ``callback(Omega, n_iter)`` after every L-BFGS iteration.
    verbose : int, default=0
        If positive, print one row per smoothing stage.
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``.
    kernel_memory : int, default=256
        MiB the training kernel matrix may take; above it every product is blockwise.
    checkpoint : str or path-like, default=None
        File in which ``fit`` saves its state and resumes from it (``solve_kernel_lmca``): a
        fit killed and run again with the same data, parameters and path ends with the
        ``dual_coef_`` an uninterrupted fit gives, bit for bit.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_components, n_samples)
        ``Omega``.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training inputs the kernel is evaluated against.
    embedding_ : ndarray of shape (n_samples, n_components)
        The training points mapped, ``K Omega^T``.
    objective_ : float
        eq. 14 (linear hinge) at ``dual_coef_``.
    kernel_ : Kernel
        The kernel function with the ``gamma`` used.
    n_iter_ : int
        L-BFGS iterations run.
    result_ : LMCAResult
        Everything ``solve_kernel_lmca`` returned.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    LMCA : The linear version.
    solve_kernel_lmca : The function behind ``fit``.

    Examples
    --------
    With a linear kernel, kernel LMCA learns a linear map of the inputs:

    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import KernelLMCA
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> klmca = KernelLMCA(n_components=2, kernel="poly", degree=1, coef0=0).fit(X, y)
    >>> klmca.dual_coef_.shape, klmca.embedding_.shape
    ((2, 30), (30, 2))
    >>> klmca.transform(X[:5]).shape
    (5, 2)
    >>> klmca.result_.status != "max_iter"
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale"}), None],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "init": [StrOptions(set(INITS)), np.ndarray],
        "hinge": [StrOptions(set(HINGES))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "callback": [callable, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "kernel_memory": [Interval(Real, 0, None, closed="left")],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, n_components=None, kernel="rbf", gamma=None, degree=3, coef0=1, k=3, mu=0.5,
                 init="kpca", hinge="linear", max_iter=1000, tol=1e-5, warm_start=False,
                 callback=None, verbose=0, random_state=None, kernel_memory=256, checkpoint=None,
                 checkpoint_interval=60.0):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.k = k
        self.mu = mu
        self.init = init
        self.hinge = hinge
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.callback = callback
        self.verbose = verbose
        self.random_state = random_state
        self.kernel_memory = kernel_memory
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the coefficients ``Omega`` minimising eq. 14 in the feature space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs; ``transform`` evaluates the kernel against them.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes, each with at least ``k + 1`` points.

        Returns
        -------
        self : KernelLMCA
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``y`` has one class, a class has ``k`` points or fewer, or
            ``warm_start`` continues from a fit on another number of points.

        Warns
        -----
        ConvergenceWarning
            If L-BFGS spends ``max_iter`` iterations before stopping by ``tol``.

        Examples
        --------
        With an RBF kernel the budget ``max_iter`` ends the fit:

        >>> import warnings
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.exceptions import ConvergenceWarning
        >>> from fast_solver import KernelLMCA
        >>> X, y = load_iris(return_X_y=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", ConvergenceWarning)
        ...     klmca = KernelLMCA(n_components=2, max_iter=50).fit(X[::5], y[::5])
        >>> klmca.n_iter_, klmca.result_.status
        (50, 'max_iter')
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        problem = labelled_problem(self, X, y)
        gamma = self.gamma
        if gamma == "scale":
            spread = float(problem.X.var())
            gamma = 1.0 / (problem.n_features * spread) if spread > 0 else None
        kernel = make_kernel(self.kernel, problem.n_features, gamma, self.degree, self.coef0)
        init, n_components = self.init, self.n_components
        if self.warm_start and hasattr(self, "dual_coef_"):  # as NCA: init and n_components ignored
            if self.dual_coef_.shape[1] != problem.n_samples:
                raise ValueError(f"warm_start continues from dual_coef_ over the {self.dual_coef_.shape[1]} "
                                 f"points of the last fit, but X has {problem.n_samples} rows; fit the "
                                 "same points or set warm_start=False.")
            init, n_components = self.dual_coef_, len(self.dual_coef_)
        result = solve_kernel_lmca(problem, kernel, n_components, init=init, hinge=self.hinge,
                                   tol=self.tol, max_iter=self.max_iter, random_state=self.random_state,
                                   kernel_memory=int(self.kernel_memory * 2**20), callback=self.callback,
                                   report=stage_table(type(self).__name__) if self.verbose else None,
                                   checkpoint=self.checkpoint, checkpoint_interval=self.checkpoint_interval)
        self.kernel_ = kernel
        self.X_fit_ = problem.X
        self.dual_coef_ = result.components
        self.embedding_ = result.embedding
        self.objective_ = result.objective
        self.n_iter_ = result.n_iter
        self.result_ = result
        warn_unless_stationary(self, result)
        return self

    def transform(self, X):
        """Map inputs into the learned space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real inputs with the features seen in ``fit``.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``k(X, X_fit_) Omega^T``, computed in blocks.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import KernelLMCA
        >>> X, y = load_iris(return_X_y=True)
        >>> X, y = X[::5], y[::5]
        >>> klmca = KernelLMCA(n_components=2, kernel="poly", degree=1, coef0=0).fit(X, y)
        >>> Z = klmca.transform(X)
        >>> Z.shape
        (30, 2)
        >>> bool(np.allclose(Z, klmca.embedding_))
        True
        """
        return kernel_transform(self.kernel_, self.X_fit_, self.dual_coef_, fitted_inputs(self, X))

    @property
    def _n_features_out(self):
        return self.dual_coef_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
