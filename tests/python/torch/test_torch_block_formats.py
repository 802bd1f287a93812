"""ggml's block formats (q8_0, q4_0) as PyTorch tensors: leanattn.quantize_kv returns uint8 CPU
tensors of ggml's bytes for torch input; leanattn.decode and torch.ops.leanattn.decode / decode_
read uint8 tensor caches on the CPU with kv_dtype=, with the same result as the NumPy path on the
same bytes (tests/python/test_block_formats.py checks that one against the references); K and V
of different types (v_dtype=, every pair of f16, q8_0 and q4_0) the same way."""

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


MIXED_PAIRS = [(k, v) for k in ("f16", "q8_0", "q4_0") for v in ("f16", "q8_0", "q4_0") if k != v]


def torch_cache(x, kind):
    """x (float32 NumPy) as a CPU tensor cache of kind "f16" or ggml's blocks, and the float64
    values it holds."""
    if kind == "f16":
        cache = torch.from_numpy(x.astype(np.float16))
        return cache, cache.double().numpy()
    cache, _ = leanattn.quantize_kv(torch.from_numpy(x), kind)
    return cache, leanattn.dequantize_kv(cache, None, kind).astype(np.float64)


@pytest.mark.parametrize("k_kind,v_kind", MIXED_PAIRS)
@pytest.mark.parametrize("page_size", [None, 16])
def test_k_and_v_of_different_types(rng, k_kind, v_kind, page_size):
    """v_dtype= through leanattn.decode and the ops on tensors: the NumPy path's result on the
    same caches, and a NumPy fp64 attention on the values they hold (outputs poisoned)."""
    case = make_case(rng, [90, 0, 33], q_heads=8, kv_heads=2, head_dim=64, page_size=page_size)
    kc, k64 = torch_cache(case.k, k_kind)
    vc, v64 = torch_cache(case.v, v_kind)
    kinds = dict(kv_dtype=None if k_kind == "f16" else k_kind, v_dtype=v_kind)
    table_np = case.block_table
    table = None if table_np is None else torch.from_numpy(table_np)
    q, lens = torch.from_numpy(case.q), torch.from_numpy(case.seq_lens)

    want = leanattn.decode(case.q, kc.numpy(), vc.numpy(), case.seq_lens, block_table=table_np,
                           workers=2, tile=16, **kinds)
    out = leanattn.decode(q, kc, vc, lens, block_table=table, workers=2, tile=16, **kinds)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), want)

    ref, ref_lse = numpy_attention(case.q, k64, v64, case.seq_lens, table_np)
    out, lse = torch.ops.leanattn.decode(q, kc, vc, lens, table, None, **kinds)
    assert_close(out, ref, "float32", lse, ref_lse)
    out = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:2], float("nan"))
    torch.ops.leanattn.decode_(q, kc, vc, lens, out, lse, table, **kinds)
    assert_close(out, ref, "float32", lse, ref_lse)


def test_a_refused_type_pair_is_named_through_the_op(rng):
    case = make_case(rng, [20], q_heads=4, kv_heads=2, head_dim=64)
    q, lens = torch.from_numpy(case.q), torch.from_numpy(case.seq_lens)
    k = torch.from_numpy(case.k).bfloat16()
    vq, _ = leanattn.quantize_kv(torch.from_numpy(case.v), "q8_0")
    with pytest.raises(ValueError, match="^v_dtype: V's type may differ from K's only when both "
                                         "are f16, q8_0 or q4_0 .*got K bf16, V q8_0$"):
        torch.ops.leanattn.decode(q, k, vq, lens, v_dtype="q8_0")
    with pytest.raises(TypeError, match="^v_cache: v_dtype='f16' needs a float16 cache"):
        leanattn.decode(q, vq, k, lens, kv_dtype="q8_0", v_dtype="f16")
