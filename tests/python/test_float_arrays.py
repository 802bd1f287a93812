"""The compiled module's own checks of the float arrays of a call (sinks, alibi_slopes, k_scale,
v_scale), which it takes as DLPack arrays of any framework and device since they may live on a
CUDA device: a wrong dtype, layout, length or shape is refused naming the argument, even when the
Python layer's conversions are bypassed; valid arrays computed against the fp64 reference on fresh
random data with the output poisoned first."""

import re

import numpy as np
import pytest

import leanattn
from leanattn import _leanattn as ext


def make(rng, lens=(45, 0, 13), q_heads=4, kv_heads=2, d=32):
    cap = max(lens) + 2
    q = rng.standard_normal((len(lens), q_heads, d)).astype(np.float32)
    k = rng.standard_normal((len(lens), cap, kv_heads, d)).astype(np.float32)
    v = rng.standard_normal((len(lens), cap, kv_heads, d)).astype(np.float32)
    return q, k, v, np.array(lens, dtype=np.int32)


def call(q, k, v, lens, out, sinks=None, slopes=None, k_scale=None, v_scale=None, kv_hint=""):
    """_leanattn._decode with the float arrays handed over as they are (no Python conversion)."""
    problem = ext.Problem(q, k, v, lens, sinks=sinks, alibi_slopes=slopes, k_scale=k_scale,
                          v_scale=v_scale, kv_dtype=kv_hint)
    ext._decode(problem, out, None, "lean", 3)


@pytest.mark.parametrize(
    "argument,value,error,text",
    [
        ("sinks", np.zeros(4, np.float64), TypeError, "dtype must be float32 (got float64)"),
        ("sinks", np.zeros(5, np.float32), ValueError, "one value per query head"),
        ("alibi_slopes", np.zeros(8, np.float32)[::2], ValueError, "must be contiguous"),
        ("alibi_slopes", np.zeros((4, 1), np.float32), ValueError, "one value per query head"),
    ],
)
def test_head_arrays_are_checked_by_the_module(rng, argument, value, error, text):
    q, k, v, lens = make(rng)
    out = np.full_like(q, np.nan)
    kwargs = {"sinks": value} if argument == "sinks" else {"slopes": value}
    with pytest.raises(error, match=f"^{argument}: .*{re.escape(text)}"):
        call(q, k, v, lens, out, **kwargs)


@pytest.mark.parametrize(
    "argument,make_bad,error,text",
    [
        ("k_scale", lambda s: s.astype(np.float64), TypeError, "dtype must be float32"),
        ("v_scale", lambda s: np.repeat(s, 2, axis=1)[:, ::2], ValueError, "must be contiguous"),
        ("v_scale", lambda s: s.astype(np.int32), TypeError, "dtype must be float32"),
    ],
)
def test_scale_arrays_are_checked_by_the_module(rng, argument, make_bad, error, text):
    q, k, v, lens = make(rng)
    kq, ks = leanattn.quantize_kv(k, "int8", "per_token_head")
    vq, vs = leanattn.quantize_kv(v, "int8", "per_token_head")
    scales = {"k_scale": ks, "v_scale": vs}
    scales[argument] = make_bad(scales[argument])
    with pytest.raises(error, match=f"^{argument}: .*{re.escape(text)}"):
        call(q, kq, vq, lens, np.full_like(q, np.nan), **scales, kv_hint="int8")


def test_valid_arrays_handed_over_as_they_are_match_the_reference(rng):
    q, k, v, lens = make(rng)
    sinks = rng.standard_normal(4).astype(np.float32) * 2
    slopes = rng.uniform(0.01, 0.5, 4).astype(np.float32)
    kq, ks = leanattn.quantize_kv(k, "int8", "per_kv_head")
    vq, vs = leanattn.quantize_kv(v, "int8", "per_kv_head")
    out = np.full_like(q, np.nan)
    call(q, kq, vq, lens, out, sinks, slopes, ks, vs, kv_hint="int8")
    ref = leanattn.reference(q, kq, vq, lens, sinks=sinks, alibi_slopes=slopes, k_scale=ks,
                             v_scale=vs)
    np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)
