"""Where a large block of distances falls below a threshold, when that is rare.

The impostor searches of ``lmnn_sdp.core.problem`` and ``fast_solver`` compare blocks of
millions of distances with a radius and keep the few below it. ``np.nonzero`` of the
comparison walks every flag; ``below`` scans them eight at a time as 64-bit words and
unpacks only the nonzero words.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def float32_tiles(row_factors: np.ndarray, col_factors: np.ndarray, block_bytes: int,
                  panel_bytes: int) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """The product ``row_factors @ col_factors.T`` tile by tile, each tile with a ``below`` buffer.

    Columns are cut into tiles whose factors fit in ``panel_bytes``, so the panel that every
    block's product reads stays in cache however many columns there are; rows into blocks whose
    products fit in ``block_bytes``, so a tile stays in cache for the scans after its product
    (``docs/design/fast-lmnn-solver.md``, "Block sizes"). Tiles come block by block, columns
    in order within a block.

    Parameters
    ----------
    row_factors : ndarray of float32 of shape (b, h)
    col_factors : ndarray of float32 of shape (m, h)
    block_bytes, panel_bytes : int

    Yields
    ------
    start, first : int
        The tile's first row and first column.
    product : ndarray of float32 of shape (b', m')
        ``row_factors[start:start + b'] @ col_factors[first:first + m'].T``; a view of one buffer
        that the next tile overwrites.
    flags : ndarray of bool
        A ``below`` buffer for ``product``.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = np.ones((3, 2), dtype=np.float32), np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> [(start, first, product.tolist()) for start, first, product, _ in float32_tiles(rows, cols, 16, 16)]
    [(0, 0, [[1.0, 5.0], [1.0, 5.0]]), (0, 2, [[9.0, 13.0], [9.0, 13.0]]), (2, 0, [[1.0, 5.0]]), (2, 2, [[9.0, 13.0]])]
    """
    panel = np.ascontiguousarray(col_factors.T)
    width = max(1, min(len(col_factors), panel_bytes // (4 * max(len(panel), 1))))
    block = max(1, block_bytes // (4 * width))
    gram = np.empty((min(block, len(row_factors)), width), dtype=np.float32)
    flags = flag_buffer(gram.size)
    for start in range(0, len(row_factors), block):
        rows = row_factors[start:start + block]
        for first in range(0, len(col_factors), width):
            tile = panel[:, first:first + width]
            yield start, first, np.matmul(rows, tile, out=gram[:len(rows), :tile.shape[1]]), flags
