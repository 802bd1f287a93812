"""8-bit KV caches through the Python API (issue 18): leanattn.quantize_kv / dequantize_kv, and
decode(..., kv_dtype=, k_scale=, v_scale=) for fp8 e4m3, fp8 e5m2 and int8 at every scale
granularity, contiguous and paged, against a NumPy fp64 attention on the dequantized values and
against leanattn.reference; the fp8 encoder against ml_dtypes where it is installed; and the
errors for bad quantization arguments."""

import numpy as np
import pytest

import leanattn

KV_DTYPES = ["fp8_e4m3", "fp8_e5m2", "int8"]
GRANULARITIES = ["per_tensor", "per_kv_head", "per_token_head"]


def attention(q, k, v, lens):
    """q [batch, q_heads, d] float; k, v [batch, capacity, kv_heads, d] float: fp64 out."""
    batch, q_heads, d = q.shape
    group = q_heads // k.shape[2]
    out = np.zeros(q.shape)
    for b in range(batch):
        n = int(lens[b])
        for h in range(q_heads if n else 0):
            s = k[b, :n, h // group].astype(np.float64) @ q[b, h].astype(np.float64) / np.sqrt(d)
            w = np.exp(s - s.max())
            out[b, h] = (w / w.sum()) @ v[b, :n, h // group].astype(np.float64)
    return out


def make(lens=(70, 0, 33, 129), q_heads=8, kv_heads=2, d=64, seed=0):
    rng = np.random.default_rng(seed)
    cap = max(lens) + 3
    q = rng.standard_normal((len(lens), q_heads, d)).astype(np.float32)
    k = rng.standard_normal((len(lens), cap, kv_heads, d)).astype(np.float32)
    v = rng.standard_normal((len(lens), cap, kv_heads, d)).astype(np.float32)
    return q, k, v, np.array(lens, dtype=np.int32)


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("strategy", ["lean", "split", "head"])
def test_decode_matches_attention_on_the_dequantized_cache(kv_dtype, granularity, strategy):
    q, k, v, lens = make()
    kq, ks = leanattn.quantize_kv(k, kv_dtype, granularity)
    vq, vs = leanattn.quantize_kv(v, kv_dtype, granularity)
    out = leanattn.decode(q, kq, vq, lens, kv_dtype=kv_dtype, k_scale=ks, v_scale=vs,
                          strategy=strategy, workers=3, tile=16)
    want = attention(q, leanattn.dequantize_kv(kq, ks, kv_dtype),
                     leanattn.dequantize_kv(vq, vs, kv_dtype), lens)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    ref = leanattn.reference(q, kq, vq, lens, kv_dtype=kv_dtype, k_scale=ks, v_scale=vs)
    np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_paged_cache_with_per_token_scales(kv_dtype):
    q, k, v, lens = make(lens=(40, 0, 17), seed=3)
    page = 8
    rng = np.random.default_rng(1)
    pages_per = [(int(n) + page - 1) // page for n in lens]
    num_pages = sum(pages_per) + 2
    perm = rng.permutation(num_pages)
    table = np.full((len(lens), max(pages_per)), 0, dtype=np.int32)
    kp = np.zeros((num_pages, page) + k.shape[2:], np.float32)
    vp = np.zeros_like(kp)
    used = 0
    for b, n in enumerate(lens):
        for i in range(pages_per[b]):
            table[b, i] = perm[used]
            rows = slice(i * page, min((i + 1) * page, int(n)))
            kp[perm[used], : rows.stop - rows.start] = k[b, rows]
            vp[perm[used], : rows.stop - rows.start] = v[b, rows]
            used += 1
    kq, ks = leanattn.quantize_kv(kp, kv_dtype, "per_token_head")
    vq, vs = leanattn.quantize_kv(vp, kv_dtype, "per_token_head")
    assert ks.shape == (num_pages, page, k.shape[2])
    out = leanattn.decode(q, kq, vq, lens, block_table=table, kv_dtype=kv_dtype, k_scale=ks,
                          v_scale=vs, workers=2, tile=8)
    ref = leanattn.reference(q, kq, vq, lens, block_table=table, kv_dtype=kv_dtype, k_scale=ks,
                             v_scale=vs)
    np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


def test_int8_needs_no_kv_dtype_and_python_float_scales_are_per_tensor():
    q, k, v, lens = make(seed=5)
    kq, ks = leanattn.quantize_kv(k, "int8", "per_tensor")
    vq, vs = leanattn.quantize_kv(v, "int8", "per_tensor")
    out = leanattn.decode(q, kq, vq, lens, k_scale=float(ks), v_scale=float(vs))
    ref = leanattn.reference(q, kq, vq, lens, k_scale=float(ks), v_scale=float(vs))
    np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kv_dtype", ["fp8_e4m3", "fp8_e5m2"])
def test_the_fp8_encoder_agrees_with_ml_dtypes(kv_dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mt = ml_dtypes.float8_e4m3fn if kv_dtype == "fp8_e4m3" else ml_dtypes.float8_e5m2
    rng = np.random.default_rng(7)
    limit = 448.0 if kv_dtype == "fp8_e4m3" else 57344.0
    x = np.concatenate([rng.standard_normal(4000) * s for s in (1e-4, 1e-2, 1.0, 30.0)])
    x = np.clip(x, -limit, limit).astype(np.float32)
    # Every tie of the format, too: midpoints between neighbouring values.
    values = np.arange(256, dtype=np.uint8).view(mt).astype(np.float32)
    values = np.sort(values[np.isfinite(values)])
    x = np.concatenate([x, values, (values[1:] + values[:-1]) / 2]).astype(np.float32)
    stored, scale = leanattn.quantize_kv(x.reshape(1, -1, 1, 1), kv_dtype, "per_tensor")
    # quantize_kv scales by amax / max: undo it exactly by comparing on x / scale.
    want = (x / np.float32(scale)).astype(mt).view(np.uint8)
    np.testing.assert_array_equal(stored.reshape(-1), want)


@pytest.mark.parametrize("kv_dtype", ["fp8_e4m3", "fp8_e5m2"])
def test_ml_dtypes_float8_caches_need_no_kv_dtype(kv_dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mt = ml_dtypes.float8_e4m3fn if kv_dtype == "fp8_e4m3" else ml_dtypes.float8_e5m2
    q, k, v, lens = make(seed=9)
    kq, ks = leanattn.quantize_kv(k, kv_dtype, "per_kv_head")
    vq, vs = leanattn.quantize_kv(v, kv_dtype, "per_kv_head")
    out = leanattn.decode(q, kq.view(mt), vq.view(mt), lens, k_scale=ks, v_scale=vs)
    ref = leanattn.decode(q, kq, vq, lens, kv_dtype=kv_dtype, k_scale=ks, v_scale=vs)
    np.testing.assert_array_equal(out, ref)


def bad_call(**changes):
    q, k, v, lens = make(seed=11)
    kq, ks = leanattn.quantize_kv(k, "int8")
    vq, vs = leanattn.quantize_kv(v, "int8")
    args = dict(q=q, k_cache=kq, v_cache=vq, seq_lens=lens, k_scale=ks, v_scale=vs)
    args.update(changes)
    return leanattn.decode(**args)


def test_bad_quantization_arguments_are_named():
    q, k, v, lens = make(seed=11)
    kq, ks = leanattn.quantize_kv(k, "int8")
    with pytest.raises(ValueError, match="^k_scale: is required"):
        bad_call(k_scale=None)
    with pytest.raises(ValueError, match="^v_scale: must have k_scale's shape"):
        bad_call(v_scale=np.float32(0.1))
    with pytest.raises(ValueError, match=r"^k_scale: must be a scalar .*got \[3\]"):
        bad_call(k_scale=np.ones(3, np.float32), v_scale=np.ones(3, np.float32))
    for bad in (np.nan, np.inf, 0.0, -1.0):
        scale = ks.copy()
        scale[0, 5, 1] = bad
        with pytest.raises(ValueError, match="^k_scale: must be finite and > 0"):
            bad_call(k_scale=scale)
    with pytest.raises(ValueError, match="^k_scale: is only for 8-bit caches"):
        leanattn.decode(q, k, v, lens, k_scale=1.0, v_scale=1.0)
    with pytest.raises(TypeError, match="^k_cache: a uint8 cache holds fp8 bytes"):
        bad_call(k_cache=kq.view(np.uint8), v_cache=kq.view(np.uint8))
    with pytest.raises(TypeError, match="^k_cache: dtype int8 does not match"):
        bad_call(kv_dtype="fp8_e4m3")
    with pytest.raises(TypeError, match="^k_cache: kv_dtype='int8' needs an 8-bit cache"):
        leanattn.decode(q, k, v, lens, kv_dtype="int8")
    with pytest.raises(ValueError, match="^kv_dtype: must be one of"):
        bad_call(kv_dtype="int4")
    with pytest.raises(TypeError, match="^q: dtype must be float32"):
        bad_call(q=np.zeros(q.shape, np.int8))
