"""The flag scan of ``lmnn_sdp.core.hits`` against ``np.nonzero``."""

from __future__ import annotations

import numpy as np
import pytest

from lmnn_sdp.core.hits import below, flag_buffer


@pytest.mark.parametrize("shape", [(7, 13), (1, 1), (16, 8), (3, 5)])
@pytest.mark.parametrize("per", ["row", "column"])
def test_flag_scan_equals_nonzero_with_a_dirty_buffer(shape, per):
    rng = np.random.default_rng(sum(shape))
    values = rng.normal(size=shape)
    threshold = rng.normal(size=(shape[0], 1) if per == "row" else (1, shape[1])) - 1.0
    flags = flag_buffer(shape[0] * shape[1] + 9)
    flags[:] = True  # stale hits everywhere
    r, o = below(values, threshold, flags)
    expected_r, expected_o = np.nonzero(values < threshold)
    assert len(expected_r) > 0 or shape == (1, 1)
    np.testing.assert_array_equal(r, expected_r)
    np.testing.assert_array_equal(o, expected_o)
