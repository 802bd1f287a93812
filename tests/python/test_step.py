"""leanattn.DecodeStep on the CPU: one step made from arrays of the step's shapes, then called
with changing lengths (growing, shrinking, all empty, one long request, random) on a contiguous
and a paged cache, planned from the lengths each call is given ("device": the host is the CPU's
device) or by plan() ("host"); each result against the NumPy fp64 attention of conftest.py and
bitwise equal to leanattn.decode of the same lengths with the same workers; q_len > 1 with the
variants; V read from K's rows; every misuse refused by name. The CUDA steps (graphs captured
once and replayed) are tests/python/torch/test_torch_step.py's, run by the device check."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import (assert_close, make_case, numpy_attention, numpy_variant_attention,
                      replay_lengths)

BATCH, BOUND = 5, 200


def full_case(rng, page_size=None, **kw):
    """A case whose cache holds BOUND tokens for every request."""
    return make_case(rng, [BOUND] * BATCH, page_size=page_size, **kw)


@pytest.mark.parametrize("planning", ["device", "host"])
@pytest.mark.parametrize("page_size", [None, 16])
def test_one_step_replays_changing_lengths(rng, planning, page_size):
    case = full_case(rng, page_size, q_heads=8, kv_heads=2, head_dim=64, dtype="float16")
    q, k, v, table = case.q, case.k, case.v, case.block_table
    step = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, planning=planning,
                               block_table=table, workers=3)
    assert (step.planning, step.workers, step.batch, step.max_seq_len, step.tile) == (
        planning, 3, BATCH, BOUND, 256)  # d 64's default tile
    out = np.full(q.shape, np.nan, dtype=q.dtype)
    lse = np.full(q.shape[:2], np.nan, dtype=np.float32)
    for lens in replay_lengths(rng, 10):
        out.fill(np.nan)
        lse.fill(np.nan)
        if planning == "host":
            used = int(np.flatnonzero(lens)[-1]) + 1 if lens.any() else 0
            step.plan(lens[:used])  # requests past the given lengths are empty
            got = step(q, k, v, block_table=table, out=out, lse_out=lse)
        else:
            got = step(q, k, v, lens, block_table=table, out=out, lse_out=lse)
        assert got[0] is out and got[1] is lse
        ref, ref_lse = numpy_attention(q, k, v, lens, table)
        assert_close(out, ref, "float16", lse, ref_lse)
        want, want_lse = leanattn.decode(q, k, v, lens, block_table=table, workers=3,
                                         return_lse=True)
        assert np.array_equal(out, want) and np.array_equal(lse, want_lse, equal_nan=True), lens


def test_variants_and_query_tokens(rng):
    """q_len 3, a window, soft-cap, sinks and ALiBi; the arrays passed to every call."""
    case = full_case(rng, q_heads=4, kv_heads=2, head_dim=32)
    q = rng.standard_normal((BATCH, 3, 4, 32)).astype(np.float32)
    sinks = rng.standard_normal(4).astype(np.float32)
    slopes = np.abs(rng.standard_normal(4)).astype(np.float32) * 0.1
    kw = dict(window_left=40, softcap=5.0)
    step = leanattn.DecodeStep(q, case.k, case.v, max_seq_len=BOUND, sinks=sinks,
                               alibi_slopes=slopes, workers=2, **kw)
    out = np.empty((BATCH, 3, 4, 32), np.float32)
    lse = np.empty((BATCH, 3, 4), np.float32)
    for lens in ([3, 0, 200, 57, 4], [0, 0, 0, 0, 0], [199, 3, 0, 0, 100]):
        lens = np.asarray(lens, dtype=np.int32)
        out.fill(np.nan)
        lse.fill(np.nan)
        step(q, case.k, case.v, lens, sinks=sinks, alibi_slopes=slopes, out=out, lse_out=lse)
        ref, ref_lse = numpy_variant_attention(q, case.k, case.v, lens, sinks=sinks,
                                               alibi=slopes, **kw)
        assert_close(out, ref, "float32", lse, ref_lse)
    with pytest.raises(ValueError, match="^seq_lens: request 1 has length 2: must be 0 or in "
                                         r"\[q_len 3, the step's bound 200\]"):
        step(q, case.k, case.v, np.array([3, 2, 0, 0, 0], np.int32), sinks=sinks,
             alibi_slopes=slopes)


def test_v_from_k_rows(rng):
    """Absorbed MLA's latent cache: V the first head_dim_v values of K's rows."""
    case = full_case(rng, q_heads=8, kv_heads=1, head_dim=96)
    step = leanattn.DecodeStep(case.q, case.k, None, max_seq_len=BOUND, head_dim_v=64)
    lens = np.array([5, 200, 0, 17, 120], np.int32)
    out = np.full((BATCH, 8, 64), np.nan, np.float32)
    step(case.q, case.k, None, lens, out=out)
    assert step(case.q, case.k, None, lens).shape == (BATCH, 8, 64)
    ref, _ = numpy_attention(case.q, case.k, case.k[..., :64], lens)
    assert_close(out, ref, "float32")


def test_refusals_name_the_argument(rng):
    case = full_case(rng, q_heads=8, kv_heads=2, head_dim=64)
    q, k, v = case.q, case.k, case.v
    lens = np.array([10, 0, 200, 57, 1], np.int32)
    with pytest.raises(ValueError, match="^planning: must be 'device' or 'host'"):
        leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, planning="graph")
    with pytest.raises(ValueError, match="^max_seq_len: must be an int in"):
        leanattn.DecodeStep(q, k, v, max_seq_len=0)
    with pytest.raises(ValueError, match="^max_seq_len: every request of a step may have this "
                                         "many tokens, so: must be <= capacity"):
        leanattn.DecodeStep(q, k, v, max_seq_len=BOUND + 4)  # capacity BOUND + 3
    device = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND)
    host = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, planning="host")
    cases = [
        (lambda: device(q, k, v, np.array([10, 0, 201, 0, 0], np.int32)),
         r"^seq_lens: request 2 has length 201: must be 0 or in \[q_len 1, the step's bound"),
        (lambda: device(q, k, v, np.array([10, -1, 0, 0, 0], np.int32)),
         "^seq_lens: request 1 has length -1"),
        (lambda: host.plan([1, 2, 3, 4, 5, 6]),
         "^seq_lens: has 6 lengths, more than the step's batch capacity 5"),
        (lambda: device(q, k, v, lens[:3]), r"^seq_lens: must be a contiguous int32 array of "
                                            r"the step's batch, \[5\] \(got int32 \[3\]\)"),
        (lambda: device(q, k, v), "^seq_lens: required by a device-planned step"),
        (lambda: host(q, k, v, lens), "^seq_lens: a host-planned step takes its lengths"),
        (lambda: device.plan(lens), "^planning: the step is 'device'"),
        (lambda: device(q[:4], k[:4], v[:4], lens[:4]),
         r"^q: batch \(q.shape\[0\]\) must be the step's 5 \(got 4\)"),
        (lambda: device(q.astype(np.float16), k, v, lens), "^q: dtype differs from the step's"),
        (lambda: device(q[:, :4], k[:, :, :1], v[:, :, :1], lens), r"^q: q_heads \(the step's 8"),
        (lambda: device(q, k[:, :100], v[:, :100], np.minimum(lens, 100)),
         "^k_cache: shape differs from the step's"),
        (lambda: device(q, k, v, lens, sinks=np.zeros(8, np.float32)),
         "^sinks: given for one and not the other"),
        (lambda: device(q, k, v, lens, block_table=np.zeros((5, 13), np.int32)),
         "^block_table: given for one and not the other call"),
        (lambda: device(q, k, None, lens), "^v_cache: given for one and not the other"),
        (lambda: leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, tile=1 << 17), "^tile: "),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    # Refused lengths leave a host-planned step's last plan; before any plan() nothing is
    # written.
    out = np.full(q.shape, np.nan, np.float32)
    host(q, k, v, out=out)
    assert np.isnan(out).all()
    host.plan(lens)
    with pytest.raises(ValueError, match="^seq_lens: request 0 has length 201"):
        host.plan([201])
    host(q, k, v, out=out)
    assert_close(out, numpy_attention(q, k, v, lens)[0], "float32")


def test_keywords_beyond_decodes_are_refused_by_name(rng):
    # DecodeStep and reference take decode's keywords as **problem: any other is named.
    case = full_case(rng, q_heads=4, kv_heads=2, head_dim=32)
    with pytest.raises(TypeError, match="^softcapp: not one of the keywords of leanattn.decode"):
        leanattn.DecodeStep(case.q, case.k, case.v, max_seq_len=BOUND, softcapp=30.0)
    with pytest.raises(TypeError, match="^window: not one of the keywords of leanattn.decode"):
        leanattn.reference(case.q, case.k, case.v, case.seq_lens, window=8)
    # The keywords they do take reach the computation: a soft-capped reference differs.
    plain = leanattn.reference(case.q, case.k, case.v, case.seq_lens)
    capped = leanattn.reference(case.q, case.k, case.v, case.seq_lens, softcap=0.5)
    assert not np.allclose(plain, capped)
