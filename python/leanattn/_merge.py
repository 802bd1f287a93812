"""leanattn.merge_states: combines two attention results over disjoint sets of keys (cascade
attention over a shared prefix and per-request suffixes, context-parallel attention across
devices) with the library's merge rules (include/leanattn/core/softmax_state.hpp).
"""

from __future__ import annotations

import sys
from typing import Any, Tuple

import numpy as np

from . import _leanattn as _ext

# dtype name (without "torch.") -> hint for the compiled module ("" = read from DLPack).
_OUT_HINTS = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": ""}
_LSE_DTYPES = ("float32", "float64")


def _host(x: Any, name: str) -> Any:
    """x as a NumPy array or a PyTorch CPU tensor (sequences are converted with asarray)."""
    root = type(x).__module__.split(".", 1)[0]
    if root == "torch":
        if x.device.type != "cpu":
            raise ValueError(f"{name}: merge_states() runs on the host: pass CPU tensors")
        return x
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        raise TypeError(f"{name}: must be a NumPy array or a PyTorch CPU tensor")
    return np.asarray(x)


def _dtype(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _dense(x: Any, shape: Tuple[int, ...]) -> Any:
    """x contiguous with ``shape`` (copied only when strided)."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).reshape(shape)
    return x.contiguous().reshape(shape)


def _empty(like: Any, shape: Tuple[int, ...]) -> Any:
    if isinstance(like, np.ndarray):
        return np.empty(shape, dtype=like.dtype)
    return sys.modules["torch"].empty(shape, dtype=like.dtype)


def _view(x: Any) -> Any:
    """What the compiled module reads: NumPy bfloat16 (ml_dtypes) as its uint16 bits."""
    return x.view(np.uint16) if isinstance(x, np.ndarray) and _dtype(x) == "bfloat16" else x


def merge_states(out_a: Any, lse_a: Any, out_b: Any, lse_b: Any) -> Tuple[Any, Any]:
    """Merges two normalised attention results of the same queries over disjoint key sets A
    and B into the result over A and B::

        lse = log(exp(lse_a) + exp(lse_b))
        out = exp(lse_a - lse) * out_a + exp(lse_b - lse) * out_b

    computed as the library's engines merge partial states: an empty side (``lse = -inf``, for
    instance an empty sequence) is the identity, two empty sides give zeros and ``-inf``, NaN
    propagates.

    Args:
        out_a, out_b: ``[..., head_dim]`` (e.g. ``[batch, q_heads, head_dim]``) of one dtype:
            float32, float16, bfloat16 or float64. NumPy arrays or PyTorch CPU tensors.
        lse_a, lse_b: ``[...]`` (out's shape without head_dim), float32 or float64, natural
            log, of one dtype.

    Returns:
        ``(out, lse)`` in out_a's framework, out in out_a's dtype and lse in lse_a's. The math
        is done in float32 (float64 when out or lse is float64).

    Raises:
        ValueError: mismatched shapes. TypeError: unsupported or mismatched dtypes.
    """
    oa, la, ob, lb = (_host(x, n) for x, n in ((out_a, "out_a"), (lse_a, "lse_a"),
                                                (out_b, "out_b"), (lse_b, "lse_b")))
    shape = tuple(int(n) for n in oa.shape)
    if not shape:
        raise ValueError("out_a: must have at least one dimension ([..., head_dim])")
    for name, x, want in (("out_b", ob, shape), ("lse_a", la, shape[:-1]),
                          ("lse_b", lb, shape[:-1])):
        got = tuple(int(n) for n in x.shape)
        if got != want:
            raise ValueError(f"{name}: must have shape {list(want)} (got {list(got)})")
    hint = _OUT_HINTS.get(_dtype(oa))
    if hint is None:
        raise TypeError(f"out_a: dtype must be float32, float16, bfloat16 or float64 "
                        f"(got {_dtype(oa)})")
    if _dtype(ob) != _dtype(oa):
        raise TypeError(f"out_b: dtype must match out_a's ({_dtype(oa)}), got {_dtype(ob)}")
    if _dtype(la) not in _LSE_DTYPES:
        raise TypeError(f"lse_a: dtype must be float32 or float64 (got {_dtype(la)})")
    if _dtype(lb) != _dtype(la):
        raise TypeError(f"lse_b: dtype must match lse_a's ({_dtype(la)}), got {_dtype(lb)}")

    rows = int(np.prod(shape[:-1], dtype=np.int64))
    dim = shape[-1]
    oa, ob = _dense(oa, (rows, dim)), _dense(ob, (rows, dim))
    la, lb = _dense(la, (rows,)), _dense(lb, (rows,))
    out, lse = _empty(oa, (rows, dim)), _empty(la, (rows,))
    _ext._merge_states(_view(oa), la, _view(ob), lb, _view(out), lse, hint)
    return out.reshape(shape), lse.reshape(shape[:-1])
