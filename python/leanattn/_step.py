"""leanattn.DecodeStep: a decode step of fixed bounds whose plan is made anew each step, the form
a serving loop captures once in a CUDA graph and replays with new lengths (docs/cuda-graphs.md).
A thin wrapper over the compiled module's _Step (the executor seam's DecodeStep)."""

from __future__ import annotations

import numbers
import sys
from typing import Any, Optional, Tuple, Union

from . import _arrays
from . import _leanattn as _ext
from ._decode import ARRAY_FIELDS, _q_rows, describe

_PLANNINGS = ("device", "host")


class DecodeStep:
    """One decode step's attention with the shapes fixed and the lengths free, for CUDA graphs.

    Made once from arrays of the step's shapes (those :func:`leanattn.decode` takes: q, the
    caches, a block table, the variant arrays), with ``max_seq_len`` the most tokens any request
    may have; q's batch is the capacity (requests past a step's batch get length 0). Then each
    step::

        step = leanattn.DecodeStep(q, k_cache, v_cache, max_seq_len=4096)  # planning="device"
        out = step(q, k_cache, v_cache, seq_lens)       # seq_lens [batch] int32 on q's device

        step = leanattn.DecodeStep(q, k_cache, v_cache, max_seq_len=4096, planning="host")
        step.plan(seq_lens)                              # host lengths, before each step
        out = step(q, k_cache, v_cache)                  # the captured part

    ``planning="device"``: the call reads seq_lens where the step runs. On CUDA a planner kernel
    writes the lean plan from the device lengths and the decode kernel reads it, back to back on
    the stream with nothing on the host in between, so one ``torch.cuda.graph`` capture replays
    correctly for any lengths within the bounds (vLLM's full-graph decode). A length the bounds
    refuse (negative, above max_seq_len, in [1, q_len)) makes the planner plan nothing (outputs
    keep their previous values) and :meth:`check` raises, naming the request. On the CPU the
    lengths are read and planned in the call (bad ones raise there).

    ``planning="host"``: :meth:`plan` plans the host's lengths (at most batch of them, the rest
    0) and, on CUDA, copies the plan asynchronously into fixed device buffers that the call,
    captured once, reads (FlashInfer's plan / run); bad lengths raise ValueError naming
    seq_lens; a refused plan() keeps the last plan. Before the first plan() the call writes
    nothing (on CUDA its kernel runs over an empty plan, so a capture made then replays every
    later plan all the same).

    A mixed step (prefill chunks beside decode rows, each step its own counts; the CPU only, CUDA
    raises ValueError naming query_start_loc): made with ``query_start_loc`` (``[batch + 1]``, the
    host's) and q ``[max_query_tokens, q_heads, head_dim]``: its batch is the capacity, its last
    entry must be q's rows (the step's bound of query tokens) and its largest count bounds a
    request's. Each step then passes its own ``query_start_loc`` beside seq_lens (``[batch + 1]``,
    starting at 0, non-decreasing, each count within the bound, the last at most
    max_query_tokens; requests past the step's with 0 tokens and length 0)::

        step = leanattn.DecodeStep(q, k_cache, v_cache, max_seq_len=4096,
                                   query_start_loc=[0, 16, 32, 48, 64])  # up to 16 each, 64 in all
        out = step(q, k_cache, v_cache, seq_lens, query_start_loc=loc)   # loc [batch + 1] int32
        host_step.plan(seq_lens, query_start_loc=loc)                     # host planning

    Rows of out (and lse) past the step's ``query_start_loc[-1]`` are not written.

    ``problem`` takes :func:`leanattn.decode`'s keywords that describe the problem (block_table,
    scale, causal, window_left, softcap, sinks, alibi_slopes, kv_dtype, k_scale, v_scale,
    v_dtype, V's width and a mixed step's query_start_loc). Every call's arrays must have the shapes, dtypes, layout and variant
    arrays of those the step was made with (ValueError naming the argument otherwise); the
    keywords that are no arrays are fixed at construction, with workers and tile. On CUDA
    the step must be made outside a capture (it allocates its buffers then; with PyTorch
    tensors ValueError naming stream inside one). The CUDA engine's steps are lean, head-major, with
    the engine's worker count. A graph that captured a call reads the step's buffers: keep the
    step alive as long as the graph.
    """

    def __init__(
        self, q: Any, k_cache: Any, v_cache: Any = None, *, max_seq_len: int,
        planning: str = "device", workers: Optional[int] = None, tile: Optional[int] = None,
        **problem: Any,
    ) -> None:
        planning = _arrays.require_str(planning, "planning")
        if planning not in _PLANNINGS:
            raise ValueError(f"planning: must be 'device' or 'host' (got '{planning}')")
        if (isinstance(max_seq_len, bool) or not isinstance(max_seq_len, numbers.Integral)
                or not 1 <= int(max_seq_len) <= 2**31 - 1):
            raise ValueError(
                f"max_seq_len: must be an int in [1, 2**31 - 1], the most tokens any request "
                f"of a step may have (got {max_seq_len!r})")
        q = _arrays.as_array(q)
        if _arrays.framework(q) == "torch" and q.is_cuda and \
                sys.modules["torch"].cuda.is_current_stream_capturing():
            raise ValueError("stream: is capturing: a DecodeStep allocates device memory when it "
                             "is made; make it (or call the op once) before the capture")
        # What every call describes again with its own arrays: the settings fixed here.
        self._settings = {name: value for name, value in problem.items()
                          if name not in ARRAY_FIELDS}
        self._impl = _ext._step_new(
            describe(q, k_cache, v_cache, None, problem), int(max_seq_len), planning,
            _arrays.optional_positive_int(workers, "workers", _ext.MAX_WORKERS),
            _arrays.optional_positive_int(tile, "tile"))
        starts = problem.get("query_start_loc")
        self._max_query_tokens: Optional[int] = None
        if starts is not None:  # read once on the host: every call describes the step with it
            self._settings["query_start_loc"] = _arrays.host_index_array(
                starts, "query_start_loc", 1, "[batch + 1]")
            self._max_query_tokens = int(self._settings["query_start_loc"][-1])
        self._stream = _arrays.stream_source(q)
        self._on_cuda = _arrays.on_cuda(q)

    @property
    def planning(self) -> str:
        """``"device"`` or ``"host"``."""
        return str(self._impl.planning)

    @property
    def workers(self) -> int:
        """Persistent workers each step's plan is made for."""
        return int(self._impl.workers)

    @property
    def tile(self) -> int:
        """Tokens per lean tile of each step's plan."""
        return int(self._impl.tile)

    @property
    def batch(self) -> int:
        """The batch capacity (q's batch at construction)."""
        return int(self._impl.batch)

    @property
    def max_seq_len(self) -> int:
        """The most tokens a request may have."""
        return int(self._impl.max_seq_len)

    @property
    def max_query_tokens(self) -> Optional[int]:
        """A mixed step's bound of query tokens (q's rows); None for a step of one q_len."""
        return self._max_query_tokens

    def plan(self, seq_lens: Any, query_start_loc: Any = None) -> None:
        """Host planning: plans the next call for ``seq_lens`` (``[<= batch]`` integers, read on
        the host; requests past them get length 0) and a mixed step's ``query_start_loc``
        (``[len(seq_lens) + 1]``; None otherwise), on CUDA copied asynchronously on the current
        stream. Not during a capture (ValueError naming stream). ValueError naming seq_lens for
        a length negative, above max_seq_len or below its request's query tokens (but not 0), or
        more lengths than batch; naming query_start_loc for counts the step refuses."""
        if self.planning != "host":
            raise ValueError("planning: the step is 'device': its call takes seq_lens, plan() is "
                             "for planning='host'")
        lens = _arrays.host_index_array(seq_lens, "seq_lens", 1, "[batch]")
        starts = None
        if query_start_loc is not None:
            starts = _arrays.host_index_array(query_start_loc, "query_start_loc", 1,
                                              "[batch + 1]")
        self._impl.plan(lens, starts, self._stream())

    def check(self) -> None:
        """Device planning on CUDA: waits for the current stream, then raises ValueError naming
        seq_lens (and the request) if a call since the last check was given a length out of
        bounds. Not during a capture. Elsewhere nothing to report (bad lengths raise at once)."""
        self._impl.check(self._stream())

    def __call__(
        self, q: Any, k_cache: Any, v_cache: Any = None, seq_lens: Any = None, *,
        block_table: Any = None, out: Any = None, lse_out: Any = None,
        return_lse: bool = False, sinks: Any = None, alibi_slopes: Any = None,
        k_scale: Any = None, v_scale: Any = None, query_start_loc: Any = None,
    ) -> Union[Any, Tuple[Any, Any]]:
        """One step: attention as :func:`leanattn.decode` computes it, with the step's plan.
        seq_lens: device planning, ``[batch]`` int32, contiguous, on q's device (anything else
        is converted there first by q's framework; inside a capture pass it as it is wanted);
        host planning, None (the lengths of the last plan()). query_start_loc: a mixed step's
        device planning, ``[batch + 1]`` int32 as seq_lens; None otherwise. Returns out (and lse with
        return_lse or lse_out) as decode does; on CUDA launched on the current stream."""
        if self.planning == "host":
            if seq_lens is not None:
                raise ValueError("seq_lens: a host-planned step takes its lengths from plan(); "
                                 "pass None")
            if query_start_loc is not None:
                raise ValueError("query_start_loc: a host-planned step takes its counts from "
                                 "plan(); pass None")
            lens = starts = None
        elif seq_lens is None:
            raise ValueError("seq_lens: required by a device-planned step ([batch] int32 on "
                             "q's device)")
        elif self._on_cuda:
            lens = _arrays.device_index_array(seq_lens, "seq_lens", 1, "[batch]", q)
        else:
            lens = _arrays.host_index_array(seq_lens, "seq_lens", 1, "[batch]")
        if self.planning == "device":
            starts = self._device_starts(query_start_loc, q)
        q = _arrays.as_array(q)
        rows = _q_rows(q)
        if self._max_query_tokens is not None and rows[0] != self._max_query_tokens:
            raise ValueError(f"q: query tokens (q.shape[0]) must be the step's max_query_tokens "
                             f"{self._max_query_tokens} (got {rows[0]})")
        if self._max_query_tokens is None and rows[0] != self.batch:
            raise ValueError(f"q: batch (q.shape[0]) must be the step's {self.batch} "
                             f"(got {rows[0]})")
        problem = describe(q, k_cache, v_cache, None, dict(
            self._settings, block_table=block_table, sinks=sinks, alibi_slopes=alibi_slopes,
            k_scale=k_scale, v_scale=v_scale))
        if out is None:
            out, out_view = _arrays.empty_like(q, rows + (int(self._impl.value_dim),))
        else:
            out_view = _arrays.output_view(out, "out", q)
        lse, lse_view = lse_out, None
        if lse_out is not None:
            lse_view = _arrays.output_view(lse_out, "lse_out", q)
        elif return_lse:
            lse, lse_view = _arrays.empty_like(q, rows, float32=True)
        _ext._step_run(self._impl, problem, lens, starts, out_view, lse_view,
                       _arrays.current_stream(q))
        return (out, lse) if (return_lse or lse_out is not None) else out

    def _device_starts(self, query_start_loc: Any, q: Any) -> Any:
        """A device-planned call's query_start_loc: required by a mixed step (as seq_lens, on q's
        device), None for a step of one q_len (ValueError naming query_start_loc otherwise)."""
        if self._max_query_tokens is None:
            if query_start_loc is not None:
                raise ValueError("query_start_loc: the step has one q_len for every request; "
                                 "make it with query_start_loc for mixed steps")
            return None
        if query_start_loc is None:
            raise ValueError("query_start_loc: required by a mixed step ([batch + 1] int32 on "
                             "q's device)")
        if self._on_cuda:
            return _arrays.device_index_array(query_start_loc, "query_start_loc", 1,
                                              "[batch + 1]", q)
        return _arrays.host_index_array(query_start_loc, "query_start_loc", 1, "[batch + 1]")
