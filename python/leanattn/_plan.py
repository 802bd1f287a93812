"""leanattn.plan and leanattn.Plan: the schedule of a decode step as an inspectable object
(which worker computes which tiles of which request and KV head, and how split pairs are merged),
made once and run many times with leanattn.decode(..., plan=...) or Plan.run(...).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _arrays
from . import _leanattn as _ext
from ._variant import variant_args


class Plan:
    """A decode schedule made by :func:`leanattn.plan` (do not construct directly).

    Vocabulary: a *pair* is one (request, KV head); its tokens are cut into *lean tiles* of
    ``tile`` tokens. A *segment* is a contiguous range of one pair's tiles done by one worker.
    A pair done by one segment is written directly (kind ``"direct"``); otherwise each segment
    writes its partial softmax state to a workspace *slot* (kinds ``"finalise"`` for the first
    piece, ``"partial"`` for the others) and the pair's *reduction* merges the slots in tile
    order. Runs are deterministic: the same plan gives bitwise-identical outputs.
    """

    __slots__ = ("_impl",)

    def __init__(self, impl: Any) -> None:
        if not isinstance(impl, _ext.Plan):
            raise TypeError("Plan: use leanattn.plan(...) to make a plan")
        self._impl = impl

    @property
    def strategy(self) -> str:
        """``"lean"``, ``"split"`` or ``"head"``."""
        return self._impl.strategy

    @property
    def order(self) -> str:
        """lean: how the tiles were numbered before cutting (``"token_major"`` or
        ``"head_major"``)."""
        return self._impl.order

    @property
    def workers(self) -> int:
        """Workers the plan was made for (decode runs it with this many threads by default)."""
        return self._impl.workers

    @property
    def tile(self) -> int:
        """Tokens per lean tile."""
        return self._impl.tile

    @property
    def splits(self) -> int:
        """split: splits per pair; 0 for the other strategies."""
        return self._impl.splits

    @property
    def batch_invariant(self) -> bool:
        """lean: outputs independent of the rest of the batch and of the worker count."""
        return self._impl.batch_invariant

    @property
    def seq_lens(self) -> List[int]:
        """``[batch]`` the lengths the plan was made for."""
        return list(self._impl.seq_lens)

    @property
    def batch(self) -> int:
        return len(self._impl.seq_lens)

    @property
    def kv_heads(self) -> int:
        return self._impl.kv_heads

    @property
    def q_heads(self) -> int:
        return self._impl.kv_heads * self._impl.group_size

    @property
    def head_dim(self) -> int:
        """Q's and K's width."""
        return self._impl.head_dim

    @property
    def head_dim_v(self) -> int:
        """V's and the output's width (head_dim unless the plan was made for another)."""
        return self._impl.head_dim_v

    @property
    def total_tiles(self) -> int:
        """Tiles of all pairs together (the work)."""
        return self._impl.total_tiles

    @property
    def num_slots(self) -> int:
        """Workspace slots for partial states."""
        return self._impl.num_slots

    @property
    def workspace_bytes(self) -> int:
        """Bytes of workspace an executor needs for this plan."""
        return self._impl.workspace_bytes

    @property
    def reductions(self) -> List[Dict[str, int]]:
        """The split pairs, in pair order: dicts with request, kv_head, finaliser (the worker
        holding the first piece), slot_begin and num_slots (slots merged in this order)."""
        return self._impl.reductions()

    def segments(self, worker: Optional[int] = None) -> List[Dict[str, Union[int, str]]]:
        """Segments of ``worker`` in execution order, or of every worker (each dict then has a
        ``"worker"`` key). Keys: request, kv_head, tile_begin, tile_end (tiles of the pair,
        end exclusive), token_begin, token_end, kind (``"direct"``, ``"finalise"`` or
        ``"partial"``), slot and reduction (-1 for direct)."""
        if worker is None:
            return self._impl.segments(-1)
        if isinstance(worker, bool) or not isinstance(worker, int):
            raise TypeError(f"worker: must be an int or None (got {type(worker).__name__})")
        if not 0 <= worker < self.workers:
            raise ValueError(f"worker: must be in [0, {self.workers}) (got {worker})")
        return self._impl.segments(worker)

    def worker_tiles(self) -> List[int]:
        """``[workers]`` tiles each worker computes (its load)."""
        return self._impl.worker_tiles()

    def picture(self, width: int = 64) -> str:
        """One row per worker, one letter per tile: upper case for the pair's first piece or a
        direct pair, lower case for a later piece."""
        return self._impl.picture(int(width))

    def __str__(self) -> str:
        return self._impl.text()

    def __repr__(self) -> str:
        value = f"head_dim_v={self.head_dim_v}, " if self.head_dim_v != self.head_dim else ""
        return (
            f"leanattn.Plan(strategy='{self.strategy}', workers={self.workers}, "
            f"tile={self.tile}, batch={self.batch}, q_heads={self.q_heads}, "
            f"kv_heads={self.kv_heads}, head_dim={self.head_dim}, {value}"
            f"segments={len(self._impl.segments(-1))}, reductions={len(self.reductions)})"
        )

    def run(
        self,
        q: Any,
        k_cache: Any,
        v_cache: Any = None,
        *,
        block_table: Any = None,
        scale: Optional[float] = None,
        workers: Optional[int] = None,
        return_lse: bool = False,
    ) -> Union[Any, Tuple[Any, Any]]:
        """:func:`leanattn.decode` with this plan and its seq_lens (v_cache None: V is the first
        head_dim_v values of K's rows)."""
        from ._decode import decode

        starts = self._impl.query_start_loc
        return decode(q, k_cache, v_cache, self._impl.seq_lens, block_table=block_table,
                      scale=scale, workers=workers, return_lse=return_lse, plan=self,
                      query_start_loc=np.asarray(starts, np.int32) if starts else None)


def plan(
    seq_lens: Any,
    *,
    q_heads: int,
    kv_heads: int,
    head_dim: int,
    head_dim_v: Optional[int] = None,
    strategy: str = "lean",
    workers: Optional[int] = None,
    tile: Optional[int] = None,
    order: str = "auto",
    splits: Optional[int] = None,
    batch_invariant: bool = False,
    chunk_tiles: Optional[int] = None,
    q_len: int = 1,
    causal: bool = True,
    window_left: Optional[int] = None,
    softcap: Optional[float] = None,
    sinks: bool = False,
    alibi: bool = False,
    backend: str = "cpu",
    query_start_loc: Any = None,
) -> Plan:
    """Makes the schedule :func:`leanattn.decode` would use, to inspect it or run it many times.

    Args:
        seq_lens: ``[batch]`` integer tokens per request.
        q_heads, kv_heads, head_dim: the shapes of q and the cache (q_heads a multiple of
            kv_heads; head_dim a multiple of 16 up to 576).
        head_dim_v: V's and the output's width, a multiple of 16 up to head_dim (DeepSeek's K
            192 / V 128, absorbed MLA's 576 / 512); None: head_dim. It sets the default tile
            (by the mean of both widths) and the workspace; a plan runs only with that width.
        strategy: ``"lean"``, ``"split"`` or ``"head"``.
        workers: workers to plan for (default: the backend's: one per core on the CPU, the
            kernel's occupancy on a GPU).
        tile: tokens per lean tile (default: by head_dim).
        order: ``"auto"`` (the backend's: the CPU engine's ``"token_major"``, whole token rows
            and for head and split contiguous pairs; the CUDA engine's ``"head_major"``),
            ``"token_major"`` or ``"head_major"`` (the paper's order, and pairs to the first
            free worker).
        splits: split only: splits per pair (default: the backend's rule; on the CPU the fewest
            splits that share the token rows evenly over the workers; heuristics.hpp).
        batch_invariant: lean only: cut each request into fixed chunks so its output does not
            depend on the rest of the batch or the worker count.
        chunk_tiles: batch_invariant only: tiles per chunk (default 16).
        q_len, causal, window_left, softcap: the query tokens per request and the variant the
            calls will use (:func:`leanattn.decode`); a window plans only the tiles some query
            sees. sinks, alibi: whether the calls pass sinks / alibi_slopes. A plan runs only
            with the settings it was made for.
        backend: the executor the plan is for, one of :data:`leanattn.backends` (``"cuda"``
            plans as the CUDA engine does for arrays on the current device: its order, split
            rule, tile size and occupancy).
        query_start_loc: a mixed batch's ``[batch + 1]`` prefix sums of the query token counts
            (:func:`leanattn.decode`); q_len is then their largest count (a q_len other than 1
            or that: ValueError naming q_len). Requests of no query token plan no tile.

    Raises:
        ValueError: naming the argument that breaks a rule. TypeError: a wrong argument type.
    """
    lens = _arrays.host_index_array(seq_lens, "seq_lens", 1, "[batch]")
    starts = None
    if query_start_loc is not None:
        starts = _arrays.host_index_array(query_start_loc, "query_start_loc", 1, "[batch + 1]")
    ints = {}
    for name, value in (("q_heads", q_heads), ("kv_heads", kv_heads), ("head_dim", head_dim)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: must be an int (got {type(value).__name__})")
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"{name}: must fit in int32 (got {value})")
        ints[name] = value
    impl = _ext._make_plan(
        lens, ints["q_heads"], ints["kv_heads"], ints["head_dim"],
        _arrays.require_str(strategy, "strategy"),
        _arrays.optional_positive_int(workers, "workers", _ext.MAX_WORKERS),
        _arrays.optional_positive_int(tile, "tile"),
        _arrays.require_str(order, "order"),
        _arrays.optional_positive_int(splits, "splits"),
        bool(batch_invariant),
        _arrays.optional_positive_int(chunk_tiles, "chunk_tiles"),
        _arrays.optional_positive_int(q_len, "q_len"),
        *variant_args(causal, window_left, softcap, None, None, ints["q_heads"])[:3],
        bool(sinks),
        bool(alibi),
        _arrays.require_str(backend, "backend"),
        _arrays.optional_positive_int(head_dim_v, "head_dim_v"),
        starts,
    )
    return Plan(impl)


def plan_for(seq_lens: Any, q: Any, k_cache: Any, v_cache: Any, problem: Dict[str, Any]) -> Plan:
    """The plan of :func:`plan` (the CPU's) for arrays as :func:`leanattn.decode` reads them: a
    3-D q ``[batch, q_heads, head_dim]``, k_cache and v_cache (their shapes only) and ``problem``,
    decode's keywords (those of PLANNED_FIELDS are planned for, the types set V's width)."""
    from ._decode import PLANNED_FIELDS, output_width

    settings = {name: problem[name] for name in PLANNED_FIELDS if name in problem}
    settings["head_dim_v"] = output_width(q, v_cache, problem)
    return plan(seq_lens, q_heads=int(q.shape[-2]), kv_heads=int(k_cache.shape[2]),
                head_dim=int(q.shape[-1]), **settings)
