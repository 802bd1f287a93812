"""leanattn.merge_states: merging results over disjoint key sets equals attention over their
union; the merge rules of core/softmax_state.hpp for empty states and NaN; dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import DTYPES, assert_close, make_case, np_dtype, numpy_attention


@pytest.mark.parametrize("dtype", DTYPES)
def test_merging_two_halves_gives_the_whole(rng, dtype):
    """Cascade attention: a shared prefix cache and per-request suffixes."""
    case = make_case(rng, [300, 64, 0, 9], q_heads=8, kv_heads=2, head_dim=64, dtype=dtype)
    split = np.array([100, 64, 0, 0], np.int32)
    prefix_lens, suffix_lens = split, case.seq_lens - split
    suffix_k = np.stack([np.roll(case.k[b], -int(split[b]), axis=0) for b in range(4)])
    suffix_v = np.stack([np.roll(case.v[b], -int(split[b]), axis=0) for b in range(4)])
    out_a, lse_a = leanattn.decode(case.q, case.k, case.v, prefix_lens, return_lse=True)
    out_b, lse_b = leanattn.decode(case.q, suffix_k, suffix_v, suffix_lens, return_lse=True)
    out, lse = leanattn.merge_states(out_a, lse_a, out_b, lse_b)
    assert out.dtype == np_dtype(dtype) and lse.dtype == np.float32
    assert out.shape == case.q.shape and lse.shape == case.q.shape[:2]
    ref, ref_lse = numpy_attention(*case.args())
    atol = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 2.5e-2}[dtype]
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=atol, rtol=atol)
    assert np.array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[finite], ref_lse[finite], atol=1e-3)


def test_formula_in_float64(rng):
    out_a, out_b = rng.standard_normal((2, 5, 3, 16))
    lse_a, lse_b = rng.standard_normal((2, 5, 3)) * 4
    out, lse = leanattn.merge_states(out_a, lse_a, out_b, lse_b)
    want_lse = np.logaddexp(lse_a, lse_b)
    want = (np.exp(lse_a - want_lse)[..., None] * out_a
            + np.exp(lse_b - want_lse)[..., None] * out_b)
    assert out.dtype == np.float64 and lse.dtype == np.float64
    np.testing.assert_allclose(lse, want_lse, rtol=1e-14)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)


def test_empty_state_is_the_identity_and_two_empty_states_stay_empty(rng):
    out_a = rng.standard_normal((4, 32)).astype(np.float32)
    lse_a = rng.standard_normal(4).astype(np.float32)
    empty_out = np.zeros((4, 32), np.float32)
    empty_lse = np.full(4, -np.inf, np.float32)
    out, lse = leanattn.merge_states(out_a, lse_a, empty_out, empty_lse)
    np.testing.assert_array_equal(out, out_a)
    np.testing.assert_array_equal(lse, lse_a)
    out, lse = leanattn.merge_states(empty_out, empty_lse, out_a, lse_a)
    np.testing.assert_array_equal(out, out_a)
    np.testing.assert_array_equal(lse, lse_a)
    out, lse = leanattn.merge_states(empty_out, empty_lse, empty_out, empty_lse)
    assert np.all(out == 0) and np.all(np.isneginf(lse))


def test_nan_propagates_to_its_row_only(rng):
    out_a, out_b = rng.standard_normal((2, 3, 16)).astype(np.float32)
    lse_a, lse_b = rng.standard_normal((2, 3)).astype(np.float32)
    lse_a[1] = np.nan
    out, lse = leanattn.merge_states(out_a, lse_a, out_b, lse_b)
    assert np.isnan(lse[1]) and np.all(np.isnan(out[1]))
    assert np.all(np.isfinite(out[[0, 2]])) and np.all(np.isfinite(lse[[0, 2]]))
    lse_a[1], lse_b[2] = 0.5, np.nan
    out, lse = leanattn.merge_states(out_a, lse_a, out_b, lse_b)
    assert np.isnan(lse[2]) and np.all(np.isnan(out[2])) and np.isfinite(lse[1])


def test_strided_inputs_and_lists(rng):
    big = rng.standard_normal((4, 6, 32)).astype(np.float32)
    out_a = big[:, ::2]  # not contiguous
    lse_a = np.zeros((4, 3), np.float32)
    out, lse = leanattn.merge_states(out_a, lse_a, out_a.copy(), lse_a.copy())
    np.testing.assert_allclose(out, out_a, rtol=1e-6)
    np.testing.assert_allclose(lse, np.log(2.0), rtol=1e-6)
    out, lse = leanattn.merge_states([[1.0, 2.0]], [0.0], [[3.0, 4.0]], [0.0])
    np.testing.assert_allclose(out, [[2.0, 3.0]])


def test_errors():
    a, la = np.zeros((2, 16), np.float32), np.zeros(2, np.float32)
    with pytest.raises(ValueError, match="^out_b: "):
        leanattn.merge_states(a, la, np.zeros((3, 16), np.float32), la)
    with pytest.raises(ValueError, match="^lse_a: "):
        leanattn.merge_states(a, np.zeros(3, np.float32), a, la)
    with pytest.raises(ValueError, match="^lse_b: "):
        leanattn.merge_states(a, la, a, np.zeros((2, 1), np.float32))
    with pytest.raises(TypeError, match="^out_b: "):
        leanattn.merge_states(a, la, a.astype(np.float16), la)
    with pytest.raises(TypeError, match="^out_a: "):
        leanattn.merge_states(a.astype(np.int32), la, a.astype(np.int32), la)
    with pytest.raises(TypeError, match="^lse_a: "):
        leanattn.merge_states(a, la.astype(np.float16), a, la.astype(np.float16))
    with pytest.raises(TypeError, match="^lse_b: "):
        leanattn.merge_states(a, la, a, la.astype(np.float64))
    with pytest.raises(ValueError, match="^out_a: "):
        leanattn.merge_states(np.float32(1.0), la, a, la)
