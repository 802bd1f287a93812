"""torch.ops.leanattn.decode / decode_ (leanattn.torch_ops): eager results against the fp64
references, the in-place op writing caller tensors, the fake implementation's shapes, and
torch.compile(fullgraph=True) of a function calling them (no graph break, same result)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import (assert_close, import_torch, make_case, numpy_attention,
                      numpy_variant_attention)

torch = import_torch()
import leanattn  # noqa: E402  (after torch: registers the ops)
import leanattn.torch_ops  # noqa: E402,F401


def tensors(case):
    return tuple(torch.from_numpy(x) for x in (case.q, case.k, case.v, case.seq_lens))


@pytest.mark.parametrize("page_size", [None, 16])
def test_op_matches_reference(rng, page_size):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64, page_size=page_size)
    q, k, v, lens = tensors(case)
    table = None if case.block_table is None else torch.from_numpy(case.block_table)
    out, lse = torch.ops.leanattn.decode(q, k, v, lens, table, 0.2)
    ref, ref_lse = numpy_attention(*case.args(), case.block_table, scale=0.2)
    assert_close(out, ref, "float32", lse, ref_lse)


def test_inplace_op(rng):
    case = make_case(rng, [64, 5], q_heads=4, kv_heads=1, head_dim=32)
    q, k, v, lens = tensors(case)
    out, lse = torch.empty_like(q), torch.empty(2, 4)
    assert torch.ops.leanattn.decode_(q, k, v, lens, out, lse) is None
    ref, ref_lse = numpy_attention(*case.args())
    assert_close(out, ref, "float32", lse, ref_lse)
    with pytest.raises(ValueError, match="^out: "):
        torch.ops.leanattn.decode_(q, k, v, lens, torch.empty(2, 4, 16))


def test_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q, k = torch.empty(3, 8, 64, dtype=torch.float16), torch.empty(3, 99, 2, 64)
        out, lse = torch.ops.leanattn.decode(q, k, k, torch.empty(3, dtype=torch.int32))
        assert out.shape == q.shape and out.dtype == q.dtype
        assert lse.shape == (3, 8) and lse.dtype == torch.float32


def test_compile_fullgraph(rng):
    case = make_case(rng, [200, 31], q_heads=8, kv_heads=2, head_dim=64)
    q, k, v, lens = tensors(case)

    def step(q, k, v, lens):
        out, lse = torch.ops.leanattn.decode(q * 2.0, k, v, lens)
        buf = torch.empty_like(out)
        torch.ops.leanattn.decode_(q, k, v, lens, buf)
        return out + 1.0, lse, buf

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True)
    got = compiled(q, k, v, lens)
    want = step(q, k, v, lens)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    explained = torch._dynamo.explain(step)(q, k, v, lens)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    assert np.isfinite(got[1].numpy()).all()


@pytest.mark.parametrize("variant", [{"softcap": 1.5}, {"window_left": 11},
                                     {"softcap": 0.8, "window_left": 40}])
def test_op_takes_softcap_and_window(rng, fast_path_only, variant):
    # Gemma 2's soft-cap and a sliding layer through both ops, eager and compiled, against the
    # fp64 definition; the plain plan the op keeps must not serve them (the planned path runs).
    case = make_case(rng, [300, 0, 17, 64], q_heads=8, kv_heads=2, head_dim=64)
    q, k, v, lens = tensors(case)
    want, want_lse = numpy_variant_attention(case.q[:, None], case.k, case.v, case.seq_lens,
                                             scale=0.2, **variant)
    want, want_lse = want[:, 0], want_lse[:, 0]
    plain, _ = torch.ops.leanattn.decode(q, k, v, lens, None, 0.2)
    assert not np.allclose(plain.numpy(), want, atol=1e-3)  # the variant changes the result
    out, lse = torch.ops.leanattn.decode(q, k, v, lens, None, 0.2, **variant)
    assert_close(out, want, "float32", lse, want_lse)
    buf, buf_lse = torch.full_like(q, float("nan")), torch.full((4, 8), float("nan"))
    torch.ops.leanattn.decode_(q, k, v, lens, buf, buf_lse, None, 0.2, **variant)
    assert_close(buf, want, "float32", buf_lse, want_lse)

    def step(q, k, v, lens):
        return torch.ops.leanattn.decode(q, k, v, lens, None, 0.2, **variant)[0] + 0.0

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v, lens)
    torch.testing.assert_close(got, out, rtol=0, atol=0)


def test_planned_torch_call_takes_scalar_variants(fast_path_only):
    # decode(plan=, out=) with torch tensors reads them through the DLPack exchange
    # (the fast path) with the variant's values: 3 query tokens per request, not causal, a
    # soft-cap; workers and tiles that cut the requests.
    gen = np.random.default_rng(3)
    lens = np.array([70, 0, 33, 5], np.int32)
    q = torch.from_numpy(gen.standard_normal((4, 3, 8, 32)).astype(np.float32))
    k, v = (torch.from_numpy(gen.standard_normal((4, 73, 2, 32)).astype(np.float32))
            for _ in range(2))
    variant = {"causal": False, "softcap": 0.7}
    want, want_lse = numpy_variant_attention(q.numpy(), k.numpy(), v.numpy(), lens, **variant)
    for workers, tile in ((1, 16), (3, 16), (7, 32)):
        plan = leanattn.plan(lens, q_heads=8, kv_heads=2, head_dim=32, workers=workers,
                             tile=tile, q_len=3, **variant)
        out, lse = torch.full_like(q, float("nan")), torch.full((4, 3, 8), float("nan"))
        leanattn.decode(q, k, v, plan=plan, out=out, lse_out=lse, **variant)
        np.testing.assert_allclose(out.numpy(), want, atol=2e-5)
        np.testing.assert_allclose(lse.numpy(), want_lse, atol=2e-5)
