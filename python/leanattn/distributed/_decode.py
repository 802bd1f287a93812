"""leanattn.distributed.decode: one decode step over a KV cache sharded across the ranks of a
torch.distributed group (context parallelism). Each rank attends over its shard with the local
lean decode (fp32 output and lse), then the ranks combine the partial states
(leanattn.distributed._combine).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import torch
import torch.distributed as dist

from .. import _decode as _local
from . import _combine

_COMBINE_FNS = {
    "all_gather": _combine.all_gather_combine,
    "all_reduce": _combine.all_reduce_combine,
    "all_to_all": _combine.all_to_all_combine,
}


def _check_positions(positions: Any, batch: int, local_seq_lens: Any) -> None:
    """positions: ``[batch, >= max(local_seq_lens)]`` integers (checked, not yet used)."""
    if not isinstance(positions, torch.Tensor):
        positions = torch.as_tensor(positions)
    if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dim() != 2:
        raise ValueError("positions: must be a [batch, local_capacity] integer tensor")
    longest = int(torch.as_tensor(local_seq_lens).max()) if batch else 0
    if positions.shape[0] != batch or positions.shape[1] < longest:
        raise ValueError(f"positions: must have shape [batch = {batch}, >= {longest}] "
                         f"(got {list(positions.shape)})")


def _local_q(q: torch.Tensor) -> torch.Tensor:
    """q for the local decode. On the host, q upcast to fp32 (exact): the CPU engine takes fp32 q
    with K and V in any dtype and then returns the partial output in fp32, unrounded. The CUDA
    kernels take Q, K, V and the output in one 16-bit dtype, so there q itself: the partial
    output is rounded to q's dtype before the fp32 merge (docs/context-parallel.md)."""
    return q.float() if q.device.type == "cpu" else q


def _check_out(out: Any, shape: Tuple[int, ...], q: torch.Tensor) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out: must be a torch.Tensor (got {type(out).__name__})")
    if tuple(out.shape) != shape or out.dtype != q.dtype or out.device != q.device:
        raise ValueError(f"out: must be a {list(shape)} {q.dtype} tensor on {q.device} "
                         f"(got {list(out.shape)} {out.dtype} on {out.device})")


def decode(
    q: torch.Tensor,
    k_shard: Any,
    v_shard: Any,
    local_seq_lens: Any,
    *,
    group: Optional[Any] = None,
    block_table: Any = None,
    positions: Any = None,
    scale: Optional[float] = None,
    strategy: str = "lean",
    workers: Optional[int] = None,
    tile: Optional[int] = None,
    combine: str = "all_gather",
    return_lse: bool = False,
    out: Optional[torch.Tensor] = None,
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Attention of one query token per request over a KV cache sharded across ``group``.

    Every rank calls this with the same q and its own shard of every request's keys and values
    (any layout: contiguous chunks, interleaved by token or by page; see
    :func:`leanattn.distributed.shard_positions`). Each rank runs :func:`leanattn.decode` on its
    shard with the lse (on the CPU with fp32 output: q is upcast, exactly; on CUDA the partial
    output is in q's 16-bit dtype, as the kernels require), then the ranks combine the partial
    states in fp32. The result equals attention over the whole
    sequence; with ``combine="all_gather"`` (default) it is bitwise the same on every rank.

    Args:
        q: ``[batch, q_heads, head_dim]`` torch tensor (float32, float16 or bfloat16), the same
            on every rank; CPU with Gloo, CUDA with NCCL.
        k_shard, v_shard: this rank's keys and values, as :func:`leanattn.decode` takes a cache:
            ``[batch, local_capacity, kv_heads, head_dim]`` or paged ``[num_pages, page_size,
            kv_heads, head_dim]`` with ``block_table``.
        local_seq_lens: ``[batch]`` tokens of each request on this rank (0: none; its part drops
            out of the merge).
        group: the process group (default: the world).
        block_table: ``[batch, max_pages]`` int32 for a paged shard.
        positions: ``[batch, local_capacity]`` global position of each local key. Checked for
            shape; plain softmax attention does not depend on it (windows, ALiBi and causality
            will).
        scale, strategy, workers, tile: as :func:`leanattn.decode` (``workers`` threads per
            rank: on one machine, split the cores between the ranks).
        combine: ``"all_gather"`` (gather, merge in rank order: bitwise identical everywhere),
            ``"all_reduce"`` (MAX then SUM all-reduces: summation order is the backend's) or
            ``"all_to_all"`` (head-sharded: this rank gets only heads
            ``[r*q_heads/P, (r+1)*q_heads/P)``).
        return_lse: also return the float32 lse over the whole sequence.
        out: a tensor to write the output to (q's dtype, device and the output shape).

    Returns:
        ``out`` ``[batch, q_heads, head_dim]`` (``q_heads / P`` heads for ``"all_to_all"``) in
        q's dtype, rounded once from fp32; with ``return_lse`` also lse ``[batch, heads]``.

    Raises:
        TypeError: q (or out) is not a torch tensor; dtypes as :func:`leanattn.decode`.
        ValueError: a bad argument (the message starts with its name), locally, before any
            communication.
        RuntimeError: torch.distributed is not initialised, or the combine failed (a peer
            raised, exited or timed out: the group's timeout bounds the wait).
    """
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"q: must be a torch.Tensor (got {type(q).__name__})")
    if combine not in _COMBINE_FNS:
        raise ValueError(f"combine: must be one of {', '.join(_COMBINE_FNS)} (got {combine!r})")
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("group: torch.distributed is not initialised "
                           "(call torch.distributed.init_process_group first)")
    if q.dim() != 3:
        raise ValueError(f"q: must be [batch, q_heads, head_dim] (got {list(q.shape)})")
    batch, q_heads, head_dim = (int(n) for n in q.shape)
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    if combine == "all_to_all" and q_heads % world:
        raise ValueError(f"q: q_heads = {q_heads} must be a multiple of the group size {world} "
                         "for combine='all_to_all'")
    heads = q_heads // world if combine == "all_to_all" else q_heads
    if out is not None:
        _check_out(out, (batch, heads, head_dim), q)
    if positions is not None:
        _check_positions(positions, batch, local_seq_lens)

    part, part_lse = _local.decode(_local_q(q), k_shard, v_shard, local_seq_lens,
                                   block_table=block_table, scale=scale, strategy=strategy,
                                   workers=workers, tile=tile, return_lse=True)
    try:
        merged, lse = _COMBINE_FNS[combine](part, part_lse, group)
    except RuntimeError as e:
        raise RuntimeError(f"leanattn.distributed.decode: the {combine} combine on rank {rank} of "
                           f"{world} failed (a peer raised, exited or timed out): {e}") from e
    if out is None:
        out = merged.to(q.dtype)
    else:
        out.copy_(merged)
    return (out, lse) if return_lse else out
