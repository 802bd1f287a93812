"""The attention variants through the Python API (issue 16): 4-D q (q_len new tokens per
request, causal or not), window_left, softcap, sinks and alibi_slopes, alone and combined,
against a NumPy implementation of docs/numerics.md "Variants" and against leanattn.reference;
and the errors for bad variant arguments."""

import numpy as np
import pytest

import leanattn
from conftest import numpy_variant_attention as numpy_attention


def make(batch=3, q_len=4, q_heads=8, kv_heads=2, d=32, lens=(70, 0, 33), dtype=np.float32,
         seed=0):
    rng = np.random.default_rng(seed)
    cap = max(lens) + 3
    q = rng.standard_normal((batch, q_len, q_heads, d)).astype(dtype)
    k = rng.standard_normal((batch, cap, kv_heads, d)).astype(dtype)
    v = rng.standard_normal((batch, cap, kv_heads, d)).astype(dtype)
    return q, k, v, np.array(lens, dtype=np.int32)


VARIANTS = [
    {},
    {"causal": False},
    {"window_left": 0},
    {"window_left": 5},
    {"window_left": 1000},
    {"softcap": 1.5},
    {"sinks": True},
    {"alibi": True},
    {"window_left": 9, "softcap": 2.0},
    {"window_left": 9, "sinks": True},
    {"window_left": 7, "softcap": 2.5, "sinks": True, "alibi": True, "causal": False},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(v) or "plain")
@pytest.mark.parametrize("strategy", ["lean", "split", "head"])
def test_variants_match_numpy_and_the_reference(variant, strategy):
    q, k, v, lens = make()
    rng = np.random.default_rng(5)
    kwargs = {key: val for key, val in variant.items() if key not in ("sinks", "alibi")}
    sinks = (2 * rng.standard_normal(8)).astype(np.float32) if variant.get("sinks") else None
    alibi = (2.0 ** (-np.arange(1, 9))).astype(np.float32) if variant.get("alibi") else None
    out, lse = leanattn.decode(q, k, v, lens, strategy=strategy, workers=3, tile=16,
                               return_lse=True, sinks=sinks, alibi_slopes=alibi, **kwargs)
    assert out.shape == q.shape and lse.shape == q.shape[:3]
    want, want_lse = numpy_attention(q, k, v, lens, sinks=sinks, alibi=alibi, **kwargs)
    np.testing.assert_allclose(out, want, atol=2e-5)
    np.testing.assert_allclose(lse, want_lse, atol=2e-5)
    ref, ref_lse = leanattn.reference(q, k, v, lens, return_lse=True, sinks=sinks,
                                      alibi_slopes=alibi, **kwargs)
    np.testing.assert_allclose(ref, want, atol=1e-6)  # the scale is a float32
    np.testing.assert_allclose(ref_lse, want_lse, atol=1e-6)


def test_three_d_q_is_q_len_one():
    q, k, v, lens = make(q_len=1)
    out3 = leanattn.decode(q[:, 0], k, v, lens, window_left=4)
    out4 = leanattn.decode(q, k, v, lens, window_left=4)
    assert out3.shape == (3, 8, 32) and out4.shape == (3, 1, 8, 32)
    np.testing.assert_array_equal(out3, out4[:, 0])


def test_caller_owned_outputs_with_q_len():
    q, k, v, lens = make(dtype=np.float16)
    out = np.empty_like(q)
    lse = np.empty(q.shape[:3], np.float32)
    got = leanattn.decode(q, k, v, lens, out=out, lse_out=lse, softcap=3.0)
    assert got[0] is out and got[1] is lse
    want, want_lse = numpy_attention(q, k, v, lens, softcap=3.0)
    np.testing.assert_allclose(out, want, atol=2e-3)
    np.testing.assert_allclose(lse, want_lse, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        ({"window_left": -2}, ValueError, "window_left"),
        ({"window_left": 1.5}, TypeError, "window_left"),
        ({"softcap": -1.0}, ValueError, "softcap"),
        ({"softcap": float("nan")}, ValueError, "softcap"),
        ({"sinks": np.zeros(8, np.float64)}, TypeError, "sinks"),
        ({"sinks": np.zeros(7, np.float32)}, ValueError, "sinks"),
        ({"alibi_slopes": np.zeros((2, 4), np.float32)}, ValueError, "alibi_slopes"),
        ({"causal": 1}, TypeError, "causal"),
    ],
)
def test_bad_variant_arguments(kwargs, error, text):
    q, k, v, lens = make()
    with pytest.raises(error, match=text):
        leanattn.decode(q, k, v, lens, **kwargs)


def test_q_len_longer_than_a_request():
    q, k, v, lens = make(lens=(70, 2, 33))
    with pytest.raises(ValueError, match="seq_lens"):
        leanattn.decode(q, k, v, lens)


@pytest.mark.parametrize("q_len, variant", [
    (1, {"softcap": 1.5}),
    (1, {"window_left": 9}),
    (1, {"window_left": 20, "softcap": 2.0}),
    (3, {"causal": False, "softcap": 0.7}),
])
def test_planned_fast_path_takes_scalar_variants(fast_path_only, q_len, variant):
    # decode(plan=, out=) with a plan made for the variant: the fast path's NumPy branch runs it
    # (the general path is made to fail; torch tensors: test_torch_op.py), NaN-poisoned outputs,
    # workers and tiles that cut every request.
    q, k, v, lens = make(q_len=q_len, lens=(70, 0, 33, 5), batch=4)
    q3 = q[:, 0] if q_len == 1 else q
    want, want_lse = numpy_attention(q, k, v, lens, **variant)
    if q_len == 1:
        want, want_lse = want[:, 0], want_lse[:, 0]
    for workers, tile in ((1, 16), (3, 16), (7, 32)):
        plan = leanattn.plan(lens, q_heads=8, kv_heads=2, head_dim=32, workers=workers, tile=tile,
                             q_len=q_len, **variant)
        out = np.full_like(q3, np.nan)
        lse = np.full(q3.shape[:-1], np.nan, np.float32)
        leanattn.decode(q3, k, v, plan=plan, out=out, lse_out=lse, **variant)
        np.testing.assert_allclose(out, want, atol=2e-5)
        np.testing.assert_allclose(lse, want_lse, atol=2e-5)


def test_planned_call_with_another_variant_is_refused():
    q, k, v, lens = make(q_len=1)
    out = np.empty_like(q[:, 0])
    plain = leanattn.plan(lens, q_heads=8, kv_heads=2, head_dim=32)
    with pytest.raises(ValueError, match="^plan: .*variant"):
        leanattn.decode(q[:, 0], k, v, plan=plain, out=out, softcap=2.0)
    capped = leanattn.plan(lens, q_heads=8, kv_heads=2, head_dim=32, softcap=2.0)
    with pytest.raises(ValueError, match="^plan: .*variant"):
        leanattn.decode(q[:, 0], k, v, plan=capped, out=out)
