"""K and V of different widths (issue 32): decode(..., head_dim_v=) with a V cache of its own,
narrower than K (DeepSeek's K 192 / V 128), and with V the first head_dim_v values of K's rows
(v_cache None: absorbed MLA's latent cache, K 576 / V 512), contiguous and paged, float32,
float16 and bfloat16, 8-bit and block-format caches, plans made for head_dim_v; against the
independent NumPy fp64 attention of conftest.py and leanattn.reference; and the errors that
name head_dim_v, v_cache, v_scale, v_dtype and out."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, make_case, np_dtype, numpy_attention, numpy_variant_attention

# 0, 1, odd lengths and a few tiles' worth (K 192 / V 128 plans 64-token tiles by default).
LENS = [0, 1, 77, 130, 3]
STRATEGIES = ["lean", "split", "head"]


def poisoned(shape, dtype):
    """An output buffer full of NaN: every element the call must write."""
    return np.full(shape, np.nan, dtype=np_dtype(dtype))


def shared_case(rng, lens, dtype, page_size=None, q_heads=16, head_dim=576):
    """An absorbed MLA step: one KV head, a latent cache of head_dim values per token."""
    return make_case(rng, lens, q_heads=q_heads, kv_heads=1, head_dim=head_dim, dtype=dtype,
                     page_size=page_size)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("page_size", [None, 16, 5])
def test_separate_v_narrower_than_k(rng, dtype, page_size):
    # DeepSeek V3 as transformers runs it: K 192 wide, V 128, GQA here to cover the groups.
    case = make_case(rng, LENS, q_heads=8, kv_heads=2, head_dim=192, dtype=dtype,
                     page_size=page_size, head_dim_v=128)
    want, want_lse = numpy_attention(*case.args(), block_table=case.block_table)
    ref, ref_lse = leanattn.reference(*case.args(), block_table=case.block_table,
                                      return_lse=True)
    np.testing.assert_allclose(ref, want, rtol=1e-12, atol=1e-12)
    for strategy in STRATEGIES:
        out, lse = leanattn.decode(*case.args(), block_table=case.block_table, strategy=strategy,
                                   workers=3, return_lse=True)
        assert out.shape == (5, 8, 128) and out.dtype == np_dtype(dtype)
        assert_close(out, want, dtype, lse, want_lse)
    # head_dim_v given as well: the same when it matches; out= of V's width, poisoned first.
    out = poisoned((5, 8, 128), dtype)
    leanattn.decode(*case.args(), block_table=case.block_table, head_dim_v=128, out=out,
                    workers=2, tile=16)
    assert_close(out, want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("page_size", [None, 64, 7])
def test_absorbed_mla_latent_cache(rng, dtype, page_size):
    # K 576 (512 latent + 64 rope), V its first 512 values, read in place: no V cache.
    case = shared_case(rng, LENS, dtype, page_size)
    v = case.k[..., :512]
    want, want_lse = numpy_attention(case.q, case.k, v, case.seq_lens, case.block_table)
    ref, ref_lse = leanattn.reference(case.q, case.k, None, case.seq_lens, case.block_table,
                                      return_lse=True, head_dim_v=512)
    np.testing.assert_allclose(ref, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref_lse, want_lse, rtol=1e-12, atol=1e-12)
    for strategy in STRATEGIES:
        out, lse = leanattn.decode(case.q, case.k, None, case.seq_lens, head_dim_v=512,
                                   block_table=case.block_table, strategy=strategy, workers=3,
                                   return_lse=True)
        assert out.shape == (5, 16, 512) and out.dtype == np_dtype(dtype)
        assert_close(out, want, dtype, lse, want_lse)
    # v_cache may be left out by name too, and the scale is the caller's (DeepSeek: 1/sqrt(192)).
    out = poisoned((5, 16, 512), dtype)
    leanattn.decode(case.q, case.k, seq_lens=case.seq_lens, block_table=case.block_table,
                    head_dim_v=512, scale=192 ** -0.5, out=out)
    scaled, _ = numpy_attention(case.q, case.k, v, case.seq_lens, case.block_table,
                                scale=192 ** -0.5)
    assert_close(out, scaled, dtype)


def test_shared_cache_without_head_dim_v_is_k_as_v(rng):
    # v_cache None, head_dim_v None: V is K's whole rows (C++'s head_dim_v 0).
    case = shared_case(rng, [9, 0, 40], "float32", q_heads=4, head_dim=64)
    out = leanattn.decode(case.q, case.k, None, case.seq_lens)
    want, _ = numpy_attention(case.q, case.k, case.k, case.seq_lens)
    assert out.shape == case.q.shape
    assert_close(out, want, "float32")


def test_shared_strided_cache_and_q_len(rng):
    # A latent cache that is a view (every other token row of a wider buffer), several query
    # tokens per request (multi-token prediction), causal.
    buf = rng.standard_normal((3, 2 * 40, 1, 96)).astype(np.float32)
    k = buf[:, ::2]
    lens = np.array([33, 0, 2], np.int32)
    q = rng.standard_normal((3, 2, 4, 96)).astype(np.float32)
    out = leanattn.decode(q, k, None, lens, head_dim_v=64, workers=2, tile=8)
    want, _ = numpy_variant_attention(q, k, k[..., :64], lens)
    assert out.shape == (3, 2, 4, 64)
    assert_close(out, want, "float32")


@pytest.mark.parametrize("shared", [False, True], ids=["separate", "shared"])
def test_plans_carry_head_dim_v(rng, shared):
    case = shared_case(rng, [50, 0, 129], "float32", q_heads=8, head_dim=192)
    v = None if shared else np.ascontiguousarray(case.k[..., :128])
    p = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=1, head_dim=192, head_dim_v=128,
                      workers=3)
    assert p.head_dim == 192 and p.head_dim_v == 128 and "head_dim_v=128" in repr(p)
    assert p.tile == 64  # the mean width, 160, plans 64-token tiles
    want, _ = numpy_attention(case.q, case.k, case.k[..., :128], case.seq_lens)
    # The NumPy fast path (plan + out) and Plan.run; without v_cache the plan gives the width.
    out = poisoned((3, 8, 128), "float32")
    assert leanattn.decode(case.q, case.k, v, plan=p, out=out) is out
    assert_close(out, want, "float32")
    assert_close(p.run(case.q, case.k, v), want, "float32")
    assert leanattn.plan([5], q_heads=8, kv_heads=1, head_dim=192).head_dim_v == 192
    other = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=1, head_dim=192, workers=3)
    with pytest.raises(ValueError, match="^plan: was made for other .*head_dim_v"):
        leanattn.decode(case.q, case.k, None, plan=other, head_dim_v=128)


@pytest.mark.parametrize("kv_dtype", ["fp8_e4m3", "int8"])
@pytest.mark.parametrize("page_size", [None, 8])
def test_8bit_latent_cache_takes_k_scale(rng, kv_dtype, page_size):
    case = shared_case(rng, [21, 0, 70], "float32", page_size, q_heads=8, head_dim=128)
    granularity = "per_token_head" if kv_dtype == "int8" else "per_tensor"
    kq, ks = leanattn.quantize_kv(case.k, kv_dtype, granularity)
    k = leanattn.dequantize_kv(kq, ks, kv_dtype)
    want, _ = numpy_attention(case.q, k, k[..., :96], case.seq_lens, case.block_table)
    out = leanattn.decode(case.q, kq, None, case.seq_lens, block_table=case.block_table,
                          kv_dtype=kv_dtype, k_scale=ks, head_dim_v=96)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    ref = leanattn.reference(case.q, kq, None, case.seq_lens, case.block_table,
                             kv_dtype=kv_dtype, k_scale=ks, head_dim_v=96)
    np.testing.assert_allclose(ref, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"^v_scale: V is read from K's rows \(v_cache None\), "
                                         "with k_scale: pass None$"):
        leanattn.decode(case.q, kq, None, case.seq_lens, block_table=case.block_table,
                        kv_dtype=kv_dtype, k_scale=ks, v_scale=ks, head_dim_v=96)


@pytest.mark.parametrize("kv_dtype", ["q8_0", "q4_0"])
def test_block_formats_narrower_v_and_latent_rows(rng, kv_dtype):
    case = make_case(rng, [45, 0, 8], q_heads=4, kv_heads=2, head_dim=128, head_dim_v=64)
    kq, _ = leanattn.quantize_kv(case.k, kv_dtype)
    vq, _ = leanattn.quantize_kv(case.v, kv_dtype)
    k, v = (leanattn.dequantize_kv(x, None, kv_dtype) for x in (kq, vq))
    # A V cache of its own: its width read from its row bytes (64 values), or given.
    want, _ = numpy_attention(case.q, k, v, case.seq_lens)
    for width in (None, 64):
        out = leanattn.decode(case.q, kq, vq, case.seq_lens, kv_dtype=kv_dtype,
                              head_dim_v=width)
        assert out.shape == (3, 4, 64)
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    # A float16 V of its own width beside the blocks of K (v_dtype, llama.cpp's -ctv f16).
    v16 = case.v.astype(np.float16)
    want, _ = numpy_attention(case.q, k, v16, case.seq_lens)
    out = leanattn.decode(case.q, kq, v16, case.seq_lens, kv_dtype=kv_dtype, v_dtype="f16")
    assert out.shape == (3, 4, 64)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    # V in K's rows: its leading blocks (head_dim_v a multiple of 32).
    want, _ = numpy_attention(case.q, k, k[..., :96], case.seq_lens)
    out = leanattn.decode(case.q, kq, None, case.seq_lens, kv_dtype=kv_dtype, head_dim_v=96)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    with pytest.raises(ValueError, match="^head_dim_v: must be a multiple of 32 for the block "
                                         f"format {kv_dtype}"):
        leanattn.decode(case.q, kq, None, case.seq_lens, kv_dtype=kv_dtype, head_dim_v=48)
    with pytest.raises(ValueError, match=r"^head_dim_v: head_dim_v = 48 must be a multiple of 32 "
                                         f"for kv_dtype='{kv_dtype}'"):
        leanattn.decode(case.q, kq, vq, case.seq_lens, kv_dtype=kv_dtype, head_dim_v=48)


@pytest.mark.parametrize("entry", [leanattn.decode, leanattn.reference])
def test_bad_widths_are_named(rng, entry):
    case = make_case(rng, [12, 0], q_heads=4, kv_heads=2, head_dim=64, head_dim_v=32)
    q, k, v, lens = case.args()

    def call(k=k, v=v, **kwargs):
        return entry(q, k, v, lens, **kwargs)

    with pytest.raises(ValueError, match=r"^head_dim_v: must equal V's width, v_cache's last "
                                         r"dimension \(v_cache.shape\[3\]\) = 32, or be None .*"
                                         r"\(got 48\)$"):
        call(head_dim_v=48)
    wide = np.concatenate([k, k], axis=-1)
    with pytest.raises(ValueError, match=r"^v_cache: head_dim_v \(v_cache.shape\[3\]\) = 128 "
                                         r"must be at most q's head_dim \(q.shape\[-1\]\) = 64 "):
        call(v=wide)
    with pytest.raises(ValueError, match=r"^head_dim_v: must be at most head_dim "
                                         r"\(q.shape\[-1\]\) = 64: without v_cache, .*\(got 80\)$"):
        call(v=None, head_dim_v=80)
    with pytest.raises(ValueError, match="^head_dim_v: must be 0 .* or a multiple of 16 .*got 40"):
        call(v=None, head_dim_v=40)
    with pytest.raises(ValueError, match=r"^head_dim_v: must be in \[1, "):
        call(v=None, head_dim_v=0)
    with pytest.raises(TypeError, match="^head_dim_v: must be an int or None"):
        call(head_dim_v=32.0)
    with pytest.raises(ValueError, match="^v_dtype: V read from K's rows"):
        call(v=None, v_dtype="f16")
    with pytest.raises(ValueError, match=r"^v_cache: head_dim_v \(v_cache.shape\[3\]\) must be "
                                         r"at least 16 \(got 0\)$"):
        call(v=v[..., :0])
    with pytest.raises(ValueError, match=r"^v_cache: must have k_cache's shape \[2, 15, 2, 64\] "
                                         r"but for its own rows .*got \[2, 14, 2, 32\]$"):
        call(v=v[:, :14])


def test_out_must_have_v_width(rng):
    case = make_case(rng, [12, 3], q_heads=4, kv_heads=2, head_dim=64, head_dim_v=32)
    with pytest.raises(ValueError, match=r"^out: must have shape \[batch, q_heads, head_dim_v\] "
                                         r"= \[2, 4, 32\] .*got \[2, 4, 64\]$"):
        leanattn.decode(*case.args(), out=np.empty((2, 4, 64), np.float32))
    with pytest.raises(ValueError, match=r"^out: must have shape .*= \[2, 4, 48\] "):
        leanattn.decode(case.q, case.k, None, case.seq_lens, head_dim_v=48,
                        out=np.empty((2, 4, 64), np.float32))
