"""8-bit KV caches as PyTorch tensors (issue 18): torch.float8_e4m3fn / float8_e5m2 caches need no
kv_dtype, uint8 views of them take an explicit one, int8 caches with per-token scales, scales as
tensors; leanattn.quantize_kv returns torch tensors for torch input; each against
leanattn.reference and against the same bytes as NumPy arrays."""

import numpy as np
import pytest

import leanattn
from conftest import import_torch

torch = import_torch()


def make(seed=0, lens=(90, 0, 33), q_heads=8, kv_heads=2, d=64):
    g = torch.Generator().manual_seed(seed)
    cap = max(lens) + 2
    q = torch.randn(len(lens), q_heads, d, generator=g, dtype=torch.float32).to(torch.bfloat16)
    k = torch.randn(len(lens), cap, kv_heads, d, generator=g)
    v = torch.randn(len(lens), cap, kv_heads, d, generator=g)
    return q, k, v, torch.tensor(lens, dtype=torch.int32)


@pytest.mark.parametrize("kv_dtype,name", [("fp8_e4m3", "float8_e4m3fn"),
                                           ("fp8_e5m2", "float8_e5m2")])
def test_float8_tensors_and_their_uint8_views(kv_dtype, name):
    if not hasattr(torch, name):
        pytest.skip(f"this torch has no {name}")
    q, k, v, lens = make(1)
    kq, ks = leanattn.quantize_kv(k, kv_dtype, "per_kv_head")
    vq, vs = leanattn.quantize_kv(v, kv_dtype, "per_kv_head")
    assert kq.dtype == getattr(torch, name) and ks.dtype == torch.float32
    # torch's own cast of the scaled values gives the same bytes.
    want = (k / ks[:, None]).to(getattr(torch, name))
    assert torch.equal(kq.view(torch.uint8), want.view(torch.uint8))
    out = leanattn.decode(q, kq, vq, lens, k_scale=ks, v_scale=vs)
    assert out.dtype == torch.bfloat16
    bytes_out = leanattn.decode(q, kq.view(torch.uint8), vq.view(torch.uint8), lens,
                                kv_dtype=kv_dtype, k_scale=ks, v_scale=vs)
    assert torch.equal(out, bytes_out)
    ref = leanattn.reference(q, kq, vq, lens, k_scale=ks, v_scale=vs)
    np.testing.assert_allclose(out.float().numpy(), ref, rtol=1e-2, atol=1e-2)


def test_int8_tensors_with_per_token_scales_match_numpy():
    q, k, v, lens = make(2)
    kq, ks = leanattn.quantize_kv(k, "int8")
    vq, vs = leanattn.quantize_kv(v, "int8")
    assert kq.dtype == torch.int8 and ks.shape == k.shape[:3]
    out = leanattn.decode(q, kq, vq, lens, k_scale=ks, v_scale=vs, workers=2, tile=16)
    q32 = q.float()
    out_np = leanattn.decode(q32.numpy(), kq.numpy(), vq.numpy(), lens.numpy(), k_scale=ks.numpy(),
                             v_scale=vs.numpy(), workers=2, tile=16)
    ref = leanattn.reference(q32.numpy(), kq.numpy(), vq.numpy(), lens.numpy(),
                             k_scale=ks.numpy(), v_scale=vs.numpy())
    np.testing.assert_allclose(out_np, ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out.float().numpy(), ref, rtol=1e-2, atol=1e-2)


def test_a_float8_cache_without_scales_is_refused():
    name = "float8_e4m3fn"
    if not hasattr(torch, name):
        pytest.skip(f"this torch has no {name}")
    q, k, v, lens = make(3)
    kq, _ = leanattn.quantize_kv(k, "fp8_e4m3")
    with pytest.raises(ValueError, match="^k_scale: is required"):
        leanattn.decode(q, kq, kq, lens)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_with_an_8bit_cache_and_cuda_scales():
    """quantize_kv's tensors moved to the GPU, scales included: read there by the CUDA kernel (every
    layout: test_torch_device_arrays.py)."""
    if "cuda" not in leanattn.backends:
        pytest.skip("the CUDA backend is not built")
    q, k, v, lens = make(4)
    kq, ks = leanattn.quantize_kv(k, "int8")
    vq, vs = leanattn.quantize_kv(v, "int8")
    out = leanattn.decode(q.cuda(), kq.cuda(), vq.cuda(), lens, k_scale=ks.cuda(),
                          v_scale=vs.cuda())
    assert out.is_cuda and out.dtype == torch.bfloat16
    ref = leanattn.reference(q, kq, vq, lens, k_scale=ks, v_scale=vs)
    np.testing.assert_allclose(out.cpu().float().numpy(), ref, rtol=1e-2, atol=1e-2)
