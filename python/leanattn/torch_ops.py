"""PyTorch custom ops ``torch.ops.leanattn.decode`` and ``torch.ops.leanattn.decode_`` (in place,
writing ``out``), registered with torch.library together with fake (meta) implementations, so
that ``torch.compile(fullgraph=True)`` traces through them with no graph break.

Importing this module registers the ops (once); ``import leanattn`` imports it when torch is
already imported, so nothing is paid without torch. Schemas (``_OPTIONS``: the problem's keywords
of ``leanattn._decode.PROBLEM_FIELDS``, then plan and max_seq_len)::

    decode(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, Tensor? block_table=None,
           float? scale=None, Tensor? sinks=None, ..., str? plan=None, int? max_seq_len=None)
           -> (Tensor out, Tensor lse)
    decode_(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, Tensor(a!) out,
            Tensor(b!)? lse_out=None, Tensor? block_table=None, ..., int? max_seq_len=None) -> ()

Shapes, types and keywords are those of :func:`leanattn.decode` (its docstring is the contract),
with a 3-D q ``[batch, q_heads, head_dim]``: out ``[batch, q_heads, V's width]`` in q's dtype (the
fake implementation gives that shape), lse ``[batch, q_heads]`` float32, seq_lens ``[batch]``
integer (read on the host). On CUDA the tensors
are read on q's device as they are (float32, contiguous) or converted there by torch: they never
make a host round trip (no ``.cpu()``, no ``.item()``); seq_lens alone is read on the host.

``plan="device"`` with ``max_seq_len`` (the most tokens any request may have): seq_lens is read
where the op runs, not on the host. On CUDA a planner kernel writes the lean plan from the
device lengths and the decode kernel reads it, with nothing on the host in between, so a
``torch.cuda.graph`` capture of a model's step replays correctly with new lengths (vLLM's
full-graph decode; run the op once before capturing, as torch requires: that call allocates the
step's buffers). The op keeps one :class:`leanattn.DecodeStep` per shapes, dtypes, device,
bound and setting (never freed: a captured graph reads its buffers), shared by every call with
them (a model's layers, the warm-up and the capture, whatever their streams: calls on two
streams must not overlap in time); q's batch is its capacity and seq_lens is ``[batch]``. A
length out of bounds raises on the CPU; on the GPU the planner plans nothing (``out`` keeps what
it held: the functional op's is uninitialised) and :func:`check_steps` raises, naming the
request. Other values of plan: ValueError naming plan (a host-planned step is
``leanattn.DecodeStep(..., planning="host")``).
"""

from __future__ import annotations

import atexit
from typing import Any, Dict, Optional, Tuple

import torch

from ._decode import ARRAY_FIELDS, PLANNED_FIELDS, PROBLEM_FIELDS, output_width
from ._decode import decode as _decode
from ._plan import Plan, plan_for
from ._step import DecodeStep

_LIB: Optional[Any] = None
_PLANS: Dict[Tuple[Any, ...], Plan] = {}
atexit.register(_PLANS.clear)  # plans are freed before the extension module is
# plan="device": one step per key (_run_step's), never evicted (graphs read their buffers).
_STEPS: Dict[Tuple[Any, ...], DecodeStep] = {}
atexit.register(_STEPS.clear)

# The ops' optional arguments, in their schemas' order, with their schema types and defaults:
# the problem's keywords (decode's) but causal (the ops take one query token per request, where
# it changes nothing), then how the step is planned. A field added to PROBLEM_FIELDS goes at its
# end, so the positions callers use (block_table, scale, the arrays) stay.
_OPTIONS: Dict[str, Tuple[str, Any]] = dict(
    {name: spec for name, spec in PROBLEM_FIELDS.items() if name != "causal"},
    plan=("str?", None), max_seq_len=("int?", None))
_SCHEMA = ", ".join(f"{kind} {name}={'None' if default is None else default}"
                    for name, (kind, default) in _OPTIONS.items())


def _named(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The ops' optional arguments by name, passed by position (in _OPTIONS' order) or by
    keyword, those left at their defaults out."""
    given = dict(zip(_OPTIONS, args), **kwargs)
    return {name: value for name, value in given.items()
            if value is not None and value is not _OPTIONS[name][1]}


def _out_shape(q: torch.Tensor, v_cache: Optional[torch.Tensor], named: Dict[str, Any]
               ) -> Tuple[int, ...]:
    """The output's shape, q's with V's width last: what decode writes, and the fake
    implementations give."""
    return tuple(q.shape[:-1]) + (output_width(q, v_cache, named),)


def _run(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
         seq_lens: torch.Tensor, out: torch.Tensor, lse: Optional[torch.Tensor],
         named: Dict[str, Any]) -> None:
    """decode into out/lse. With a host seq_lens and no options but the scale and those a plan
    is made for, through a plan kept per lengths, shapes (V's width included) and those, so the
    call takes decode's fast path (every layer of a step reuses it). The others (arrays, types)
    go to decode as they are: on CUDA it keeps them on q's device."""
    if "plan" in named or "max_seq_len" in named:
        _run_step(q, k_cache, v_cache, seq_lens, out, lse, named)
        return
    scale = named.pop("scale", None)
    planned = {name: named[name] for name in PLANNED_FIELDS if name in named}
    if len(named) > len(planned) or seq_lens.device.type != "cpu" or q.device.type != "cpu":
        _decode(q, k_cache, v_cache, seq_lens, scale=scale, out=out, lse_out=lse, **named)
        return
    key = (tuple(seq_lens.tolist()), tuple(q.shape[1:]), k_cache.shape[2],
           output_width(q, v_cache, named), tuple(sorted(planned.items())))
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= 64:
            _PLANS.clear()
        plan = _PLANS[key] = plan_for(seq_lens, q, k_cache, v_cache, planned)
    _decode(q, k_cache, v_cache, plan=plan, scale=scale, out=out, lse_out=lse, **planned)


def _signature(t: Optional[torch.Tensor]) -> Any:
    """What of a tensor a kept DecodeStep is made for: shape, dtype, device."""
    return None if t is None else (tuple(t.shape), t.dtype, t.device)


def _run_step(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
              seq_lens: torch.Tensor, out: torch.Tensor, lse: Optional[torch.Tensor],
              named: Dict[str, Any]) -> None:
    """plan="device": the op through the DecodeStep of these shapes and settings (made on the
    first call, kept)."""
    kind = named.pop("plan", None)
    if kind != "device":
        raise ValueError(
            f"plan: must be 'device' (seq_lens read where the op runs) or None (got {kind!r}); "
            "a host-planned step is leanattn.DecodeStep(..., planning='host')")
    if named.get("query_start_loc") is not None:
        raise ValueError("query_start_loc: plan='device' takes one q_len for every request (a "
                         "mixed step is leanattn.DecodeStep(..., query_start_loc=...))")
    bound = named.pop("max_seq_len", None)
    if bound is None:
        raise ValueError("max_seq_len: required with plan='device': the most tokens any request "
                         "of a step may have")
    arrays = {name: value for name, value in named.items() if name in ARRAY_FIELDS}
    settings = {name: value for name, value in named.items() if name not in ARRAY_FIELDS}
    key = (tuple(_signature(t) for t in (q, k_cache, v_cache)), bound,
           tuple(sorted(settings.items())), tuple((n, _signature(a)) for n, a in arrays.items()))
    step = _STEPS.get(key)
    if step is None:
        step = _STEPS[key] = DecodeStep(q, k_cache, v_cache, max_seq_len=bound, **named)
    step(q, k_cache, v_cache, seq_lens, out=out, lse_out=lse, **arrays)


def check_steps() -> None:
    """Waits for the current stream and raises ValueError naming seq_lens (and the request) if
    a ``plan="device"`` call on a GPU since the last check was given a length out of its bounds
    (:meth:`leanattn.DecodeStep.check` of every step the ops keep: every one is checked and
    cleared, the first refusal raised). Not during a capture."""
    first: Optional[ValueError] = None
    for step in list(_STEPS.values()):
        try:
            step.check()
        except ValueError as e:
            first = first or e
    if first is not None:
        raise first


# The ops' implementations: the arguments of their schemas, the options (_OPTIONS) by position or
# keyword as the caller passed them.
def _decode_impl(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
                 seq_lens: torch.Tensor, *args: Any, **kwargs: Any
                 ) -> Tuple[torch.Tensor, torch.Tensor]:
    named = _named(args, kwargs)
    out = q.new_empty(_out_shape(q, v_cache, named))
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=q.device)
    _run(q, k_cache, v_cache, seq_lens, out, lse, named)
    return out, lse


def _decode_fake(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
                 seq_lens: torch.Tensor, *args: Any, **kwargs: Any
                 ) -> Tuple[torch.Tensor, torch.Tensor]:
    return (q.new_empty(_out_shape(q, v_cache, _named(args, kwargs))),
            q.new_empty(q.shape[:2], dtype=torch.float32))


def _decode_inplace_impl(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
                         seq_lens: torch.Tensor, out: torch.Tensor,
                         lse_out: Optional[torch.Tensor] = None, *args: Any, **kwargs: Any
                         ) -> None:
    _run(q, k_cache, v_cache, seq_lens, out, lse_out, _named(args, kwargs))


def _decode_inplace_fake(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
                         seq_lens: torch.Tensor, out: torch.Tensor,
                         lse_out: Optional[torch.Tensor] = None, *args: Any, **kwargs: Any
                         ) -> None:
    return None


def register() -> None:
    """Defines the ops and their CPU, CUDA and fake implementations (idempotent)."""
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("leanattn", "DEF")
    lib.define("decode(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, "
               f"{_SCHEMA}) -> (Tensor, Tensor)")
    lib.define("decode_(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, "
               f"Tensor(a!) out, Tensor(b!)? lse_out=None, {_SCHEMA}) -> ()")
    for key in ("CPU", "CUDA"):
        lib.impl("decode", _decode_impl, key)
        lib.impl("decode_", _decode_inplace_impl, key)
    torch.library.register_fake("leanattn::decode", _decode_fake, lib=lib)
    torch.library.register_fake("leanattn::decode_", _decode_inplace_fake, lib=lib)
    _LIB = lib


register()
