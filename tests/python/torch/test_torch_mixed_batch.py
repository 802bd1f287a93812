"""Mixed batches (query_start_loc) with PyTorch tensors: leanattn.decode and the torch op,
eager and under torch.compile(fullgraph=True), against the fp64 definition; the fake
implementation's shapes."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close, import_torch, make_case

torch = import_torch()
import leanattn  # noqa: E402  (after torch: registers the ops)
import leanattn.torch_ops  # noqa: E402,F401

from test_mixed_batch import COUNTS, LENS, numpy_mixed, starts_of  # noqa: E402


def packed(rng, dtype="float32", page_size=None):
    case = make_case(rng, LENS, q_heads=8, kv_heads=2, head_dim=64, dtype=dtype,
                     page_size=page_size)
    q = rng.standard_normal((sum(COUNTS), 8, 64)).astype(case.q.dtype)
    table = None if case.block_table is None else torch.from_numpy(case.block_table)
    return (case, q, torch.from_numpy(q), torch.from_numpy(case.k), torch.from_numpy(case.v),
            torch.from_numpy(case.seq_lens), table, torch.from_numpy(starts_of(COUNTS)))


@pytest.mark.parametrize("page_size", [None, 16])
def test_decode_and_op_match_fp64(rng, page_size):
    case, q_np, q, k, v, lens, table, starts = packed(rng, page_size=page_size)
    want, want_lse = numpy_mixed(q_np, case.k, case.v, case.seq_lens, starts.numpy(),
                                 case.block_table)
    out, lse = leanattn.decode(q, k, v, lens, block_table=table, query_start_loc=starts,
                               return_lse=True)
    assert_close(out, want, "float32", lse, want_lse)
    out, lse = torch.ops.leanattn.decode(q, k, v, lens, table, query_start_loc=starts)
    assert out.shape == q.shape and lse.shape == q.shape[:2]
    assert_close(out, want, "float32", lse, want_lse)


def test_bfloat16_tensors(rng):
    case, q_np, q, k, v, lens, _, starts = packed(rng)
    q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    want, want_lse = numpy_mixed(q, k, v, lens.numpy(), starts.numpy())
    out, lse = torch.ops.leanattn.decode(q, k, v, lens, query_start_loc=starts)
    assert out.dtype == torch.bfloat16
    assert_close(out, want, "bfloat16", lse, want_lse)


def test_fake_shapes_and_compile_fullgraph(rng):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q, k = torch.empty(137, 8, 64), torch.empty(7, 700, 2, 64)
        out, lse = torch.ops.leanattn.decode(q, k, k, torch.empty(7, dtype=torch.int32),
                                             query_start_loc=torch.empty(8, dtype=torch.int32))
        assert out.shape == (137, 8, 64) and lse.shape == (137, 8)

    case, _, q, k, v, lens, _, starts = packed(rng)

    def step(q, k, v, lens, starts):
        out, lse = torch.ops.leanattn.decode(q, k, v, lens, query_start_loc=starts)
        return out * 2.0, lse

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v, lens, starts)
    want = step(q, k, v, lens, starts)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    assert np.isfinite(got[1].numpy()[:120]).all()


def test_op_plan_device_refuses_query_start_loc(rng):
    """The op's steps take one q_len: a mixed step is leanattn.DecodeStep(query_start_loc=)."""
    _, _, q, k, v, lens, _, starts = packed(rng)
    with pytest.raises(ValueError, match="^query_start_loc: plan='device' takes one q_len"):
        torch.ops.leanattn.decode(q, k, v, lens, query_start_loc=starts, plan="device",
                                  max_seq_len=700)
