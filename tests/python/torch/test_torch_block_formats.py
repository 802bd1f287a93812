"""ggml's block formats (q8_0, q4_0) as PyTorch tensors: leanattn.quantize_kv returns uint8 CPU
tensors of ggml's bytes for torch input; leanattn.decode and torch.ops.leanattn.decode / decode_
read uint8 tensor caches on the CPU with kv_dtype=, with the same result as the NumPy path on the
same bytes (tests/python/test_block_formats.py checks that one against the references)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close, import_torch, make_case, numpy_attention

torch = import_torch()
import leanattn  # noqa: E402  (after torch: registers the ops)
import leanattn.torch_ops  # noqa: E402,F401


@pytest.mark.parametrize("kv_dtype", ["q8_0", "q4_0"])
@pytest.mark.parametrize("page_size", [None, 16])
def test_uint8_tensor_caches(rng, kv_dtype, page_size):
    case = make_case(rng, [90, 0, 33], q_heads=8, kv_heads=2, head_dim=64, page_size=page_size)
    kq, ks = leanattn.quantize_kv(torch.from_numpy(case.k), kv_dtype)
    vq, vs = leanattn.quantize_kv(torch.from_numpy(case.v), kv_dtype)
    assert ks is None and vs is None
    assert kq.dtype == torch.uint8 and kq.shape[-1] == 2 * (34 if kv_dtype == "q8_0" else 18)
    k_np, _ = leanattn.quantize_kv(case.k, kv_dtype)
    v_np, _ = leanattn.quantize_kv(case.v, kv_dtype)
    np.testing.assert_array_equal(kq.numpy(), k_np)
    table_np = case.block_table
    table = None if table_np is None else torch.from_numpy(table_np)
    q, lens = torch.from_numpy(case.q), torch.from_numpy(case.seq_lens)

    want = leanattn.decode(case.q, k_np, v_np, case.seq_lens, block_table=table_np,
                           kv_dtype=kv_dtype, workers=2, tile=16)
    out = leanattn.decode(q, kq, vq, lens, block_table=table, kv_dtype=kv_dtype, workers=2,
                          tile=16)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), want)

    k64 = leanattn.dequantize_kv(kq, None, kv_dtype).astype(np.float64)
    v64 = leanattn.dequantize_kv(vq, None, kv_dtype).astype(np.float64)
    ref, ref_lse = numpy_attention(case.q, k64, v64, case.seq_lens, table_np)
    out, lse = torch.ops.leanattn.decode(q, kq, vq, lens, table, None, kv_dtype=kv_dtype)
    assert_close(out, ref, "float32", lse, ref_lse)
    out = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:2], float("nan"))
    torch.ops.leanattn.decode_(q, kq, vq, lens, out, lse, table, kv_dtype=kv_dtype)
    assert_close(out, ref, "float32", lse, ref_lse)


def test_a_uint8_tensor_cache_with_a_wrong_row_is_refused(rng):
    case = make_case(rng, [20], q_heads=4, kv_heads=2, head_dim=64)
    kq, _ = leanattn.quantize_kv(torch.from_numpy(case.k), "q4_0")
    q, lens = torch.from_numpy(case.q), torch.from_numpy(case.seq_lens)
    with pytest.raises(ValueError, match=r"^k_cache: its last dimension .* q8_0 row"):
        leanattn.decode(q, kq, kq, lens, kv_dtype="q8_0")
    with pytest.raises(TypeError, match="^k_cache: a uint8 cache holds fp8 bytes"):
        leanattn.decode(q, kq, kq, lens)
