"""leanattn.reference (the C++ fp64 reference) against the NumPy fp64 attention of conftest.py,
on every dtype and layout, strided inputs, empty sequences and a user scale."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import DTYPES, make_case, numpy_attention


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("page_size", [None, 1, 5])
def test_matches_numpy(rng, dtype, page_size):
    case = make_case(rng, [33, 0, 70, 1], q_heads=6, kv_heads=3, head_dim=48, dtype=dtype,
                     page_size=page_size)
    out, lse = leanattn.reference(*case.args(), block_table=case.block_table, return_lse=True)
    want, want_lse = numpy_attention(*case.args(), block_table=case.block_table)
    assert out.dtype == np.float64 and lse.dtype == np.float64
    assert out.shape == case.q.shape and lse.shape == case.q.shape[:2]
    np.testing.assert_allclose(out, want, atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(lse, want_lse, atol=1e-12, rtol=1e-12)
    assert np.all(out[1] == 0) and np.all(np.isneginf(lse[1]))


def test_scale_and_strides(rng):
    case = make_case(rng, [40, 12], q_heads=4, kv_heads=2, head_dim=32)
    k = np.ascontiguousarray(case.k.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    out = leanattn.reference(case.q, k, case.v, case.seq_lens, scale=0.25)
    want, _ = numpy_attention(*case.args(), scale=0.25)
    np.testing.assert_allclose(out, want, atol=1e-12, rtol=1e-12)


def test_returns_out_only_by_default(rng):
    case = make_case(rng, [3])
    assert isinstance(leanattn.reference(*case.args()), np.ndarray)
