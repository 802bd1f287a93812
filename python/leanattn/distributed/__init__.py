"""leanattn.distributed: context-parallel decode on torch.distributed (Gloo on CPUs, NCCL on
GPUs). One sequence's KV cache is sharded across the ranks of a group; each rank attends over
its shard with the lean decode and the ranks merge the partial (out, lse) states exactly.

Functions:
    decode(q, k_shard, v_shard, local_seq_lens, *, group=None, ...)   the sharded decode step
    shard_positions(seq_lens, rank, world_size, layout, interleave)   which tokens a rank holds
    shard_cache(cache, positions)                                     a rank's shard of a cache
    merge_partials(outs, lses)                                        the rank-order merge
    all_gather_combine / all_reduce_combine / all_to_all_combine      the combine collectives
    run_local(fn, world_size, ...)                                    local processes in a group

Needs PyTorch. ``python -m leanattn.distributed.bench`` measures it on local Gloo processes,
``python -m leanattn.distributed.model`` models it on GPUs (docs/context-parallel.md).
"""

from __future__ import annotations

try:
    import torch.distributed  # noqa: F401
except ImportError as e:  # pragma: no cover - the torch stage always has it
    raise ImportError("leanattn.distributed needs PyTorch with torch.distributed "
                      "(pip install torch)") from e

from ._combine import (
    COMBINES,
    all_gather_combine,
    all_reduce_combine,
    all_to_all_combine,
    merge_partials,
    wire_bytes,
)
from ._decode import decode
from ._shard import LAYOUTS, shard_cache, shard_positions
from ._spawn import RankResult, run_local

__all__ = [
    "COMBINES",
    "LAYOUTS",
    "RankResult",
    "all_gather_combine",
    "all_reduce_combine",
    "all_to_all_combine",
    "decode",
    "merge_partials",
    "run_local",
    "shard_cache",
    "shard_positions",
    "wire_bytes",
]
