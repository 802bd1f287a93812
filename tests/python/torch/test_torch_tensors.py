"""PyTorch tensors in and out (the torch stage, scripts/test-torch.sh): CPU tensors of every dtype,
strided views, torch index tensors, merge_states; CUDA tensors when a GPU and the CUDA backend
are there (and a clear error when only the GPU is), with a window and a soft-cap (sinks, ALiBi
and 8-bit scales as CUDA tensors: test_torch_device_arrays.py)."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case, numpy_attention

torch = import_torch()

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def as_torch(case, dtype):
    t = TORCH_DTYPES[dtype]
    q, k, v = (torch.from_numpy(x.astype(np.float32)).to(t) for x in (case.q, case.k, case.v))
    return q, k, v


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("page_size", [None, 16])
def test_cpu_tensors(rng, dtype, page_size):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, page_size=page_size)
    q, k, v = as_torch(case, dtype)
    lens = torch.from_numpy(case.seq_lens)
    table = None if case.block_table is None else torch.from_numpy(case.block_table)
    out, lse = leanattn.decode(q, k, v, lens, block_table=table, workers=3, return_lse=True)
    assert isinstance(out, torch.Tensor) and out.dtype == q.dtype and out.device == q.device
    assert isinstance(lse, torch.Tensor) and lse.dtype == torch.float32
    ref, ref_lse = leanattn.reference(q, k, v, lens, block_table=table, return_lse=True)
    assert_close(out, ref, dtype, lse, ref_lse)
    mine, mine_lse = numpy_attention(q, k, v, case.seq_lens, case.block_table)
    assert_close(out, mine, dtype, lse, mine_lse)


def test_strided_cpu_tensors(rng):
    case = make_case(rng, [50, 9], q_heads=4, kv_heads=2, head_dim=32)
    q, k, v = as_torch(case, "float32")
    q_strided = torch.zeros(2, 8, 32)
    q_strided[:, ::2] = q
    k_heads_first = k.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    out = leanattn.decode(q_strided[:, ::2], k_heads_first, v.expand(2, -1, -1, -1),
                          [50, 9])
    assert_close(out, leanattn.reference(*case.args()), "float32")
    with pytest.raises(ValueError, match="^q: "):
        leanattn.decode(q.transpose(1, 2).contiguous().transpose(1, 2), k, v, [50, 9])


def test_merge_states(rng):
    a, b = torch.randn(2, 3, 16), torch.randn(2, 3, 16)
    la, lb = torch.randn(2, 3), torch.randn(2, 3)
    out, lse = leanattn.merge_states(a, la, b, lb)
    assert isinstance(out, torch.Tensor) and isinstance(lse, torch.Tensor)
    want_lse = torch.logaddexp(la, lb)
    want = torch.exp(la - want_lse)[..., None] * a + torch.exp(lb - want_lse)[..., None] * b
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(lse, want_lse)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors(rng):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, page_size=16)
    q, k, v = (x.cuda() for x in as_torch(case, "float16"))
    table = torch.from_numpy(case.block_table)
    if "cuda" not in leanattn.backends:
        with pytest.raises(ValueError, match="^q: "):
            leanattn.decode(q, k, v, case.seq_lens, block_table=table.cuda())
        return
    out, lse = leanattn.decode(q, k, v, case.seq_lens, block_table=table.cuda(),
                               return_lse=True)
    assert out.is_cuda and lse.is_cuda
    ref, ref_lse = leanattn.reference(q, k, v, case.seq_lens, block_table=table,
                                      return_lse=True)
    assert_close(out.cpu(), ref, "float16", lse.cpu(), ref_lse)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_with_variants(rng):
    """A window and a soft-cap run on the CUDA backend against the reference (with sinks and
    ALiBi: test_torch_device_arrays.py)."""
    if "cuda" not in leanattn.backends:
        pytest.skip("the CUDA backend is not built")
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, page_size=16)
    q, k, v = (x.cuda() for x in as_torch(case, "float16"))
    table = torch.from_numpy(case.block_table)
    out, lse = leanattn.decode(q, k, v, case.seq_lens, block_table=table.cuda(),
                               window_left=40, softcap=30.0, return_lse=True)
    ref, ref_lse = leanattn.reference(q, k, v, case.seq_lens, block_table=table,
                                      window_left=40, softcap=30.0, return_lse=True)
    assert_close(out.cpu(), ref, "float16", lse.cpu(), ref_lse)
