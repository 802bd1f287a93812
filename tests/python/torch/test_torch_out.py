"""out= / lse_out= with PyTorch tensors: the fast path (plan + caller outputs, read through the
DLPack C exchange API) on every dtype and on transposed cache views like transformers', against
the fp64 references; its refusals; the general path with a block table."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case, numpy_attention

torch = import_torch()

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_fast_path_heads_first_cache(rng, dtype):
    case = make_case(rng, [700, 700], q_heads=8, kv_heads=2, head_dim=64, spare=0)
    t = TORCH_DTYPES[dtype]
    q = torch.from_numpy(case.q).to(t)
    # transformers' layout [batch, kv_heads, kv_len, head_dim], read as [batch, kv_len, ...].
    k = torch.from_numpy(case.k).to(t).transpose(1, 2).contiguous().transpose(1, 2)
    v = torch.from_numpy(case.v).to(t).transpose(1, 2).contiguous().transpose(1, 2)
    plan = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=2, head_dim=64)
    out, lse = torch.empty_like(q), torch.empty(2, 8)
    ptr = out.data_ptr()
    got, got_lse = leanattn.decode(q, k, v, plan=plan, out=out, lse_out=lse, scale=0.1)
    assert got is out and got_lse is lse and out.data_ptr() == ptr
    ref, ref_lse = numpy_attention(q, k, v, case.seq_lens, scale=0.1)
    assert_close(out, ref, dtype, lse, ref_lse)
    assert leanattn.decode(q, k, v, plan=plan, out=out) is out


def test_fast_path_inputs_requiring_grad(rng):
    case = make_case(rng, [50], q_heads=4, kv_heads=4, head_dim=32)
    q = torch.from_numpy(case.q).requires_grad_()
    k, v = torch.from_numpy(case.k), torch.from_numpy(case.v)
    plan = leanattn.plan(case.seq_lens, q_heads=4, kv_heads=4, head_dim=32)
    out = leanattn.decode(q, k, v, plan=plan, out=torch.empty(1, 4, 32))
    assert_close(out, numpy_attention(*case.args())[0], "float32")


def test_fast_path_refusals(rng):
    case = make_case(rng, [50, 3], q_heads=4, kv_heads=2, head_dim=32)
    q, k, v = (torch.from_numpy(x) for x in (case.q, case.k, case.v))
    plan = leanattn.plan(case.seq_lens, q_heads=4, kv_heads=2, head_dim=32)
    with pytest.raises(ValueError, match="^out: "):
        leanattn.decode(q, k, v, plan=plan, out=torch.empty(2, 4, 16))
    with pytest.raises(TypeError, match="^out: "):
        leanattn.decode(q, k, v, plan=plan, out=torch.empty(2, 4, 32, dtype=torch.float16))
    with pytest.raises(ValueError, match="^out: .*overlap q"):
        leanattn.decode(q, k, v, plan=plan, out=q)
    with pytest.raises(ValueError, match="^lse_out: "):
        leanattn.decode(q, k, v, plan=plan, out=torch.empty_like(q), lse_out=torch.empty(2, 5))
    other = leanattn.plan([50, 4], q_heads=4, kv_heads=2, head_dim=32)
    with pytest.raises(ValueError, match="^seq_lens: "):  # the plan's lengths exceed capacity
        leanattn.decode(q[:, :, :], k[:, :3], v[:, :3], plan=other, out=torch.empty_like(q))


def test_general_path_paged_out(rng):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, page_size=16)
    q, k, v = (torch.from_numpy(x) for x in (case.q, case.k, case.v))
    out, lse = torch.full_like(q, 5.0), torch.empty(3, 8)
    leanattn.decode(q, k, v, torch.from_numpy(case.seq_lens), out=out, lse_out=lse,
                    block_table=torch.from_numpy(case.block_table))
    ref, ref_lse = numpy_attention(*case.args(), case.block_table)
    assert_close(out, ref, "float32", lse, ref_lse)
    assert np.isneginf(lse[1].numpy()).all()
