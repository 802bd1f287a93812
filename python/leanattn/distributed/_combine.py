"""Combining partial attention states across the ranks of a torch.distributed group.

Each rank holds ``(out_r, lse_r)``: attention over its own keys, out normalised, lse the natural
log of the softmax denominator (``-inf`` for an empty shard). Over the union of the keys::

    m = max_r lse_r        w_r = exp(lse_r - m)        s = sum_r w_r
    out = (sum_r w_r * out_r) / s                      lse = m + log(s)

Three ways to get there (all send fp32):

* :func:`all_gather_combine`: one all-gather of ``[batch, q_heads, head_dim + 1]`` per rank,
  then :func:`merge_partials` in a fixed order over the ranks: a pure function of the gathered
  tensors, hence bitwise identical on every rank and every run, whatever the arrival order.
* :func:`all_reduce_combine`: an all-reduce MAX of lse, then one all-reduce SUM of
  ``[w * out, w]``. The max is exact; the sum's order is the backend's (see docs).
* :func:`all_to_all_combine`: the head-sharded form of serving engines (a reduce-scatter by
  heads): each rank receives every rank's states for its slice of the query heads and merges
  them in rank order (bitwise deterministic); it returns only that slice.

Empty shards follow the library's rule (docs/numerics.md): ``-inf`` parts get weight 0, all
``-inf`` gives zeros and ``-inf``; NaN propagates.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch
import torch.distributed as dist

COMBINES = ("all_gather", "all_reduce", "all_to_all")


def _finite_max(m: torch.Tensor) -> torch.Tensor:
    """m with -inf (every part empty) replaced by 0, so that ``lse - m`` is never -inf - -inf."""
    return torch.where(torch.isneginf(m), torch.zeros_like(m), m)


def _weights(lse: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``exp(lse - m)``: 1 for the largest part, 0 for an empty one (lse -inf)."""
    return torch.exp(lse - _finite_max(m))


def _finish(
    acc: torch.Tensor, s: torch.Tensor, m: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(acc * (1 / s), m + log s)``; s = 0 (every part empty) gives zeros and -inf, NaN stays
    NaN. acc ``[..., head_dim]``, s and m ``[...]``."""
    inv = torch.where(s == 0, torch.zeros_like(s), 1.0 / s)
    return acc * inv.unsqueeze(-1), _finite_max(m) + torch.log(s)


def _tree_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over dim 0 in a fixed pairwise order, ((x0 + x1) + (x2 + x3)) + ..., an odd last
    element carried up a level: ceil(log2 P) additions, whatever torch's own reduction order."""
    while x.shape[0] > 1:
        n = x.shape[0]
        pairs = x[0:n - 1:2] + x[1:n:2]
        x = torch.cat([pairs, x[n - 1:]]) if n % 2 else pairs
    return x[0]


def merge_partials(outs: torch.Tensor, lses: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merges P partial states in a fixed order over the index (a pairwise tree in rank order:
    bitwise the same for the same inputs, on any rank).

    Args:
        outs: ``[P, ..., head_dim]`` float32 normalised partial outputs.
        lses: ``[P, ...]`` float32 natural-log sums (``-inf``: empty part).

    Returns:
        ``(out [..., head_dim], lse [...])`` float32.
    """
    m = lses.amax(dim=0)
    w = _weights(lses, m).unsqueeze(-1)
    total = _tree_sum(torch.cat([w * outs, w], dim=-1))  # [..., head_dim + 1]: sum w*out, sum w
    return _finish(total[..., :-1], total[..., -1], m)


def _pack(out: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
    """``[..., head_dim + 1]`` float32: out and lse in one buffer, one message."""
    return torch.cat([out.float(), lse.float().unsqueeze(-1)], dim=-1).contiguous()


def all_gather_combine(
    out: torch.Tensor, lse: torch.Tensor, group: Optional[Any] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """All-gather the partial states, merge them in a fixed order over the ranks.

    Args:
        out: ``[batch, q_heads, head_dim]`` this rank's partial output (float32 preferred).
        lse: ``[batch, q_heads]`` float32.

    Returns:
        ``(out, lse)`` float32 over every rank's keys, the same bits on every rank.
    """
    packed = _pack(out, lse)  # [batch, q_heads, head_dim + 1]
    world = dist.get_world_size(group)
    # Concatenated along dim 0 (what Gloo and NCCL both accept), then one view per rank.
    gathered = packed.new_empty((world * packed.shape[0],) + tuple(packed.shape[1:]))
    dist.all_gather_into_tensor(gathered, packed, group=group)
    gathered = gathered.view((world,) + tuple(packed.shape))  # [P, batch, q_heads, head_dim + 1]
    return merge_partials(gathered[..., :-1], gathered[..., -1])


def all_reduce_combine(
    out: torch.Tensor, lse: torch.Tensor, group: Optional[Any] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """All-reduce MAX of lse, then one all-reduce SUM of ``[w * out, w]`` (same shapes as
    :func:`all_gather_combine`). Bitwise identical across ranks and runs only as far as the
    backend's summation order is fixed (docs/context-parallel.md)."""
    lse = lse.float()
    m = lse.clone()
    dist.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
    w = _weights(lse, m)
    packed = _pack(w.unsqueeze(-1) * out.float(), w)
    dist.all_reduce(packed, op=dist.ReduceOp.SUM, group=group)
    return _finish(packed[..., :-1], packed[..., -1], m)


def all_to_all_combine(
    out: torch.Tensor, lse: torch.Tensor, group: Optional[Any] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Head-sharded combine: rank r ends with query heads ``[r*H/P, (r+1)*H/P)`` merged over every
    rank's keys, in rank order (q_heads must be a multiple of the group size).

    Returns:
        ``(out [batch, q_heads / P, head_dim], lse [batch, q_heads / P])`` float32.
    """
    world = dist.get_world_size(group)
    batch, q_heads, head_dim = out.shape
    if q_heads % world:
        raise ValueError(f"q: q_heads = {q_heads} must be a multiple of the group size {world} "
                         "for the all_to_all combine")
    packed = _pack(out, lse).reshape(batch, world, q_heads // world, head_dim + 1)
    send = packed.transpose(0, 1).contiguous()  # [P (destination), batch, H/P, head_dim + 1]
    recv = torch.empty_like(send)  # [P (source), batch, H/P, head_dim + 1]
    dist.all_to_all_single(recv, send, group=group)
    return merge_partials(recv[..., :-1], recv[..., -1])


def wire_bytes(combine: str, batch: int, q_heads: int, head_dim: int, world: int) -> int:
    """Payload bytes each rank contributes per step (fp32): what the collective's ring moves
    (P - 1) times (all-gather), about 2 (P - 1) / P times (all-reduce) or (P - 1) / P times
    (all-to-all) per rank. The all-reduce counts its MAX of lse too."""
    states = batch * q_heads * (head_dim + 1) * 4
    if combine == "all_reduce":
        return states + batch * q_heads * 4
    return states
