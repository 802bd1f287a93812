"""plan="device" on torch.ops.leanattn.decode / decode_ and leanattn.DecodeStep with PyTorch
tensors. On the CPU: the op with plan="device" against the fp64 reference and bitwise equal to
the host-planned op for changing lengths (contiguous and paged), under torch.compile(fullgraph)
too, and its refusals. On CUDA (run by scripts/device-check.sh; skipped without a GPU): a
torch.cuda.graph captured once replays 20 length sets written into a device tensor (the op with
plan="device" over a paged cache, and DecodeStep with planning="host"), each output bitwise equal
to leanattn.decode of the same lengths; a length out of bounds is reported by check()."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close, import_torch, make_case, numpy_attention, replay_lengths

torch = import_torch()
import leanattn  # noqa: E402
import leanattn.torch_ops  # noqa: E402,F401  (registers torch.ops.leanattn)

BATCH, BOUND = 5, 200
cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or "cuda" not in leanattn.backends,
    reason="needs a CUDA device and the CUDA backend")


def as_torch(case, device="cpu", dtype=torch.float16):
    q, k, v = (torch.from_numpy(x).to(device=device, dtype=dtype) for x in (case.q, case.k, case.v))
    table = None if case.block_table is None else torch.from_numpy(case.block_table).to(device)
    return q, k, v, table


@pytest.mark.parametrize("page_size", [None, 16])
def test_op_plans_where_it_runs(rng, page_size):
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=64,
                     page_size=page_size)
    q, k, v, table = as_torch(case)
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:2])
    for lens in replay_lengths(rng, 10):
        t = torch.from_numpy(lens)
        out.fill_(float("nan"))
        torch.ops.leanattn.decode_(q, k, v, t, out, lse, table, plan="device",
                                   max_seq_len=BOUND)
        ref, ref_lse = numpy_attention(q, k, v, lens, case.block_table)
        assert_close(out, ref, "float16", lse, ref_lse)
        want, want_lse = torch.ops.leanattn.decode(q, k, v, t, table)
        assert torch.equal(out, want) and torch.equal(lse, want_lse), lens


def test_op_with_plan_device_compiles_fullgraph(rng):
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=64)
    q, k, v, _ = as_torch(case, dtype=torch.float32)

    def step(q, k, v, lens):
        out, lse = torch.ops.leanattn.decode(q * 2.0, k, v, lens, plan="device",
                                             max_seq_len=BOUND)
        return out + 1.0, lse

    compiled = torch.compile(step, fullgraph=True)
    for lens in replay_lengths(rng, 3):
        t = torch.from_numpy(lens)
        out, lse = compiled(q, k, v, t)
        eager, eager_lse = step(q, k, v, t)
        assert torch.equal(out, eager) and torch.equal(lse, eager_lse)
        ref, _ = numpy_attention(q * 2.0, k, v, lens)
        assert_close(out - 1.0, ref, "float32")


def test_op_refusals(rng):
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=64)
    q, k, v, _ = as_torch(case)
    lens = torch.tensor([1, 2, 3, 4, 5], dtype=torch.int32)
    with pytest.raises(ValueError, match="^plan: must be 'device'"):
        torch.ops.leanattn.decode(q, k, v, lens, plan="host", max_seq_len=BOUND)
    with pytest.raises(ValueError, match="^max_seq_len: required with plan='device'"):
        torch.ops.leanattn.decode(q, k, v, lens, plan="device")
    with pytest.raises(ValueError, match="^seq_lens: request 0 has length 201"):
        torch.ops.leanattn.decode(q, k, v, lens + 200, plan="device", max_seq_len=BOUND)


def graph_of(fn):
    """fn run once on a side stream (torch's warm-up before a capture), then captured."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def same_plan_decode(step, q, k, v, lens, table=None):
    """leanattn.decode with the step's workers and tile: the plan the step makes (lean,
    head-major on CUDA), so its output and lse are bitwise the step's."""
    return leanattn.decode(q, k, v, lens, block_table=table, workers=step.workers,
                           tile=step.tile, return_lse=True)


def poisoned(*tensors):
    for t in tensors:
        t.fill_(float("nan"))


@cuda
def test_cuda_graph_of_the_op_replays_new_lengths(rng):
    """Two layers' calls (two q, two outputs: one kept step) in one graph, over a paged cache."""
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=64, page_size=16)
    q, k, v, table = as_torch(case, "cuda", torch.bfloat16)
    q2 = (q * 0.5).contiguous()
    lens_dev = torch.zeros(BATCH, dtype=torch.int32, device="cuda")
    outs = [torch.empty_like(q), torch.empty_like(q)]
    lses = [torch.empty(q.shape[:2], device="cuda"), torch.empty(q.shape[:2], device="cuda")]

    def layers():
        for query, out, lse in zip((q, q2), outs, lses):
            torch.ops.leanattn.decode_(query, k, v, lens_dev, out, lse, table, plan="device",
                                       max_seq_len=BOUND)

    graph = graph_of(layers)
    step = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, block_table=table)  # its workers, tile
    for lens in replay_lengths(rng, 20):
        lens_dev.copy_(torch.from_numpy(lens))
        poisoned(*outs, *lses)
        graph.replay()
        torch.cuda.synchronize()
        leanattn.torch_ops.check_steps()
        for query, out, lse in zip((q, q2), outs, lses):
            want, want_lse = same_plan_decode(step, query, k, v, lens, table)
            assert torch.equal(out, want) and torch.equal(lse, want_lse), lens
            ref, ref_lse = numpy_attention(query, k, v, lens, case.block_table)
            assert_close(out, ref, "bfloat16", lse, ref_lse)


@cuda
def test_cuda_graph_of_a_host_planned_step(rng):
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=128)
    q, k, v, _ = as_torch(case, "cuda")
    step = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND, planning="host")
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:2], device="cuda")
    step.plan([BOUND] * BATCH)
    graph = graph_of(lambda: step(q, k, v, out=out, lse_out=lse))
    for lens in replay_lengths(rng, 20):
        step.plan(lens)
        poisoned(out, lse)
        graph.replay()
        torch.cuda.synchronize()
        want, want_lse = same_plan_decode(step, q, k, v, lens)
        assert torch.equal(out, want) and torch.equal(lse, want_lse), lens
        ref, ref_lse = numpy_attention(q, k, v, lens)
        assert_close(out, ref, "float16", lse, ref_lse)
    with pytest.raises(ValueError, match="^seq_lens: request 1 has length 201"):
        step.plan([1, 201])


@cuda
def test_cuda_device_step_reports_a_length_out_of_bounds(rng):
    case = make_case(rng, [BOUND] * BATCH, q_heads=4, kv_heads=1, head_dim=64)
    q, k, v, _ = as_torch(case, "cuda")
    step = leanattn.DecodeStep(q, k, v, max_seq_len=BOUND)
    lens = torch.tensor([5, 201, 0, 0, 7], dtype=torch.int32, device="cuda")
    out = torch.full_like(q, float("nan"))
    step(q, k, v, lens, out=out)
    with pytest.raises(ValueError, match="^seq_lens: request 1 "):
        step.check()
    assert torch.isnan(out).all()  # planned nothing, wrote nothing
    step.check()  # cleared
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        with pytest.raises(ValueError, match="^stream: is capturing"):
            leanattn.DecodeStep(q, k, v, max_seq_len=BOUND)
