"""Where a large block of distances falls below a threshold, when that is rare.

The impostor searches of ``lmnn_sdp.core.problem`` and ``fast_solver`` compare blocks of
millions of distances with a radius and keep the few below it. ``np.nonzero`` of the
comparison walks every flag; ``below`` scans them eight at a time as 64-bit words and
unpacks only the nonzero words.
"""

from __future__ import annotations

import numpy as np


def below(values: np.ndarray, threshold: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns where ``values < threshold``, as ``np.nonzero`` orders them.

    Parameters
    ----------
    values : ndarray of shape (b, m)
    threshold : ndarray broadcastable to (b, m)
        For example (b, 1), one threshold a row, or (1, m), one a column.
    flags : ndarray of bool
        A buffer of at least ``b m`` bytes rounded up to whole 8-byte words; overwritten.

    Returns
    -------
    rows, cols : ndarray of int of shape (h,)

    Examples
    --------
    >>> import numpy as np
    >>> values = np.array([[0.5, 2.0, 0.1], [3.0, 0.2, 4.0]])
    >>> rows, cols = below(values, np.array([[1.0], [0.5]]), np.empty(8, dtype=bool))
    >>> rows.tolist(), cols.tolist()
    ([0, 0, 1], [0, 2, 1])
    """
    b, m = values.shape
    np.less(values, threshold, out=flags[:b * m].reshape(b, m))
    used = -(-b * m // 8) * 8
    flags[b * m:used] = False
    words = np.flatnonzero(flags[:used].view(np.uint64))
    word, bit = np.nonzero(flags[:used].reshape(-1, 8)[words])
    return np.divmod(words[word] * 8 + bit, m)


def flag_buffer(size: int) -> np.ndarray:
    """A ``below`` buffer for blocks of up to ``size`` values: whole 8-byte words."""
    return np.empty(-(-size // 8) * 8, dtype=bool)
