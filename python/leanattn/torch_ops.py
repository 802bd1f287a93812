"""PyTorch custom ops ``torch.ops.leanattn.decode`` and ``torch.ops.leanattn.decode_`` (in place,
writing ``out``), registered with torch.library together with fake (meta) implementations, so
that ``torch.compile(fullgraph=True)`` traces through them with no graph break.

Importing this module registers the ops (once); ``import leanattn`` imports it when torch is
already imported, so nothing is paid without torch. Schemas::

    decode(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, Tensor? block_table=None,
           float? scale=None, Tensor? sinks=None, Tensor? alibi_slopes=None,
           Tensor? k_scale=None, Tensor? v_scale=None, str? kv_dtype=None,
           float? softcap=None, int? window_left=None, str? v_dtype=None,
           int? head_dim_v=None, str? plan=None, int? max_seq_len=None)
           -> (Tensor out, Tensor lse)
    decode_(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, Tensor(a!) out,
            Tensor(b!)? lse_out=None, Tensor? block_table=None, float? scale=None,
            Tensor? sinks=None, Tensor? alibi_slopes=None, Tensor? k_scale=None,
            Tensor? v_scale=None, str? kv_dtype=None, float? softcap=None,
            int? window_left=None, str? v_dtype=None, int? head_dim_v=None, str? plan=None,
            int? max_seq_len=None) -> ()

Shapes are those of :func:`leanattn.decode`: q ``[batch, q_heads, head_dim]``, caches
``[batch, capacity, kv_heads, head_dim]`` (or paged with block_table; V's last dimension its own
width head_dim_v <= head_dim, DeepSeek's K 192 / V 128; v_cache None: V is the first head_dim_v
values of K's rows, absorbed MLA's latent cache, head_dim_v None then meaning head_dim),
seq_lens ``[batch]`` integer (read on the host), out ``[batch, q_heads, head_dim_v]`` in q's
dtype (the fake implementation gives that shape), lse ``[batch, q_heads]`` float32; sinks and
alibi_slopes ``[q_heads]`` float32, an 8-bit cache's k_scale / v_scale tensors (the layouts of
:func:`leanattn.decode`; kv_dtype for uint8 caches of fp8 bytes, or of ggml's q8_0 / q4_0
blocks, CPU only, whose last dimension is the row's bytes; v_dtype "f16", "q8_0" or "q4_0" for a
V of another type than K's, as in :func:`leanattn.decode`, CPU only); softcap and window_left
as in :func:`leanattn.decode` (Gemma 2's soft-cap, a sliding-window layer). On CUDA the tensors
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

from ._decode import _value_width
from ._decode import decode as _decode
from ._plan import Plan, plan as _make_plan
from ._step import DecodeStep

_LIB: Optional[Any] = None
_PLANS: Dict[Tuple[Any, ...], Plan] = {}
atexit.register(_PLANS.clear)  # plans are freed before the extension module is
# plan="device": one step per key (_run_step's), never evicted (graphs read their buffers).
_STEPS: Dict[Tuple[Any, ...], DecodeStep] = {}
atexit.register(_STEPS.clear)


# The optional arguments of the ops' schemas, after scale: (sinks, alibi_slopes, k_scale,
# v_scale, kv_dtype, softcap, window_left, v_dtype, head_dim_v, plan, max_seq_len), all None for
# plain attention over a 16-bit cache planned on the host.
_EXTRAS = ("sinks", "alibi_slopes", "k_scale", "v_scale", "kv_dtype", "softcap", "window_left",
           "v_dtype", "head_dim_v", "plan", "max_seq_len")
# Those a DecodeStep fixes at construction (plan="device"); the arrays go to each call.
_STEP_SETTINGS = ("kv_dtype", "softcap", "window_left", "v_dtype", "head_dim_v")
_STEP_ARRAYS = ("sinks", "alibi_slopes", "k_scale", "v_scale")
# Those a plan is made for: the calls with only these keep the fast path.
_PLANNED = ("softcap", "window_left", "head_dim_v")


def _out_shape(q: torch.Tensor, v_cache: Optional[torch.Tensor], extras: Tuple[Any, ...]
               ) -> Tuple[int, ...]:
    """The output's shape, q's with V's width last (head_dim_v, else v_cache's, for ggml's blocks
    from its row bytes, else head_dim): what decode writes, and the fake implementations give."""
    named = dict(zip(_EXTRAS, extras))
    v_type = named["v_dtype"] or named["kv_dtype"] or ""
    width = _value_width(int(q.shape[-1]), v_cache, v_type, named["head_dim_v"] or 0)
    return tuple(q.shape[:-1]) + (width,)


def _run(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
         seq_lens: torch.Tensor, out: torch.Tensor, lse: Optional[torch.Tensor],
         block_table: Optional[torch.Tensor], scale: Optional[float],
         extras: Tuple[Any, ...]) -> None:
    """decode into out/lse. With a host seq_lens, no block table and no extras but softcap,
    window_left and head_dim_v, through a plan kept per lengths, shapes (V's width included) and
    those, so the call takes
    decode's fast path (every layer of a step reuses it). The other extras (sinks, slopes,
    scales) go to decode as they are: on CUDA it keeps them on q's device."""
    named = {name: value for name, value in zip(_EXTRAS, extras) if value is not None}
    if "plan" in named or "max_seq_len" in named:
        _run_step(q, k_cache, v_cache, seq_lens, out, lse, block_table, scale, named)
        return
    planned = {name: named[name] for name in _PLANNED if name in named}
    if (len(named) > len(planned) or block_table is not None or seq_lens.device.type != "cpu"
            or q.device.type != "cpu"):
        _decode(q, k_cache, v_cache, seq_lens, block_table=block_table, scale=scale, out=out,
                lse_out=lse, **named)
        return
    width = _out_shape(q, v_cache, extras)[-1]  # V's (decode checks out against it)
    key = (tuple(seq_lens.tolist()), q.shape[1], k_cache.shape[2], q.shape[2], width,
           planned.get("softcap"), planned.get("window_left"))
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= 64:
            _PLANS.clear()
        plan = _PLANS[key] = _make_plan(
            seq_lens, q_heads=q.shape[1], kv_heads=k_cache.shape[2], head_dim=q.shape[2],
            head_dim_v=width, softcap=planned.get("softcap"),
            window_left=planned.get("window_left"))
    _decode(q, k_cache, v_cache, plan=plan, scale=scale, out=out, lse_out=lse, **planned)


def _signature(t: Optional[torch.Tensor]) -> Any:
    """What of a tensor a kept DecodeStep is made for: shape, dtype, device."""
    return None if t is None else (tuple(t.shape), t.dtype, t.device)


def _run_step(q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
              seq_lens: torch.Tensor, out: torch.Tensor, lse: Optional[torch.Tensor],
              block_table: Optional[torch.Tensor], scale: Optional[float],
              named: Dict[str, Any]) -> None:
    """plan="device": the op through the DecodeStep of these shapes and settings (made on the
    first call, kept)."""
    kind = named.get("plan")
    if kind != "device":
        raise ValueError(
            f"plan: must be 'device' (seq_lens read where the op runs) or None (got {kind!r}); "
            "a host-planned step is leanattn.DecodeStep(..., planning='host')")
    bound = named.get("max_seq_len")
    if bound is None:
        raise ValueError("max_seq_len: required with plan='device': the most tokens any request "
                         "of a step may have")
    arrays = {name: named[name] for name in _STEP_ARRAYS if name in named}
    settings = {name: named[name] for name in _STEP_SETTINGS if name in named}
    key = (tuple(_signature(t) for t in (q, k_cache, v_cache, block_table)), scale, bound,
           tuple(sorted(settings.items())), tuple((n, _signature(a)) for n, a in arrays.items()))
    step = _STEPS.get(key)
    if step is None:
        step = _STEPS[key] = DecodeStep(q, k_cache, v_cache, max_seq_len=bound,
                                        block_table=block_table, scale=scale, **settings,
                                        **arrays)
    step(q, k_cache, v_cache, seq_lens, block_table=block_table, out=out, lse_out=lse, **arrays)


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


def _decode_impl(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
    seq_lens: torch.Tensor, block_table: Optional[torch.Tensor] = None,
    scale: Optional[float] = None,
    sinks: Optional[torch.Tensor] = None, alibi_slopes: Optional[torch.Tensor] = None,
    k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None,
    kv_dtype: Optional[str] = None, softcap: Optional[float] = None,
    window_left: Optional[int] = None, v_dtype: Optional[str] = None,
    head_dim_v: Optional[int] = None, plan: Optional[str] = None,
    max_seq_len: Optional[int] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    extras = (sinks, alibi_slopes, k_scale, v_scale, kv_dtype, softcap, window_left, v_dtype,
              head_dim_v, plan, max_seq_len)
    out = q.new_empty(_out_shape(q, v_cache, extras))
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=q.device)
    _run(q, k_cache, v_cache, seq_lens, out, lse, block_table, scale, extras)
    return out, lse


def _decode_fake(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
    seq_lens: torch.Tensor, block_table: Optional[torch.Tensor] = None,
    scale: Optional[float] = None,
    sinks: Optional[torch.Tensor] = None, alibi_slopes: Optional[torch.Tensor] = None,
    k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None,
    kv_dtype: Optional[str] = None, softcap: Optional[float] = None,
    window_left: Optional[int] = None, v_dtype: Optional[str] = None,
    head_dim_v: Optional[int] = None, plan: Optional[str] = None,
    max_seq_len: Optional[int] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    extras = (sinks, alibi_slopes, k_scale, v_scale, kv_dtype, softcap, window_left, v_dtype,
              head_dim_v, plan, max_seq_len)
    return q.new_empty(_out_shape(q, v_cache, extras)), q.new_empty(q.shape[:2],
                                                                    dtype=torch.float32)


def _decode_inplace_impl(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
    seq_lens: torch.Tensor, out: torch.Tensor, lse_out: Optional[torch.Tensor] = None,
    block_table: Optional[torch.Tensor] = None, scale: Optional[float] = None,
    sinks: Optional[torch.Tensor] = None, alibi_slopes: Optional[torch.Tensor] = None,
    k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None,
    kv_dtype: Optional[str] = None, softcap: Optional[float] = None,
    window_left: Optional[int] = None, v_dtype: Optional[str] = None,
    head_dim_v: Optional[int] = None, plan: Optional[str] = None,
    max_seq_len: Optional[int] = None,
) -> None:
    _run(q, k_cache, v_cache, seq_lens, out, lse_out, block_table, scale,
         (sinks, alibi_slopes, k_scale, v_scale, kv_dtype, softcap, window_left,
          v_dtype, head_dim_v, plan, max_seq_len))


def _decode_inplace_fake(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: Optional[torch.Tensor],
    seq_lens: torch.Tensor, out: torch.Tensor, lse_out: Optional[torch.Tensor] = None,
    block_table: Optional[torch.Tensor] = None, scale: Optional[float] = None,
    sinks: Optional[torch.Tensor] = None, alibi_slopes: Optional[torch.Tensor] = None,
    k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None,
    kv_dtype: Optional[str] = None, softcap: Optional[float] = None,
    window_left: Optional[int] = None, v_dtype: Optional[str] = None,
    head_dim_v: Optional[int] = None, plan: Optional[str] = None,
    max_seq_len: Optional[int] = None,
) -> None:
    return None


def register() -> None:
    """Defines the ops and their CPU, CUDA and fake implementations (idempotent)."""
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("leanattn", "DEF")
    extras = ("Tensor? sinks=None, Tensor? alibi_slopes=None, Tensor? k_scale=None, "
              "Tensor? v_scale=None, str? kv_dtype=None, float? softcap=None, "
              "int? window_left=None, str? v_dtype=None, int? head_dim_v=None, "
              "str? plan=None, int? max_seq_len=None")  # _EXTRAS
    lib.define(
        "decode(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, "
        f"Tensor? block_table=None, float? scale=None, {extras}) -> (Tensor, Tensor)"
    )
    lib.define(
        "decode_(Tensor q, Tensor k_cache, Tensor? v_cache, Tensor seq_lens, Tensor(a!) out, "
        f"Tensor(b!)? lse_out=None, Tensor? block_table=None, float? scale=None, {extras}) -> ()"
    )
    for key in ("CPU", "CUDA"):
        lib.impl("decode", _decode_impl, key)
        lib.impl("decode_", _decode_inplace_impl, key)
    torch.library.register_fake("leanattn::decode", _decode_fake, lib=lib)
    torch.library.register_fake("leanattn::decode_", _decode_inplace_fake, lib=lib)
    _LIB = lib


register()
