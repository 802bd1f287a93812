"""ggml's block formats q8_0 and q4_0 through the Python API: leanattn.quantize_kv / dequantize_kv
(bounds, fixed points, ggml's tie rules) and decode(..., kv_dtype="q8_0" | "q4_0") on uint8 caches
in ggml's layout (contiguous, paged, strided, at odd byte offsets; GQA, empty requests, every
strategy, q float32 / float16 / bfloat16, NaN-poisoned outputs) against leanattn.reference on the
same bytes and a NumPy fp64 attention on dequantize_kv's values; K and V of different types
(v_dtype=: every pair of f16, q8_0 and q4_0); the errors for bad caches, arguments and refused
type pairs; and ggml's own bytes (gguf-py's quantizers, where gguf is installed)."""

import numpy as np
import pytest

import leanattn
from conftest import assert_close, make_case, np_dtype, numpy_attention

BLOCK_DTYPES = ["q8_0", "q4_0"]
BLOCK_BYTES = {"q8_0": 34, "q4_0": 18}


def quantized(case, kv_dtype):
    """The case's float caches as ggml's bytes, and the float64 values those bytes hold."""
    kq, ks = leanattn.quantize_kv(case.k, kv_dtype)
    vq, vs = leanattn.quantize_kv(case.v, kv_dtype)
    assert ks is None and vs is None and kq.dtype == np.uint8
    k64 = leanattn.dequantize_kv(kq, None, kv_dtype).astype(np.float64)
    v64 = leanattn.dequantize_kv(vq, None, kv_dtype).astype(np.float64)
    return kq, vq, k64, v64


def check(case, kq, vq, k64, v64, kv_dtype, dtype="float32", v_dtype=None, **kwargs):
    """decode (output poisoned first) against the fp64 reference on the same bytes and a NumPy
    fp64 attention on the dequantized values; the reference against NumPy to fp64 rounding."""
    want, want_lse = numpy_attention(case.q, k64, v64, case.seq_lens, case.block_table)
    out = np.full(case.q.shape, np.nan, dtype=case.q.dtype)
    lse = np.full(case.q.shape[:2], np.nan, dtype=np.float32)
    leanattn.decode(case.q, kq, vq, case.seq_lens, block_table=case.block_table,
                    kv_dtype=kv_dtype, v_dtype=v_dtype, out=out, lse_out=lse, **kwargs)
    assert_close(out, want, dtype, lse, want_lse)
    ref, ref_lse = leanattn.reference(case.q, kq, vq, case.seq_lens, case.block_table,
                                      return_lse=True, kv_dtype=kv_dtype, v_dtype=v_dtype)
    np.testing.assert_allclose(ref, want, rtol=1e-12, atol=1e-12)
    assert np.array_equal(np.isneginf(ref_lse), np.isneginf(want_lse))
    empty = case.seq_lens == 0
    assert (out[empty] == 0).all() and np.isneginf(lse[empty]).all()


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
@pytest.mark.parametrize("strategy", ["lean", "split", "head"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_contiguous_cache_matches_attention_on_the_dequantized_values(rng, kv_dtype, strategy,
                                                                     head_dim):
    case = make_case(rng, [70, 0, 33, 129], q_heads=8, kv_heads=2, head_dim=head_dim)
    kq, vq, k64, v64 = quantized(case, kv_dtype)
    assert kq.shape == case.k.shape[:3] + (head_dim // 32 * BLOCK_BYTES[kv_dtype],)
    check(case, kq, vq, k64, v64, kv_dtype, strategy=strategy, workers=3, tile=16)


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_q(rng, kv_dtype, dtype):
    case = make_case(rng, [41, 0, 100], q_heads=4, kv_heads=1, head_dim=64)
    case.q = case.q.astype(np_dtype(dtype))
    kq, vq, k64, v64 = quantized(case, kv_dtype)
    check(case, kq, vq, k64, v64, kv_dtype, dtype, workers=2)


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
@pytest.mark.parametrize("page_size", [1, 16])
def test_paged_cache(rng, kv_dtype, page_size):
    case = make_case(rng, [40, 0, 17, 64], q_heads=6, kv_heads=3, head_dim=96,
                     page_size=page_size)
    kq, vq, k64, v64 = quantized(case, kv_dtype)
    check(case, kq, vq, k64, v64, kv_dtype, workers=3, tile=8)


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
def test_strided_cache_at_an_odd_byte_offset_is_read_in_place(rng, kv_dtype):
    """Rows of 34 / 18 bytes at any byte: a view into a larger buffer, one byte in, with padded
    heads and tokens (strides in bytes), is read without a copy."""
    case = make_case(rng, [50, 9, 0], q_heads=4, kv_heads=2, head_dim=64)
    kq, vq, k64, v64 = quantized(case, kv_dtype)
    views = []
    for stored in (kq, vq):
        b, cap, heads, row = stored.shape
        buf = rng.integers(0, 256, (b, cap + 1, heads + 1, row + 3), dtype=np.uint8)
        view = buf[:, :cap, :heads, 1:1 + row]
        view[...] = stored
        assert not view.flags.c_contiguous and view.ctypes.data % 2 == 1
        views.append(view)
    check(case, views[0], views[1], k64, v64, kv_dtype, workers=2, tile=16)


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
def test_several_query_tokens_and_the_strategies_agree(rng, kv_dtype):
    case = make_case(rng, [33, 0, 70], q_heads=4, kv_heads=2, head_dim=32)
    kq, vq, _, _ = quantized(case, kv_dtype)
    q = rng.standard_normal((3, 2, 4, 32)).astype(np.float32)  # q_len 2
    ref = leanattn.reference(q, kq, vq, case.seq_lens, kv_dtype=kv_dtype)
    for strategy in ("lean", "split", "head"):
        out = leanattn.decode(q, kq, vq, case.seq_lens, kv_dtype=kv_dtype, strategy=strategy,
                              workers=3, tile=16)
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


def round_trip_case(rng, scale=1.0):
    x = rng.standard_normal((3, 5, 2, 64)).astype(np.float32) * np.float32(scale)
    x[0, 0, 0, :32] = 0.0  # a block of zeros
    x[0, 1, 1, :32] = 3.0  # every value the largest
    x[1, 2, 0, 32:] = np.tile([2.5, -2.5], 16)  # largest magnitudes of both signs
    return x


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_round_trip_bounds(rng, scale):
    """|x - deq(x)| within half a step (q8_0) or a step (q4_0, whose top code saturates) of the
    block's scale d, plus what d's f16 rounding (subnormal for small blocks) moves the codes;
    ggml's bytes are a fixed point of quantize(dequantize(.))."""
    x = round_trip_case(rng, scale)
    blocks = x.reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    for kv_dtype, step, steps, codes in (("q8_0", 127, 0.5, 127), ("q4_0", 8, 1.0, 8)):
        stored, _ = leanattn.quantize_kv(x, kv_dtype)
        back = leanattn.dequantize_kv(stored, kv_dtype=kv_dtype)
        assert back.dtype == np.float32 and back.shape == x.shape
        err = np.abs(back.astype(np.float64) - x).reshape(-1, 32)
        d = (amax / np.float32(step)).astype(np.float64)  # |d| as ggml computes it
        d16 = np.abs(d.astype(np.float16).astype(np.float64))
        bound = d * steps * (1 + 1e-6) + codes * np.abs(d - d16)
        assert (err <= bound).all()
        # ggml's bytes are a fixed point: quantizing the dequantized values gives them back.
        again, _ = leanattn.quantize_kv(back, kv_dtype)
        np.testing.assert_array_equal(again, stored)
        assert (back.reshape(-1, 32)[0] == 0).all()  # the block of zeros


def test_ggml_tie_rules():
    """q8_0 rounds half away from zero (roundf, not NumPy's half to even); q4_0 truncates
    x / d + 8.5 and saturates at 15; the first value of largest |x| sets q4_0's signed scale."""
    x = np.zeros((1, 1, 1, 32), np.float32)
    x[..., 0] = 127.0  # d = 1
    x[..., 1:5] = [0.5, -0.5, 2.5, -2.5]
    q8, _ = leanattn.quantize_kv(x, "q8_0")
    codes = q8.reshape(-1)[2:].view(np.int8)
    assert list(codes[:5]) == [127, 1, -1, 3, -3]
    assert q8.reshape(-1)[:2].view("<f2")[0] == 1.0
    y = np.zeros((1, 1, 1, 32), np.float32)
    y[..., 0] = -8.0  # d = 1; codes are x + 8 rounded half up, 8 saturating to 15
    y[..., 1] = 8.0
    y[..., 2:5] = [0.5, -0.5, 7.5]
    y[..., 16] = -8.0  # the same magnitude again: the first one sets d
    q4, _ = leanattn.quantize_kv(y, "q4_0")
    raw = q4.reshape(-1)
    assert raw[:2].view("<f2")[0] == 1.0
    nibbles = np.concatenate([raw[2:] & 15, raw[2:] >> 4])
    assert list(nibbles[:5]) == [0, 15, 9, 8, 15] and nibbles[16] == 0
    y[..., 0] = 8.0  # now the first largest is positive: d = -1
    raw = leanattn.quantize_kv(y, "q4_0")[0].reshape(-1)
    assert raw[:2].view("<f2")[0] == -1.0


def test_quantize_kv_keeps_shapes_and_frameworks(rng):
    x = rng.standard_normal((7, 96)).astype(np.float16)  # any number of dimensions
    for kv_dtype in BLOCK_DTYPES:
        stored, scale = leanattn.quantize_kv(x, kv_dtype)
        assert scale is None and stored.shape == (7, 3 * BLOCK_BYTES[kv_dtype])
        assert stored.flags.c_contiguous
        again, _ = leanattn.quantize_kv(x.astype(np.float32), kv_dtype)
        np.testing.assert_array_equal(stored, again)


def bad_decode(cache_dtype="q8_0", **changes):
    """decode's arguments over caches of cache_dtype's bytes (kv_dtype the same), changed."""
    rng = np.random.default_rng(3)
    case = make_case(rng, [20, 5], q_heads=4, kv_heads=2, head_dim=64)
    kq, vq, _, _ = quantized(case, cache_dtype)
    args = dict(q=case.q, k_cache=kq, v_cache=vq, seq_lens=case.seq_lens, kv_dtype=cache_dtype)
    args.update(changes)
    return args


@pytest.mark.parametrize("entry", [leanattn.decode, leanattn.reference])
def test_bad_caches_and_arguments_are_named(entry):
    def call(**changes):
        return entry(**bad_decode(**changes))

    args = bad_decode()
    kq, vq, q = args["k_cache"], args["v_cache"], args["q"]
    with pytest.raises(TypeError, match="^k_cache: a uint8 cache holds fp8 bytes"):
        call(kv_dtype=None)
    with pytest.raises(ValueError, match=r"^k_cache: its last dimension \(k_cache.shape\[3\]\) "
                                         r"= 72 must be the bytes of a q8_0 row .* = 68$"):
        call(k_cache=np.zeros(kq.shape[:3] + (72,), np.uint8))
    with pytest.raises(ValueError, match=r"^v_cache: its last dimension .* = 36 .* = 68$"):
        call(v_cache=np.ascontiguousarray(bad_decode("q4_0")["v_cache"]))
    with pytest.raises(ValueError, match=r"^k_cache: its last dimension .* q4_0 row"):
        call(kv_dtype="q4_0")  # q8_0 bytes read as q4_0
    with pytest.raises(ValueError, match=r"^q: head_dim \(q.shape\[-1\]\) = 48 must be a "
                                         r"multiple of 32 for kv_dtype='q8_0'"):
        call(q=q[..., :48].copy())
    with pytest.raises(ValueError, match="^q: head_dim .* = 16 must be a multiple of 32"):
        call(q=q[..., :16].copy(), k_cache=kq[..., :17], v_cache=vq[..., :17])
    with pytest.raises(ValueError, match="^k_scale: is not taken with a q8_0 cache"):
        call(k_scale=np.float32(1), v_scale=np.float32(1))
    with pytest.raises(ValueError, match="^v_scale: is not taken with a q4_0 cache"):
        entry(**bad_decode("q4_0", v_scale=1.0))
    with pytest.raises(TypeError, match="^k_cache: kv_dtype='q8_0' needs a uint8 cache .*float32"):
        call(k_cache=np.zeros(kq.shape[:3] + (64,), np.float32))
    with pytest.raises(TypeError, match="^v_cache: kv_dtype='q4_0' needs a uint8 cache .*int8"):
        entry(**bad_decode("q4_0", v_cache=np.zeros((2, 23, 2, 36), np.int8)))
    with pytest.raises(ValueError, match="^kv_dtype: must be one of .*q8_0, q4_0 or None"):
        call(kv_dtype="q5_0")


def test_bad_quantize_arguments_are_named(rng):
    x = rng.standard_normal((2, 3, 2, 64)).astype(np.float32)
    stored, _ = leanattn.quantize_kv(x, "q4_0")
    with pytest.raises(ValueError, match=r"^cache: head_dim \(cache.shape\[-1\]\) = 48 must be"):
        leanattn.quantize_kv(x[..., :48], "q8_0")
    with pytest.raises(ValueError, match="^granularity: must be None for q8_0"):
        leanattn.quantize_kv(x, "q8_0", "per_tensor")
    bad = x.copy()
    bad[0, 0, 0, 5] = np.inf
    with pytest.raises(ValueError, match="^cache: values must be finite for q4_0"):
        leanattn.quantize_kv(bad, "q4_0")
    with pytest.raises(ValueError, match="^scale: must be None for q4_0"):
        leanattn.dequantize_kv(stored, np.float32(1), "q4_0")
    with pytest.raises(ValueError, match="^stored: its last dimension = 36 must be a whole "
                                         "number of q8_0 blocks"):
        leanattn.dequantize_kv(stored, None, "q8_0")
    with pytest.raises(TypeError, match="^stored: a q8_0 cache is uint8 bytes"):
        leanattn.dequantize_kv(stored.view(np.int8), None, "q8_0")
    with pytest.raises(TypeError, match="^stored: a uint8 array needs kv_dtype="):
        leanattn.dequantize_kv(stored, None)
    with pytest.raises(ValueError, match="^scale: required for int8"):
        leanattn.dequantize_kv(stored.view(np.int8))
    with pytest.raises(ValueError, match="^kv_dtype: must be one of"):
        leanattn.quantize_kv(x, "q4_1")


# K and V of different types (v_dtype=): the pairs of f16, q8_0 and q4_0 that llama.cpp's
# -ctk / -ctv make, e.g. a q8_0 K with an f16 V.

MIXED_TYPES = ["f16", "q8_0", "q4_0"]
MIXED_PAIRS = [(k, v) for k in MIXED_TYPES for v in MIXED_TYPES if k != v]


def cache_of(x, kind):
    """x (float32) as a cache of kind "f16" (float16) or ggml's blocks, and the float64 values
    it holds (dequantize_kv's for the blocks)."""
    if kind == "f16":
        cache = x.astype(np.float16)
        return cache, cache.astype(np.float64)
    cache, _ = leanattn.quantize_kv(x, kind)
    return cache, leanattn.dequantize_kv(cache, None, kind).astype(np.float64)


def kv_dtype_of(kind):
    """decode's kv_dtype for a K of this kind: a float16 cache says its own type."""
    return None if kind == "f16" else kind


def mixed(case, k_kind, v_kind):
    kc, k64 = cache_of(case.k, k_kind)
    vc, v64 = cache_of(case.v, v_kind)
    return kc, vc, k64, v64


@pytest.mark.parametrize("k_kind,v_kind", MIXED_PAIRS)
@pytest.mark.parametrize("page_size", [None, 16])
def test_k_and_v_of_different_types(rng, k_kind, v_kind, page_size):
    """Every ordered pair of f16, q8_0, q4_0 with different K and V types, contiguous and paged,
    every strategy: against the fp64 reference on the same caches and a NumPy fp64 attention on
    the values they hold (outputs poisoned first)."""
    case = make_case(rng, [70, 0, 33, 129], q_heads=8, kv_heads=2, head_dim=64,
                     page_size=page_size)
    kc, vc, k64, v64 = mixed(case, k_kind, v_kind)
    width = {"f16": 64, "q8_0": 68, "q4_0": 36}
    assert kc.shape[-1] == width[k_kind] and vc.shape[-1] == width[v_kind]
    for strategy in ("lean", "split", "head"):
        check(case, kc, vc, k64, v64, kv_dtype_of(k_kind), v_dtype=v_kind, strategy=strategy,
              workers=3, tile=16)


@pytest.mark.parametrize("k_kind,v_kind", [("q8_0", "f16"), ("f16", "q4_0")])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_k_and_v_of_different_types_with_half_precision_q(rng, k_kind, v_kind, dtype):
    case = make_case(rng, [41, 0, 100], q_heads=4, kv_heads=1, head_dim=128, page_size=8)
    case.q = case.q.astype(np_dtype(dtype))
    kc, vc, k64, v64 = mixed(case, k_kind, v_kind)
    check(case, kc, vc, k64, v64, kv_dtype_of(k_kind), dtype, v_dtype=v_kind, workers=2)


@pytest.mark.parametrize("k_kind,v_kind", [("q4_0", "f16"), ("f16", "q8_0"), ("q8_0", "q4_0")])
def test_k_and_v_of_different_types_read_in_place_through_strided_views(rng, k_kind, v_kind):
    """Each cache's strides in its own unit (bytes for the blocks, elements for float16), the
    blocks at an odd byte offset."""
    case = make_case(rng, [50, 9, 0], q_heads=4, kv_heads=2, head_dim=64)
    kc, vc, k64, v64 = mixed(case, k_kind, v_kind)
    views = []
    for cache in (kc, vc):
        b, cap, heads, row = cache.shape
        buf = np.zeros((b, cap + 1, heads + 1, row + 3), dtype=cache.dtype)
        view = buf[:, :cap, :heads, 1:1 + row]
        view[...] = cache
        assert not view.flags.c_contiguous
        views.append(view)
    check(case, views[0], views[1], k64, v64, kv_dtype_of(k_kind), v_dtype=v_kind, workers=2,
          tile=16)


@pytest.mark.parametrize("k_kind,v_kind", [("q8_0", "f16"), ("f16", "q4_0")])
def test_k_and_v_of_different_types_with_several_query_tokens(rng, k_kind, v_kind):
    case = make_case(rng, [33, 0, 70], q_heads=4, kv_heads=2, head_dim=32)
    kc, vc, _, _ = mixed(case, k_kind, v_kind)
    q = rng.standard_normal((3, 2, 4, 32)).astype(np.float32)  # q_len 2
    kinds = dict(kv_dtype=kv_dtype_of(k_kind), v_dtype=v_kind)
    ref = leanattn.reference(q, kc, vc, case.seq_lens, **kinds)
    for strategy in ("lean", "split", "head"):
        out = leanattn.decode(q, kc, vc, case.seq_lens, strategy=strategy, workers=3, tile=16,
                              **kinds)
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kind", MIXED_TYPES)
def test_v_dtype_of_ks_type_changes_nothing(rng, kind):
    case = make_case(rng, [40, 7], q_heads=4, kv_heads=2, head_dim=64)
    kc, vc, _, _ = mixed(case, kind, kind)
    want = leanattn.decode(case.q, kc, vc, case.seq_lens, kv_dtype=kv_dtype_of(kind))
    got = leanattn.decode(case.q, kc, vc, case.seq_lens, kv_dtype=kv_dtype_of(kind),
                          v_dtype=kind)
    np.testing.assert_array_equal(got, want)


def mixed_args(k_kind="q8_0", v_kind="f16", **changes):
    """decode's arguments over a K of k_kind and a V of v_kind (v_dtype=v_kind), changed."""
    rng = np.random.default_rng(5)
    case = make_case(rng, [20, 5], q_heads=4, kv_heads=2, head_dim=64)
    kc, vc, _, _ = mixed(case, k_kind, v_kind)
    args = dict(q=case.q, k_cache=kc, v_cache=vc, seq_lens=case.seq_lens,
                kv_dtype=kv_dtype_of(k_kind), v_dtype=v_kind)
    args.update(changes)
    return args


@pytest.mark.parametrize("entry", [leanattn.decode, leanattn.reference])
def test_refused_type_pairs_and_bad_mixed_caches_are_named(entry):
    def call(*kinds, **changes):
        return entry(**mixed_args(*kinds, **changes))

    args = mixed_args()
    kc, vc = args["k_cache"], args["v_cache"]
    f32 = np.zeros(kc.shape[:3] + (64,), np.float32)
    q8 = mixed_args("f16", "q8_0")["v_cache"]
    pair = r"^v_dtype: V's type may differ from K's only when both are f16, q8_0 or q4_0"
    # Pairs the library refuses: a float32 / bfloat16 K, an 8-bit K (before its scales).
    with pytest.raises(ValueError, match=pair + r".*got K f32, V q8_0$"):
        call(k_cache=f32, kv_dtype=None, v_cache=q8, v_dtype="q8_0")
    with pytest.raises(ValueError, match=pair + r".*got K bf16, V f16$"):
        call(k_cache=f32.astype(np_dtype("bfloat16")), kv_dtype=None, v_cache=vc)
    with pytest.raises(ValueError, match=pair + r".*got K int8, V q4_0$"):
        call(k_cache=np.zeros(f32.shape, np.int8), kv_dtype="int8", v_dtype="q4_0",
             v_cache=mixed_args("f16", "q4_0")["v_cache"])
    # V's type outside f16, q8_0, q4_0: a bfloat16 (or float32, int8) V beside a q8_0 K.
    with pytest.raises(ValueError, match="^v_dtype: must be one of f16, q8_0, q4_0 .* or None "
                                         r"\(V of K's type\) \(got 'bf16'\)$"):
        call(v_cache=vc.astype(np_dtype("bfloat16")), v_dtype="bf16")
    with pytest.raises(ValueError, match="^v_dtype: must be one of .*got 'q5_0'"):
        call(v_dtype="q5_0")
    # The cache must be what v_dtype names.
    with pytest.raises(TypeError, match="^v_cache: v_dtype='f16' needs a float16 cache, got "
                                        "bfloat16$"):
        call(v_cache=vc.astype(np_dtype("bfloat16")))
    with pytest.raises(TypeError, match="^v_cache: v_dtype='q4_0' needs a uint8 cache of "
                                        "ggml's q4_0 blocks .*got float16$"):
        call(v_dtype="q4_0")
    # Without v_dtype, V is K's type, and the message says how to give it another.
    with pytest.raises(TypeError, match="^v_cache: kv_dtype='q8_0' needs a uint8 cache .*got "
                                        "float16; for V of another type than K's, pass v_dtype$"):
        call(v_dtype=None)
    with pytest.raises(TypeError, match="^v_cache: a uint8 cache holds fp8 bytes.*; for V of "
                                        "another type than K's, pass v_dtype$"):
        call("f16", "q8_0", v_dtype=None)
    # Each cache's row in its own type.
    with pytest.raises(ValueError, match=r"^v_cache: its last dimension \(v_cache.shape\[3\]\) = "
                                         r"68 must be the bytes of a q4_0 row .* = 36$"):
        call("f16", "q4_0", v_cache=q8)
    # V no wider than K (a narrower one is V's own width, head_dim_v: test_value_widths.py).
    with pytest.raises(ValueError, match=r"^v_cache: head_dim_v \(v_cache.shape\[3\]\) = 96 "
                                         r"must be at most q's head_dim \(q.shape\[-1\]\) = 64"):
        call(v_cache=np.concatenate([vc, vc[..., :32]], axis=-1))
    with pytest.raises(ValueError, match=r"^head_dim_v: must equal V's width, v_cache's last "
                                         r"dimension \(v_cache.shape\[3\]\) = 64.*got 48\)$"):
        call(head_dim_v=48)
    with pytest.raises(ValueError, match=r"^k_cache: its last dimension .* = 36 must be the "
                                         r"bytes of a q8_0 row"):
        call(k_cache=mixed_args("q4_0", "f16")["k_cache"])
    with pytest.raises(ValueError, match=r"^v_cache: must have k_cache's shape \[2, 23, 2, 68\] "
                                         r"but for its own rows in the last dimension, got "
                                         r"\[2, 22, 2, 64\]$"):
        call(v_cache=vc[:, :22])
    with pytest.raises(ValueError, match=r"^q: head_dim \(q.shape\[-1\]\) = 48 must be a "
                                         r"multiple of 32 for v_dtype='q4_0'"):
        args48 = mixed_args("f16", "q4_0")
        call("f16", "q4_0", q=args48["q"][..., :48].copy(),
             k_cache=args48["k_cache"][..., :48], v_cache=args48["v_cache"][..., :27])
    # No scales with the block formats and f16.
    with pytest.raises(ValueError, match="^k_scale: is not taken with a q8_0 cache"):
        call(k_scale=1.0, v_scale=1.0)
    with pytest.raises(ValueError, match=r"^v_scale: is only for 8-bit caches \(k_cache is f16\)"):
        call("f16", "q8_0", v_scale=1.0)


# ggml's own bytes: gguf-py (ggml's Python package) quantizes as ggml's C reference does.

GGUF_TYPES = {"q8_0": "Q8_0", "q4_0": "Q4_0"}


def gguf_data(rng):
    """Random rows at several magnitudes, with ggml's ties and edge blocks."""
    x = np.concatenate([rng.standard_normal((64, 128)) * s for s in (1e-3, 1.0, 50.0)])
    x = x.astype(np.float32)
    x[0, :32] = 0.0
    x[1, :32] = np.arange(32) - 15.5  # d = 1: every other value a q8_0 tie
    x[1, 0] = 127.0
    x[2, :32] = np.concatenate([[-8.0], np.arange(-7.5, 8.0, 0.5)])  # d = 1: q4_0 ties
    x[3, 32:64] = np.tile([1.0, -1.0], 16)
    return x


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
def test_quantize_kv_gives_ggmls_bytes(rng, kv_dtype):
    gguf = pytest.importorskip("gguf", reason="gguf (ggml's gguf-py) is not installed")
    qtype = getattr(gguf.GGMLQuantizationType, GGUF_TYPES[kv_dtype])
    x = gguf_data(rng)
    want = gguf.quants.quantize(x, qtype)
    stored, _ = leanattn.quantize_kv(x, kv_dtype)
    assert stored.shape == want.shape and stored.dtype == np.uint8
    np.testing.assert_array_equal(stored, want)


@pytest.mark.parametrize("kv_dtype", BLOCK_DTYPES)
def test_ggml_bytes_are_read_as_ggml_reads_them(rng, kv_dtype):
    """gguf-produced caches: dequantize_kv equals gguf.quants.dequantize exactly; decode and the
    reference on those bytes match a NumPy attention on gguf's values."""
    gguf = pytest.importorskip("gguf", reason="gguf (ggml's gguf-py) is not installed")
    qtype = getattr(gguf.GGMLQuantizationType, GGUF_TYPES[kv_dtype])
    case = make_case(rng, [57, 0, 130], q_heads=8, kv_heads=2, head_dim=128, page_size=16)
    kq, vq = gguf.quants.quantize(case.k, qtype), gguf.quants.quantize(case.v, qtype)
    k_ggml = gguf.quants.dequantize(kq, qtype)
    v_ggml = gguf.quants.dequantize(vq, qtype)
    assert k_ggml.shape == case.k.shape
    np.testing.assert_array_equal(leanattn.dequantize_kv(kq, None, kv_dtype), k_ggml)
    np.testing.assert_array_equal(leanattn.dequantize_kv(vq, None, kv_dtype), v_ggml)
    check(case, kq, vq, k_ggml.astype(np.float64), v_ggml.astype(np.float64), kv_dtype,
          workers=3, tile=16)
