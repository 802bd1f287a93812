"""leanattn.distributed on Gloo (the torch stage): context-parallel decode over 2, 3 and 4 local
processes, KV sharded contiguously, interleaved by token and by page, with empty shards and
ragged batches, against leanattn.reference over the whole sequence; bitwise equality across ranks
and runs; a failing or absent rank makes the others raise within the group's timeout. One spawn
per group size runs every case (process start-up dominates). NCCL: a 1-rank group when a GPU
and the CUDA backend are there."""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case

torch = import_torch()
dist = pytest.importorskip("torch.distributed")
ld = pytest.importorskip("leanattn.distributed")

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# name -> (seq_lens, q_heads, kv_heads, head_dim, dtype)
CASES = {
    "long": ([3001], 8, 2, 64, "float32"),
    "long_f16": ([2000], 4, 4, 128, "float16"),
    "ragged": ([700, 0, 5, 1, 257, 16], 12, 2, 64, "float32"),
    "ragged_bf16": ([300, 1, 0, 33], 4, 1, 32, "bfloat16"),
    "mostly_empty": ([10, 3], 4, 2, 32, "float32"),  # interleaved by 16: ranks >= 1 hold nothing
}
LAYOUTS = [("contiguous", 1), ("interleaved", 1), ("interleaved", 16)]
COMBINES = ["all_gather", "all_reduce", "all_to_all"]
TIMEOUT = 120.0  # the whole spawn, seconds


def _case(name):
    lens, q_heads, kv_heads, head_dim, dtype = CASES[name]
    case = make_case(np.random.default_rng(len(name)), lens, q_heads=q_heads, kv_heads=kv_heads,
                     head_dim=head_dim)
    t = TORCH_DTYPES[dtype]
    q, k, v = (torch.from_numpy(x).to(t) for x in (case.q, case.k, case.v))
    return q, k, v, case.seq_lens, dtype


def _paged(k_shard, v_shard, local, page_size=8):
    """A contiguous shard re-laid as a paged cache with a reversed block table."""
    batch, cap, kv_heads, head_dim = k_shard.shape
    per = -(-cap // page_size)
    pad = per * page_size - cap
    k = torch.nn.functional.pad(k_shard, (0, 0, 0, 0, 0, pad))
    v = torch.nn.functional.pad(v_shard, (0, 0, 0, 0, 0, pad))
    k = k.reshape(batch * per, page_size, kv_heads, head_dim).flip(0).contiguous()
    v = v.reshape(batch * per, page_size, kv_heads, head_dim).flip(0).contiguous()
    table = (batch * per - 1 - torch.arange(batch * per, dtype=torch.int32)).reshape(batch, per)
    return k, v, table


def _cases_worker(rank, world):
    """Every case, layout and combine on this rank; each run twice, the second time with the ranks
    arriving in reverse order. Returns {key: (out, lse)}."""
    got = {}
    for name in CASES:
        q, k, v, lens, _ = _case(name)
        for layout, interleave in LAYOUTS:
            local, pos = ld.shard_positions(lens, rank, world, layout, interleave)
            ks, vs = ld.shard_cache(k, pos), ld.shard_cache(v, pos)
            for combine in COMBINES:
                if combine == "all_to_all" and q.shape[1] % world:
                    continue  # q_heads must split evenly over the ranks
                runs = []
                for delay in (0.0, 0.01 * (world - rank)):  # the second run: arrival reversed
                    time.sleep(delay)
                    runs.append(ld.decode(q, ks, vs, local, positions=pos, combine=combine,
                                          workers=1, return_lse=True))
                assert all(torch.equal(a, b) for a, b in zip(*runs)), "run-to-run bits differ"
                got[(name, layout, interleave, combine)] = runs[0]
            if name == "ragged":  # a paged shard, and out=
                kp, vp, table = _paged(ks, vs, local)
                dest = torch.empty_like(q)
                res = ld.decode(q, kp, vp, local, block_table=table, workers=1, out=dest)
                assert res is dest
                got[(name, layout, interleave, "paged")] = (dest, None)
    return got


@pytest.fixture(scope="module", params=[2, 3, 4], ids=lambda n: f"{n}ranks")
def world_results(request):
    world = request.param
    results = ld.run_local(_cases_worker, world, timeout=TIMEOUT, group_timeout=30.0)
    errors = [f"rank {r}: {res.error}" for r, res in enumerate(results) if res.error]
    assert not errors, "\n".join(errors)
    return world, [res.value for res in results]


@pytest.fixture(scope="module")
def refs():
    """name -> (out, lse, dtype) of leanattn.reference over the whole sequences (fp64)."""
    got = {}
    for name in CASES:
        q, k, v, lens, dtype = _case(name)
        got[name] = (*leanattn.reference(q, k, v, lens, return_lse=True), dtype)
    return got


def test_equals_whole_sequence_attention(world_results, refs):
    world, per_rank = world_results
    for key in per_rank[0]:
        name, _, _, combine = key
        ref, ref_lse, dtype = refs[name]
        for rank, got in enumerate(per_rank):
            out, lse = got[key]
            if combine == "all_to_all":  # this rank's slice of the heads
                heads = ref.shape[1] // world
                sl = slice(rank * heads, (rank + 1) * heads)
                assert_close(out, ref[:, sl], dtype, lse, ref_lse[:, sl])
            else:
                assert_close(out, ref, dtype, lse, ref_lse if lse is not None else None)


def test_bitwise_equal_across_ranks(world_results):
    """The same bits on every rank; with 2 ranks the all-reduce's sum has one order (a + b =
    b + a), so it equals the all-gather's merge bitwise too."""
    world, per_rank = world_results
    for key in per_rank[0]:
        if key[3] == "all_to_all":
            continue  # each rank holds different heads
        if world == 2 and key[3] == "all_reduce":
            for a, b in zip(per_rank[0][key], per_rank[0][(*key[:3], "all_gather")]):
                assert torch.equal(a, b), f"{key}: all_reduce differs from all_gather"
        for rank in range(1, len(per_rank)):
            for a, b in zip(per_rank[0][key], per_rank[rank][key]):
                if a is not None:
                    assert torch.equal(a, b), f"{key}: rank {rank} differs from rank 0"


def _failing_worker(rank, world, mode):
    """Rank 1 raises before the combine (mode "raise") or never arrives ("absent")."""
    q, k, v, lens, _ = _case("ragged")
    local, pos = ld.shard_positions(lens, rank, world)
    ks, vs = ld.shard_cache(k, pos), ld.shard_cache(v, pos)
    if rank == 1:
        if mode == "raise":
            local = -local - 1  # a bad argument: ValueError before any communication
        else:
            time.sleep(5)
            return "slept"
    start = time.monotonic()
    try:
        ld.decode(q, ks, vs, local, workers=1)
    except RuntimeError as e:
        return ("RuntimeError", str(e), time.monotonic() - start)
    return ("returned", "", time.monotonic() - start)


@pytest.mark.parametrize("mode", ["raise", "absent"])
def test_a_failing_rank_makes_the_others_fail(mode):
    group_timeout = 3.0
    start = time.monotonic()
    results = ld.run_local(_failing_worker, 3, mode, timeout=60.0, group_timeout=group_timeout)
    assert time.monotonic() - start < 60.0
    if mode == "raise":
        assert results[1].error.startswith("ValueError: seq_lens: "), results[1].error
    for rank in (0, 2):
        assert results[rank].error is None, results[rank].error
        kind, message, seconds = results[rank].value
        assert kind == "RuntimeError", f"rank {rank} returned without its peer"
        assert "leanattn.distributed.decode: the all_gather combine on rank" in message
        assert seconds < group_timeout + 5.0, f"rank {rank} waited {seconds:.1f} s"


@pytest.mark.skipif(not torch.cuda.is_available() or "cuda" not in leanattn.backends,
                    reason="NCCL: needs a GPU and the CUDA backend")
def test_nccl_one_rank_group(tmp_path):
    """The NCCL path: a 1-rank group on one GPU, every combine, against the reference (bf16:
    the CUDA kernels take Q, K and V in one 16-bit dtype)."""
    q, k, v, lens, _ = _case("ragged")
    q, k, v, dtype = q.bfloat16(), k.bfloat16(), v.bfloat16(), "bfloat16"
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1, timeout=timedelta(seconds=30))
    try:
        ref, ref_lse = leanattn.reference(q, k, v, lens, return_lse=True)
        for combine in COMBINES:
            out, lse = ld.decode(q.cuda(), k.cuda(), v.cuda(), lens, combine=combine,
                                 return_lse=True)
            assert out.is_cuda and lse.is_cuda
            assert_close(out.cpu(), ref, dtype, lse.cpu(), ref_lse)
    finally:
        dist.destroy_process_group()
