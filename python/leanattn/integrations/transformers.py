"""transformers integration: ``attn_implementation="leanattn"``.

Importing this module registers an attention function named ``"leanattn"`` with transformers'
``AttentionInterface`` and the boolean SDPA mask builder under the same name with
``AttentionMaskInterface``, so that::

    import leanattn.integrations.transformers
    model = AutoModelForCausalLM.from_pretrained(..., attn_implementation="leanattn")

decodes every generated token (one query token per request) through leanattn, and prefills
(several query tokens) through transformers' SDPA, or the model's own eager attention where SDPA
cannot run it (attention sinks, soft-capping). Settings are read from the module and the call:

- GQA/MQA (kv heads from the key tensor), ``scaling``;
- K and V of different widths (DeepSeek V2/V3's MLA: K 192, V 128, which transformers passes
  unpadded to a custom attention): the output is V's width, as the model's own attention gives;
- the mask (padding, sliding windows): each request's row of the boolean mask must be one
  contiguous run of keys; it is mapped exactly to leanattn's seq_lens through a page-size-1
  block table over the key tensor (no copy). Any other mask is refused (ValueError);
- attention sinks (gpt-oss ``module.sinks``): applied exactly from the returned LSE,
  ``out * sigmoid(lse - sink)``;
- soft-capping (Gemma 2 passes its ``attn_logit_softcapping`` as ``softcap=``): leanattn's
  ``softcap`` (prefill through the model's eager attention, which applies it; SDPA cannot);
- dropout while training: refused.
"""

from __future__ import annotations

import atexit
import math
import sys
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from .. import torch_ops  # noqa: F401  (registers torch.ops.leanattn for compiled models)
from .._decode import decode
from .._plan import Plan, plan as make_plan

NAME = "leanattn"
# Worker threads of leanattn's CPU calls (None: one per core). Match it to
# torch.get_num_threads() when the model's other operations should keep their cores. CUDA calls
# use the CUDA engine's occupancy.
workers: Optional[int] = None

_PLANS: Dict[Tuple[int, ...], Plan] = {}
atexit.register(_PLANS.clear)  # plans are freed before the extension module is
# The last masks mapped, most recent first: (weak reference to the mask, its version, batch,
# kv_len, rows). A step's layers share its mask(s): Gemma 2 and gpt-oss alternate a sliding and
# a full one, hence two. An entry matches only the same live tensor object at the same version
# (a key of address and version matched a new mask allocated where a freed one had been). Masks
# made under torch.inference_mode() have no version counter: matched by identity alone.
_MASKS: List[Tuple[Any, int, int, int, Any]] = []
_MASKS_KEPT = 2


def _version_of(mask: torch.Tensor) -> int:
    return -1 if mask.is_inference() else mask._version


def _plan_for(batch: int, kv_len: int, q_heads: int, kv_heads: int, head_dim: int,
              softcap: Optional[float], device: torch.device,
              head_dim_v: Optional[int] = None) -> Plan:
    """The plan of a step with every request at kv_len keys, made once per shape (V's width
    head_dim_v, None: head_dim), soft-cap and device: for a CUDA query the CUDA engine's (its
    occupancy, order and tile on that device; ``workers`` counts CPU threads only), else the CPU
    engine's."""
    on_cuda = device.type == "cuda"
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    key = (batch, kv_len, q_heads, kv_heads, head_dim, head_dim_v, softcap, device.type,
           device.index, None if on_cuda else workers)
    found = _PLANS.get(key)
    if found is None:
        if len(_PLANS) >= 16:
            _PLANS.clear()
        if on_cuda:
            with torch.cuda.device(device):  # the CUDA plan is made for the current device
                found = make_plan([kv_len] * batch, q_heads=q_heads, kv_heads=kv_heads,
                                  head_dim=head_dim, head_dim_v=head_dim_v, softcap=softcap,
                                  backend="cuda")
        else:
            found = make_plan([kv_len] * batch, q_heads=q_heads, kv_heads=kv_heads,
                              head_dim=head_dim, head_dim_v=head_dim_v, workers=workers,
                              softcap=softcap)
        _PLANS[key] = found
    return found


@torch.compiler.disable  # host work on a mask; a graph break, not guards on the cache
def _mask_rows(mask: Optional[torch.Tensor], batch: int, kv_len: int
               ) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(first key, key count) per request from a decode step's boolean mask [batch, 1, 1, kv_len],
    or None when every key is attended. Raises ValueError for a mask it cannot map exactly."""
    if mask is None:
        return None
    if mask.dtype != torch.bool or mask.dim() != 4 or mask.shape[1] != 1 or mask.shape[2] != 1:
        raise ValueError(
            "attention_mask: leanattn maps boolean masks [batch, 1, 1, kv_len] (transformers' "
            f"sdpa_mask), got {tuple(mask.shape)} {mask.dtype}")
    if mask.shape[-1] != kv_len or mask.shape[0] not in (1, batch):
        raise ValueError(
            f"attention_mask: shape {tuple(mask.shape)} does not match {batch} requests of "
            f"{kv_len} keys")
    version = _version_of(mask)
    for kept in _MASKS:
        if kept[0]() is mask and kept[1:4] == (version, batch, kv_len):
            return kept[4]
    rows = mask[:, 0, 0, :].expand(batch, kv_len).cpu().numpy()
    if rows.all():
        result = None
    else:
        counts = rows.sum(axis=1).astype(np.int32)
        starts = np.where(counts > 0, rows.argmax(axis=1), 0).astype(np.int32)
        idx = np.arange(kv_len)[None, :]
        run = (idx >= starts[:, None]) & (idx < (starts + counts)[:, None])
        bad = np.nonzero((run != rows).any(axis=1))[0]
        if bad.size:
            raise ValueError(
                f"attention_mask: request {int(bad[0])}'s keys are not one contiguous run, so "
                "they cannot be mapped to leanattn's seq_lens; use attn_implementation='sdpa'")
        result = (starts, counts)
    _MASKS.insert(0, (weakref.ref(mask), version, batch, kv_len, result))
    del _MASKS[_MASKS_KEPT:]
    return result


def _token_pages(x: torch.Tensor, name: str) -> Tuple[torch.Tensor, int]:
    """x [batch, kv_heads, kv_len, head_dim] as pages of one token [num_pages, 1, kv_heads,
    head_dim] (a view: page b * per_request + t is request b's token t), and per_request."""
    s_b, s_h, s_t, _ = x.stride()
    batch, heads, kv_len, head_dim = x.shape
    if s_t <= 0 or (batch > 1 and s_b % s_t != 0):
        raise ValueError(f"{name}: strides {x.stride()} cannot be addressed as token pages")
    per_request = s_b // s_t if batch > 1 else kv_len
    pages = (batch - 1) * per_request + kv_len
    view = x.as_strided((pages, 1, heads, head_dim), (s_t, s_t, s_h, 1), x.storage_offset())
    return view, per_request


def _softcap_of(kwargs: Dict[str, Any]) -> Optional[float]:
    """The logit soft-cap the model passes its attention (Gemma 2: ``softcap=``; None or 0: off),
    as its own eager attention receives it: a config value the model does not pass (Gemma 3
    keeps ``attn_logit_softcapping`` without using it) is not applied."""
    softcap = kwargs.get("softcap")
    if not softcap:
        return None
    cap = float(softcap)
    if not math.isfinite(cap) or cap < 0:
        raise ValueError(f"softcap: must be finite and >= 0 (0 / None: off) (got {cap})")
    return cap


def _refuse_unsupported(module: Any, dropout: float) -> None:
    if dropout and getattr(module, "training", False):
        raise ValueError(f"dropout: leanattn is inference only (got dropout = {dropout})")


def _prefill(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             mask: Optional[torch.Tensor], dropout: float, scaling: Optional[float],
             sinks: Optional[torch.Tensor], softcap: Optional[float],
             **kwargs: Any) -> Tuple[torch.Tensor, Any]:
    """Several query tokens: transformers' SDPA, or the model's eager attention for sinks and
    soft-caps (passed as the model passes it, ``softcap=``)."""
    if softcap is not None:
        kwargs["softcap"] = softcap
    if sinks is None and softcap is None:
        return sdpa_attention_forward(module, query, key, value, mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    eager = sys.modules[type(module).__module__].eager_attention_forward
    if mask is None:  # sdpa_mask skips a plain causal mask (SDPA's is_causal); eager needs it
        q_len, kv_len = query.shape[2], key.shape[2]
        mask = torch.ones(q_len, kv_len, dtype=torch.bool, device=query.device).tril(
            kv_len - q_len)[None, None]
    if mask.dtype == torch.bool:
        additive = torch.zeros(mask.shape, dtype=query.dtype, device=query.device)
        mask = additive.masked_fill_(~mask, torch.finfo(query.dtype).min)
    return eager(module, query, key, value, mask, scaling=scaling, dropout=dropout, **kwargs)


def _check_window(module: Any, kv_len: int) -> None:
    window = getattr(module, "sliding_window", None)
    if window is not None and kv_len > window:
        raise ValueError(
            f"sliding_window: {window} keys but {kv_len} are cached and no mask says which to "
            "drop; leanattn would attend to all of them")


def _apply_sinks(o: torch.Tensor, lse: Optional[torch.Tensor], sinks: Optional[torch.Tensor],
                 out: torch.Tensor) -> torch.Tensor:
    """out, whose view o [batch, q_heads, head_dim] is scaled in place by sigmoid(lse - sink)."""
    if sinks is not None and lse is not None:
        gate = torch.sigmoid(lse - sinks.detach().float()[None, :])  # [batch, q_heads]
        o.mul_(gate[:, :, None].to(o.dtype))
    return out


def leanattn_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,  # [batch, q_heads, q_len, head_dim]
    key: torch.Tensor,  # [batch, kv_heads, kv_len, head_dim], the whole cache (views allowed)
    value: torch.Tensor,  # same as key, or V's own width head_dim_v <= head_dim (DeepSeek)
    attention_mask: Optional[torch.Tensor],  # boolean [batch, 1, q_len, kv_len] or None
    dropout: float = 0.0,
    scaling: Optional[float] = None,
    **kwargs: Any,
) -> Tuple[torch.Tensor, None]:
    """The attention function registered as "leanattn"; returns ([batch, q_len, q_heads,
    head_dim_v], None), head_dim_v value's width."""
    _refuse_unsupported(module, dropout)
    softcap = _softcap_of(kwargs)
    kwargs.pop("softcap", None)
    sinks = kwargs.pop("s_aux", None)
    if sinks is None:
        sinks = getattr(module, "sinks", None)
    if query.shape[2] != 1:
        return _prefill(module, query, key, value, attention_mask, dropout, scaling, sinks,
                        softcap, **kwargs)
    batch, q_heads, _, head_dim = query.shape
    kv_heads, kv_len, head_dim_v = key.shape[1], key.shape[2], value.shape[-1]
    out = torch.empty(batch, 1, q_heads, head_dim_v, dtype=query.dtype, device=query.device)
    o = out[:, 0]  # [batch, q_heads, head_dim], written in place
    lse = None if sinks is None else torch.empty(batch, q_heads, device=query.device)
    q = query[:, :, 0]  # [batch, q_heads, head_dim]
    if attention_mask is None and torch.compiler.is_compiling():
        # Traced by torch.compile: the custom op (no graph break); seq_lens as a tensor.
        _check_window(module, kv_len)
        lens = torch.full((batch,), kv_len, dtype=torch.int32)
        torch.ops.leanattn.decode_(q, key.transpose(1, 2), value.transpose(1, 2), lens, o, lse,
                                   None, scaling, softcap=softcap)
        return _apply_sinks(o, lse, sinks, out), None
    rows = _mask_rows(attention_mask, batch, kv_len)  # a mask under torch.compile: graph break
    if rows is None:
        _check_window(module, kv_len)
        decode(q, key.transpose(1, 2), value.transpose(1, 2),
               plan=_plan_for(batch, kv_len, q_heads, kv_heads, head_dim, softcap, q.device,
                              head_dim_v),
               scale=scaling, out=o, lse_out=lse, softcap=softcap)
    else:
        starts, counts = rows
        k_pages, per_k = _token_pages(key, "key")
        v_pages, per_v = _token_pages(value, "value")
        if per_k != per_v:
            # Laid out differently (DeepSeek's V is a slice of kv_b_proj's output, its K a new
            # tensor): one block table addresses both once both are dense.
            k_pages, per_k = _token_pages(key.contiguous(), "key")
            v_pages, per_v = _token_pages(value.contiguous(), "value")
        width = max(int(counts.max()), 1)
        table = (np.arange(batch, dtype=np.int64)[:, None] * per_k + starts[:, None]
                 + np.arange(width)[None, :])
        table = np.where(np.arange(width)[None, :] < counts[:, None], table, 0).astype(np.int32)
        decode(q, k_pages, v_pages, counts, block_table=table, scale=scaling, out=o,
               lse_out=lse, workers=None if q.is_cuda else workers, softcap=softcap)
    return _apply_sinks(o, lse, sinks, out), None


def register() -> None:
    """Registers "leanattn" with AttentionInterface and AttentionMaskInterface (idempotent)."""
    AttentionInterface.register(NAME, leanattn_attention_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)


register()
