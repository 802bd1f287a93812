"""Caller-owned outputs (decode(..., out=, lse_out=)): results written in place, checked against
the fp64 references; bad outputs refused naming the argument; no allocation per call with a
reused plan (tracemalloc sees NumPy's buffers)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import leanattn
from conftest import assert_close, make_case, numpy_attention


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("use_plan", [False, True])
def test_out_written_in_place(rng, dtype, use_plan):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, dtype=dtype)
    out = np.full(case.q.shape, 7, case.q.dtype)
    lse = np.full(case.q.shape[:2], 7, np.float32)
    plan = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=2, head_dim=64) if use_plan else None
    lens = None if use_plan else case.seq_lens
    got, got_lse = leanattn.decode(case.q, case.k, case.v, lens, plan=plan, out=out, lse_out=lse)
    assert got is out and got_lse is lse
    ref, ref_lse = numpy_attention(*case.args())
    assert_close(out, ref, dtype, lse, ref_lse)


def test_out_strided_and_without_lse(rng):
    case = make_case(rng, [40, 9], q_heads=4, kv_heads=2, head_dim=32)
    big = np.zeros((2, 8, 32), np.float32)
    got = leanattn.decode(*case.args(), out=big[:, ::2])
    assert got.base is big
    assert_close(big[:, ::2], leanattn.reference(*case.args()), "float32")
    assert not big[:, 1::2].any()


def test_bad_outputs(rng):
    case = make_case(rng, [40, 9], q_heads=4, kv_heads=2, head_dim=32)
    q = case.q
    with pytest.raises(ValueError, match="^out: "):
        leanattn.decode(*case.args(), out=np.empty((2, 4, 16), np.float32))
    with pytest.raises(TypeError, match="^out: "):
        leanattn.decode(*case.args(), out=np.empty(q.shape, np.float16))
    with pytest.raises(ValueError, match="^out: "):
        leanattn.decode(*case.args(), out=np.empty((2, 32, 4), np.float32).transpose(0, 2, 1))
    with pytest.raises(ValueError, match="^out: .*overlap q"):
        leanattn.decode(*case.args(), out=q)
    with pytest.raises(ValueError, match="^out: .*overlap k_cache"):
        leanattn.decode(*case.args(), out=case.k[:, :4, 0, :])
    with pytest.raises(ValueError, match="^lse_out: "):
        leanattn.decode(*case.args(), out=np.empty_like(q), lse_out=np.empty((2, 3), np.float32))
    with pytest.raises(TypeError, match="^lse_out: "):
        leanattn.decode(*case.args(), out=np.empty_like(q), lse_out=np.empty((2, 4), np.float64))
    buf = np.empty(2 * 4 * 32 + 8, np.float32)
    out = buf[: 2 * 4 * 32].reshape(2, 4, 32)
    with pytest.raises(ValueError, match="^lse_out: .*overlap out"):
        leanattn.decode(*case.args(), out=out, lse_out=buf[:8].reshape(2, 4))
    with pytest.raises(ValueError, match="^seq_lens: "):
        leanattn.decode(case.q, case.k, case.v)


def test_no_allocation_with_plan_and_out(rng):
    case = make_case(rng, [4000], q_heads=32, kv_heads=8, head_dim=128)
    plan = leanattn.plan(case.seq_lens, q_heads=32, kv_heads=8, head_dim=128, workers=2)
    out, lse = np.empty_like(case.q), np.empty((1, 32), np.float32)
    for _ in range(3):
        leanattn.decode(case.q, case.k, case.v, plan=plan, out=out, lse_out=lse)
    tracemalloc.start()
    for _ in range(50):
        leanattn.decode(case.q, case.k, case.v, plan=plan, out=out, lse_out=lse)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # An output is 16 KiB: a per-call allocation of it would show; Python's own frames do not.
    assert peak < 4096, peak
    assert_close(out, leanattn.reference(*case.args()), "float32")
