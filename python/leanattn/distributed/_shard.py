"""Sharding layouts of one sequence's KV over the ranks of a context-parallel group: which global
token positions each rank holds, and (for tests, examples and the benchmark) the shard of a whole
cache. Two layouts, as serving stacks use them:

* ``"contiguous"``: rank r holds request b's tokens ``[n*r // P, n*(r+1) // P)`` (ring and tree
  attention, chunked prefill output);
* ``"interleaved"``: token t is on rank ``(t // interleave) % P``: round robin by token
  (``interleave=1``) or by page (``interleave=page_size``), as vLLM's decode context parallelism
  (``cp_kv_cache_interleave_size``) and SGLang's DCP place new tokens.

Within a shard, local token i of request b is global position ``positions[b, i]`` (increasing).
Plain softmax attention does not depend on positions; windows, ALiBi and causality will.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

LAYOUTS = ("contiguous", "interleaved")


def _check(seq_lens: Any, rank: int, world_size: int, layout: str, interleave: int) -> np.ndarray:
    lens = np.asarray(seq_lens)
    if lens.ndim != 1 or not np.issubdtype(lens.dtype, np.integer) or (lens < 0).any():
        raise ValueError("seq_lens: must be a [batch] array of non-negative integers")
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size: must be an int >= 1 (got {world_size!r})")
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError(f"rank: must be an int in [0, {world_size}) (got {rank!r})")
    if layout not in LAYOUTS:
        raise ValueError(f"layout: must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    if not isinstance(interleave, int) or interleave < 1:
        raise ValueError(f"interleave: must be an int >= 1 (got {interleave!r})")
    return lens.astype(np.int64)


def _positions_of(n: int, rank: int, world_size: int, layout: str, interleave: int) -> np.ndarray:
    if layout == "contiguous":
        return np.arange(n * rank // world_size, n * (rank + 1) // world_size, dtype=np.int64)
    t = np.arange(n, dtype=np.int64)
    return t[(t // interleave) % world_size == rank]


def shard_positions(
    seq_lens: Any, rank: int, world_size: int, layout: str = "contiguous", interleave: int = 1
) -> Tuple[np.ndarray, np.ndarray]:
    """The tokens rank ``rank`` of ``world_size`` holds under ``layout``.

    Args:
        seq_lens: ``[batch]`` whole-sequence lengths.
        interleave: tokens per round-robin unit of the ``"interleaved"`` layout (1: by token,
            page_size: by page).

    Returns:
        ``(local_seq_lens, positions)``: ``[batch]`` int32 tokens on this rank (0 where it holds
        none of a request) and ``[batch, max(local_seq_lens)]`` int64 global positions, -1 past
        a request's local length.
    """
    lens = _check(seq_lens, rank, world_size, layout, interleave)
    parts = [_positions_of(int(n), rank, world_size, layout, interleave) for n in lens]
    local = np.array([len(p) for p in parts], dtype=np.int32)
    positions = np.full((len(lens), int(local.max(initial=0))), -1, dtype=np.int64)
    for b, p in enumerate(parts):
        positions[b, :len(p)] = p
    return local, positions


def shard_cache(cache: Any, positions: np.ndarray) -> Any:
    """The shard of a whole contiguous cache that ``positions`` (from :func:`shard_positions`)
    names, as a new contiguous cache of the same framework.

    Args:
        cache: ``[batch, capacity, kv_heads, head_dim]`` NumPy array or torch tensor.
        positions: ``[batch, local_capacity]`` global positions, -1 for padding.

    Returns:
        ``[batch, max(1, local_capacity), kv_heads, head_dim]``; padding rows hold token 0.
    """
    pos = np.asarray(positions)
    if pos.ndim != 2 or pos.shape[0] != cache.shape[0]:
        raise ValueError(f"positions: must have shape [batch = {cache.shape[0]}, local_capacity]")
    if pos.shape[1] == 0:
        pos = np.zeros((pos.shape[0], 1), dtype=np.int64)
    if (pos >= cache.shape[1]).any():
        raise ValueError(f"positions: must be < capacity = {cache.shape[1]}")
    rows = np.arange(pos.shape[0])[:, None]
    cols = np.maximum(pos, 0)
    if isinstance(cache, np.ndarray):
        return np.ascontiguousarray(cache[rows, cols])
    import torch

    return cache[torch.from_numpy(rows), torch.from_numpy(cols)].contiguous()
