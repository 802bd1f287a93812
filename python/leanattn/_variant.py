"""The attention-variant arguments of leanattn.decode and leanattn.reference (causal,
window_left, softcap, sinks, alibi_slopes), checked in Python and turned into what the compiled
module takes. Semantics: docs/numerics.md, "Variants"."""

from __future__ import annotations

import math
import numbers
from typing import Any, Tuple

import numpy as np

from . import _arrays

# What the compiled module takes: (causal, window_left, softcap, sinks, alibi_slopes); the arrays
# are NumPy, or on q's CUDA device in q's framework.
VariantArgs = Tuple[bool, int, float, Any, Any]


def is_plain(causal: Any, window_left: Any, softcap: Any, sinks: Any, alibi_slopes: Any) -> bool:
    """True when no variant argument is set."""
    return (causal is True and window_left is None and softcap is None and sinks is None
            and alibi_slopes is None)


def _head_array(x: Any, name: str, q_heads: int, like: Any = None) -> Any:
    """[q_heads] float32, contiguous, where the call runs: a NumPy array, or with ``like`` (q) on
    a CUDA device an array on that device in like's framework, not read on the host
    (TypeError / ValueError naming ``name``)."""
    if x is None:
        return None
    if like is not None and _arrays.on_cuda(like):
        arr = _arrays.device_float32(x, name, like, any_real=False)
    else:
        host = _arrays.to_host(x)
        dtype = getattr(host, "dtype", None)
        if dtype is None or "float32" not in str(dtype):
            raise TypeError(f"{name}: dtype must be float32 (got {dtype})")
        arr = np.ascontiguousarray(np.asarray(host), dtype=np.float32)
    shape = tuple(int(n) for n in arr.shape)
    if shape != (q_heads,):
        raise ValueError(
            f"{name}: must hold one value per query head: shape [{q_heads}], got "
            f"[{', '.join(str(n) for n in shape)}]"
        )
    return arr


def variant_args(causal: Any, window_left: Any, softcap: Any, sinks: Any, alibi_slopes: Any,
                 q_heads: int, like: Any = None) -> VariantArgs:
    """The checked arguments (window_left None = -1: no window; softcap None = 0: off); sinks and
    alibi_slopes on the host, or on like's CUDA device when ``like`` (q) is there."""
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal: must be a bool (got {type(causal).__name__})")
    window = -1
    if window_left is not None:
        if isinstance(window_left, bool) or not isinstance(window_left, numbers.Integral):
            raise TypeError(f"window_left: must be an int (got {type(window_left).__name__})")
        window = int(window_left)
        if window < -1 or window > 2**31 - 1:
            raise ValueError(
                f"window_left: must be >= 0, or -1 / None for no window (got {window})")
    cap = 0.0
    if softcap is not None:
        if isinstance(softcap, bool) or not isinstance(softcap, numbers.Real):
            raise TypeError(f"softcap: must be a float (got {type(softcap).__name__})")
        cap = float(softcap)
        if not math.isfinite(cap) or cap < 0:
            raise ValueError(f"softcap: must be finite and >= 0 (0 / None: off) (got {cap})")
    return (bool(causal), window, cap, _head_array(sinks, "sinks", q_heads, like),
            _head_array(alibi_slopes, "alibi_slopes", q_heads, like))
