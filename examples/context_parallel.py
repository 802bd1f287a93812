"""Context-parallel decode on CPUs: one long sequence's KV cache sharded over 4 processes
(torch.multiprocessing + the Gloo backend), interleaved by page as vLLM's decode context
parallelism places tokens. Each rank attends over its shard; the partial (out, lse) states are
all-gathered and merged in rank order, so every rank ends with the same bits, equal to attention
over the whole sequence.

    python examples/context_parallel.py            (needs torch and leanattn installed)
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import leanattn
import leanattn.distributed as ld

WORLD, SEQ_LEN, Q_HEADS, KV_HEADS, HEAD_DIM, PAGE = 4, 50_000, 32, 8, 128, 16


def whole_problem():
    """The same q and whole cache on every rank (a real server holds only its shard)."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, Q_HEADS, HEAD_DIM, generator=g).half()
    k = torch.randn(1, SEQ_LEN, KV_HEADS, HEAD_DIM, generator=g).half()
    v = torch.randn(1, SEQ_LEN, KV_HEADS, HEAD_DIM, generator=g).half()
    return q, k, v


def worker(rank, store):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=WORLD, timeout=timedelta(seconds=60))
    q, k, v = whole_problem()
    # Token t lives on rank (t // PAGE) % WORLD; positions are its global indices.
    local_lens, positions = ld.shard_positions([SEQ_LEN], rank, WORLD, "interleaved", PAGE)
    k_shard, v_shard = ld.shard_cache(k, positions), ld.shard_cache(v, positions)
    out, lse = ld.decode(q, k_shard, v_shard, local_lens, positions=positions,
                         workers=max(1, leanattn.default_workers() // WORLD), return_lse=True)
    everyone = [torch.empty_like(out) for _ in range(WORLD)]
    dist.all_gather(everyone, out)
    if rank == 0:
        same = all(torch.equal(everyone[0], o) for o in everyone)
        whole = leanattn.decode(q, k, v, [SEQ_LEN])
        ref = torch.from_numpy(leanattn.reference(q, k, v, [SEQ_LEN]))
        print(f"rank 0 holds {int(local_lens[0])} of {SEQ_LEN} tokens; "
              f"the same bits on all {WORLD} ranks: {same}")
        err, err_whole = ((x.double() - ref).abs().max().item() for x in (out, whole))
        print(f"max |distributed - fp64 reference| = {err:.2e}, "
              f"max |single-process - reference| = {err_whole:.2e}")
        assert same and err <= 1e-3, "the distributed result should match on every rank"
    dist.destroy_process_group()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(os.path.join(tmp, "store"),), nprocs=WORLD, join=True)
