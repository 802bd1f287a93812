"""K and V of different widths through PyTorch (issue 32): torch.ops.leanattn.decode / decode_
with a V cache narrower than K and with v_cache None (V the first head_dim_v values of K's rows,
absorbed MLA), eager and under torch.compile(fullgraph=True), the fake implementation's output
width, decode's DLPack fast path (plan + out), the transformers attention function with K 48 /
V 32 compiled, all against the NumPy fp64 attention on fresh random data, outputs poisoned
first; and, with a GPU and the CUDA backend, DeepSeek's widths on the CUDA engine (K 192 / V 128
with its own V cache, absorbed MLA's K 576 / V 512 read from K's rows), its refusal of other
widths naming head_dim_v and of a separate V cache at 576 / 512 naming v_cache."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case, numpy_attention

torch = import_torch()
import leanattn.torch_ops  # noqa: E402,F401  (registers torch.ops.leanattn)

cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or "cuda" not in leanattn.backends,
    reason="needs a CUDA device and the CUDA backend")


def tensors(case):
    return tuple(torch.from_numpy(np.ascontiguousarray(x))
                 for x in (case.q, case.k, case.v, case.seq_lens))


@pytest.mark.parametrize("page_size", [None, 16])
def test_ops_with_a_narrower_v(rng, page_size):
    case = make_case(rng, [130, 0, 17, 1], q_heads=8, kv_heads=2, head_dim=192,
                     head_dim_v=128, page_size=page_size)
    q, k, v, lens = tensors(case)
    table = None if case.block_table is None else torch.from_numpy(case.block_table)
    want, want_lse = numpy_attention(*case.args(), case.block_table, scale=0.1)
    out, lse = torch.ops.leanattn.decode(q, k, v, lens, table, 0.1)
    assert out.shape == (4, 8, 128)
    assert_close(out, want, "float32", lse, want_lse)
    buf, buf_lse = torch.full((4, 8, 128), float("nan")), torch.full((4, 8), float("nan"))
    torch.ops.leanattn.decode_(q, k, v, lens, buf, buf_lse, table, 0.1, head_dim_v=128)
    assert_close(buf, want, "float32", buf_lse, want_lse)
    with pytest.raises(ValueError, match="^head_dim_v: must equal V's width"):
        torch.ops.leanattn.decode(q, k, v, lens, table, 0.1, head_dim_v=64)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_ops_with_the_latent_cache(rng, dtype):
    case = make_case(rng, [70, 0, 9], q_heads=16, kv_heads=1, head_dim=576, dtype=dtype)
    q, k, _, lens = (torch.from_numpy(x.view(np.uint16)).view(torch.bfloat16)
                     if x.dtype.name == "bfloat16" else torch.from_numpy(x)
                     for x in case.args())
    want, want_lse = numpy_attention(case.q, case.k, case.k[..., :512], case.seq_lens)
    out, lse = torch.ops.leanattn.decode(q, k, None, lens, head_dim_v=512)
    assert out.shape == (3, 16, 512) and out.dtype == q.dtype
    assert_close(out, want, dtype, lse, want_lse)
    buf = torch.full((3, 16, 512), float("nan"), dtype=q.dtype)
    torch.ops.leanattn.decode_(q, k, None, lens, buf, head_dim_v=512)
    assert_close(buf, want, dtype)


def test_fake_output_width():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q, lens = torch.empty(3, 8, 192), torch.empty(3, dtype=torch.int32)
        k = torch.empty(3, 40, 2, 192)
        out, lse = torch.ops.leanattn.decode(q, k, torch.empty(3, 40, 2, 128), lens)
        assert out.shape == (3, 8, 128) and lse.shape == (3, 8)
        assert torch.ops.leanattn.decode(q, k, None, lens, head_dim_v=160)[0].shape == (3, 8, 160)
        assert torch.ops.leanattn.decode(q, k, None, lens)[0].shape == (3, 8, 192)
        # ggml's blocks: V's width from its row bytes (2 blocks of 34 bytes: 64 values).
        kq, vq = torch.empty(3, 40, 2, 204, dtype=torch.uint8), torch.empty(
            3, 40, 2, 68, dtype=torch.uint8)
        got = torch.ops.leanattn.decode(q, kq, vq, lens, kv_dtype="q8_0")[0]
        assert got.shape == (3, 8, 64)


def test_compile_fullgraph_with_both_forms(rng):
    case = make_case(rng, [90, 0, 33], q_heads=8, kv_heads=1, head_dim=96, head_dim_v=64)
    q, k, v, lens = tensors(case)

    def step(q, k, v, lens):
        separate, _ = torch.ops.leanattn.decode(q, k, v, lens)
        latent, lse = torch.ops.leanattn.decode(q * 0.5, k, None, lens, head_dim_v=32)
        buf = torch.empty(3, 8, 32)
        torch.ops.leanattn.decode_(q, k, None, lens, buf, None, None, 0.3, head_dim_v=32)
        return separate + 1.0, latent * 2.0, lse, buf

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v, lens)
    explained = torch._dynamo.explain(step)(q, k, v, lens)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    assert [tuple(g.shape) for g in got] == [(3, 8, 64), (3, 8, 32), (3, 8), (3, 8, 32)]
    assert_close(got[0] - 1.0, numpy_attention(*case.args())[0], "float32")
    latent_v = case.k[..., :32]
    want = numpy_attention(case.q * 0.5, case.k, latent_v, case.seq_lens)[0]
    assert_close(got[1] / 2.0, want, "float32")
    want = numpy_attention(case.q, case.k, latent_v, case.seq_lens, scale=0.3)[0]
    assert_close(got[3], want, "float32")


def test_planned_torch_call_with_the_latent_cache(rng, fast_path_only):
    # decode(plan=, out=) with torch tensors and v_cache None: the DLPack fast path, V's width
    # from the plan.
    case = make_case(rng, [200, 0, 5], q_heads=8, kv_heads=1, head_dim=192)
    q, k, _, _ = tensors(case)
    want, want_lse = numpy_attention(case.q, case.k, case.k[..., :128], case.seq_lens)
    for workers, tile in ((1, 16), (3, 16), (5, 64)):
        plan = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=1, head_dim=192,
                             head_dim_v=128, workers=workers, tile=tile)
        out, lse = torch.full((3, 8, 128), float("nan")), torch.full((3, 8), float("nan"))
        leanattn.decode(q, k, None, plan=plan, out=out, lse_out=lse)
        assert_close(out, want, "float32", lse, want_lse)


def test_attention_function_with_k_and_v_of_two_widths_compiles(rng):
    # transformers' DeepseekV3 passes K 48 / V 32 (qk_nope 32 + rope 16, v_head_dim 32) to the
    # attention function: the decode step compiled, no graph break, the output V's width.
    pytest.importorskip("transformers")
    from leanattn.integrations.transformers import leanattn_attention_forward

    module = torch.nn.Module()
    module.sliding_window = None
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(2, 4, 1, 48, generator=gen)
    k, v = torch.randn(2, 4, 30, 48, generator=gen), torch.randn(2, 4, 30, 32, generator=gen)

    def step(q, k, v):
        return leanattn_attention_forward(module, q, k, v, None, scaling=48 ** -0.5)[0] * 1.0

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v)
    assert got.shape == (2, 1, 4, 32)
    torch.testing.assert_close(got, step(q, k, v), rtol=0, atol=0)
    want = torch.softmax(torch.einsum("bhd,bhnd->bhn", q[:, :, 0], k) * 48 ** -0.5, -1)
    torch.testing.assert_close(got[:, 0], torch.einsum("bhn,bhnd->bhd", want, v),
                               rtol=1e-5, atol=1e-5)


@cuda
@pytest.mark.parametrize("shared", [False, True], ids=["separate", "latent"])
def test_cuda_refuses_v_of_another_width(rng, shared):
    case = make_case(rng, [40, 7], q_heads=8, kv_heads=1, head_dim=128, dtype="float16",
                     head_dim_v=64)
    q, k, v, lens = (t.cuda() for t in tensors(case))
    with pytest.raises(ValueError, match="^head_dim_v: the CUDA engine reads K and V of "
                                         "different widths only as .*head_dim_v 64"):
        leanattn.decode(q, k, None if shared else v, lens, head_dim_v=64)


@cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_runs_deepseeks_widths(rng, dtype):
    # The model's attention (K 192 / V 128, its own V cache) and absorbed MLA over the latent
    # cache (K 576, V its first 512 columns, 48 query heads on one KV head: a pass and a half of
    # the kernel's 32 rows).
    case = make_case(rng, [300, 0, 41], q_heads=4, kv_heads=4, head_dim=192, head_dim_v=128,
                     dtype=dtype)
    q, k, v, lens = (t.cuda() for t in tensors(case))
    out = torch.full((3, 4, 128), float("nan"), dtype=q.dtype, device="cuda")
    leanattn.decode(q, k, v, lens, out=out)
    assert_close(out, numpy_attention(case.q, case.k, case.v, case.seq_lens)[0], dtype)
    case = make_case(rng, [300, 0, 41], q_heads=48, kv_heads=1, head_dim=576, dtype=dtype)
    q, k, _, lens = (t.cuda() for t in tensors(case))
    out = torch.full((3, 48, 512), float("nan"), dtype=q.dtype, device="cuda")
    leanattn.decode(q, k, None, lens, head_dim_v=512, out=out)
    want = numpy_attention(case.q, case.k, case.k[..., :512], case.seq_lens)[0]
    assert_close(out, want, dtype)


@cuda
def test_cuda_refuses_a_v_cache_of_its_own_at_mla_widths(rng):
    case = make_case(rng, [40, 7], q_heads=16, kv_heads=1, head_dim=576, head_dim_v=512,
                     dtype="float16")
    q, k, v, lens = (t.cuda() for t in tensors(case))
    with pytest.raises(ValueError, match="^v_cache: must be k_cache with K's strides"):
        leanattn.decode(q, k, v, lens)


@cuda
def test_cuda_reads_v_from_ks_rows_at_ks_width(rng):
    # V in K's rows at K's whole width is plain attention with V = K: the CUDA engine runs it.
    case = make_case(rng, [300, 0, 41], q_heads=8, kv_heads=1, head_dim=128, dtype="float16")
    q, k, _, lens = (t.cuda() for t in tensors(case))
    out = torch.full((3, 8, 128), float("nan"), dtype=torch.float16, device="cuda")
    leanattn.decode(q, k, None, lens, out=out)
    assert_close(out, numpy_attention(case.q, case.k, case.k, case.seq_lens)[0], "float16")
