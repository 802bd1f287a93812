"""leanattn.quantize_kv and leanattn.dequantize_kv: quantized KV caches for tests and examples.

A cache (or a fresh K/V block) in float32/float16/bfloat16 is mapped to fp8 e4m3, fp8 e5m2 or
int8 with float32 scales (value = stored x scale, the vLLM / FlashInfer convention) at one of
three granularities: per tensor, per KV head, or per (token, KV head). Each block's scale maps
its absolute maximum onto the type's largest value (448, 57344, 127). Rounding is to nearest
even, saturating, in NumPy alone (ml_dtypes and torch are not needed; the results are the same
bits as ml_dtypes' and torch's float8 casts for values in range).

Or to ggml's block formats q8_0 / q4_0 (llama.cpp's quantized KV caches), the bytes of ggml's
reference quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref), in _blocks.py.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import numpy as np

from . import _blocks
from ._arrays import BLOCK_KV_DTYPES, KV_DTYPES, framework

_GRANULARITIES = ("per_tensor", "per_kv_head", "per_token_head")
_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "int8": 127.0}
# (mantissa bits, smallest normal exponent, largest finite encoding, NaN encoding)
_FP8 = {"fp8_e4m3": (3, -6, 0x7E, 0x7F), "fp8_e5m2": (2, -14, 0x7B, 0x7E)}


def _encode_fp8(x: np.ndarray, kv_dtype: str) -> np.ndarray:
    """float values -> fp8 bytes (uint8), round to nearest even, saturating."""
    mbits, emin, max_bits, nan_bits = _FP8[kv_dtype]
    x = x.astype(np.float64)
    sign = np.where(np.signbit(x), 0x80, 0).astype(np.uint8)
    a = np.minimum(np.abs(x), _MAX[kv_dtype])  # NaN stays NaN
    finite = np.nan_to_num(a, nan=0.0)
    _, e = np.frexp(finite)  # finite = m 2^e, m in [0.5, 1): the exponent is e - 1 (0: emin)
    e = np.where(finite > 0, np.maximum(e.astype(np.int64) - 1, emin), emin)
    q = np.rint(finite / np.ldexp(1.0, e - mbits))  # exact division; rint ties to even
    bits = np.minimum(((e - emin) << mbits) + q.astype(np.int64), max_bits)
    bits = np.where(np.isnan(a), nan_bits, bits)
    return bits.astype(np.uint8) | sign


def _decode_fp8(bits: np.ndarray, kv_dtype: str) -> np.ndarray:
    """fp8 bytes -> float32 values (NaN and, for e5m2, infinities kept)."""
    b = bits.astype(np.int64)
    mbits, emin, _, _ = _FP8[kv_dtype]
    ebits = 7 - mbits
    e = (b >> mbits) & ((1 << ebits) - 1)
    m = b & ((1 << mbits) - 1)
    mag = np.where(e == 0, np.ldexp(m.astype(np.float64), emin - mbits),
                   np.ldexp(((1 << mbits) + m).astype(np.float64), e - 1 + emin - mbits))
    if kv_dtype == "fp8_e4m3":
        mag = np.where((b & 0x7F) == 0x7F, np.nan, mag)
    else:
        mag = np.where(e == 31, np.where(m == 0, np.inf, np.nan), mag)
    return np.where(b & 0x80, -mag, mag).astype(np.float32)


def _as_numpy(x: Any) -> np.ndarray:
    kind = framework(x)
    if kind == "torch":
        return x.detach().cpu().float().numpy()
    if kind == "cupy":
        return x.get().astype(np.float32)
    return np.asarray(x, dtype=np.float32)


def quantize_kv(
    cache: Any, kv_dtype: str, granularity: Optional[str] = None
) -> Tuple[Any, Any]:
    """Quantizes a K or V cache for :func:`leanattn.decode` (``kv_dtype=``, ``k_scale=`` /
    ``v_scale=``).

    Args:
        cache: ``[..., kv_heads, head_dim]`` float array: a contiguous ``[batch, capacity,
            kv_heads, head_dim]`` or paged ``[num_pages, page_size, kv_heads, head_dim]`` cache
            (NumPy, PyTorch, CuPy; read on the host). For ``"q8_0"`` / ``"q4_0"`` any number of
            dimensions >= 1 (each row of head_dim values is quantized alone, so a fresh
            ``[tokens, kv_heads, head_dim]`` block can be written into a cache), head_dim a
            multiple of 32, values finite.
        kv_dtype: ``"fp8_e4m3"``, ``"fp8_e5m2"`` or ``"int8"``; or ggml's block formats
            ``"q8_0"`` / ``"q4_0"`` (llama.cpp's quantized KV caches).
        granularity: ``"per_tensor"`` (one scale), ``"per_kv_head"`` (``[kv_heads]``) or
            ``"per_token_head"`` (the cache's shape without head_dim); default per tensor for
            fp8, per token and head for int8. None for the block formats (a scale per block of
            32 values, inside the block).

    Returns:
        ``(stored, scale)``: for NumPy input, ``stored`` is uint8 (fp8 bytes: pass ``kv_dtype``)
        or int8, and ``scale`` a float32 array of the granularity's shape (0-d per tensor); for
        PyTorch input, ``stored`` is torch.float8_e4m3fn / float8_e5m2 (uint8 where torch lacks
        them) or torch.int8, and ``scale`` a float32 tensor. A block of zeros gets scale 1.

        For ``"q8_0"`` / ``"q4_0"``: ``(stored, None)``, the same pair, so that
        ``k, k_scale = quantize_kv(...)`` then ``decode(..., kv_dtype=, k_scale=k_scale)`` works
        for every kv_dtype. ``stored`` is uint8 (a NumPy array, or a CPU tensor for PyTorch
        input) of the cache's shape with head_dim replaced by the row's bytes, head_dim / 32 x
        34 (q8_0) or x 18 (q4_0): ggml's bytes, exactly those of its reference quantizers
        (quantize_row_q8_0_ref: d = max|x| / 127, q = round half away from zero of x / d;
        quantize_row_q4_0_ref: d = (the x of largest |x|) / -8, q = min(15, trunc(x / d +
        8.5)); float32 arithmetic, d stored as f16).
    """
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"kv_dtype: must be one of {', '.join(KV_DTYPES)} (got {kv_dtype!r})")
    if kv_dtype in BLOCK_KV_DTYPES:
        return _quantize_blocks(cache, kv_dtype, granularity)
    if granularity is None:
        granularity = "per_token_head" if kv_dtype == "int8" else "per_tensor"
    if granularity not in _GRANULARITIES:
        raise ValueError(
            f"granularity: must be one of {', '.join(_GRANULARITIES)} (got {granularity!r})"
        )
    x = _as_numpy(cache)
    if x.ndim != 4:
        raise ValueError(
            "cache: must be [batch, capacity, kv_heads, head_dim] or [num_pages, page_size, "
            f"kv_heads, head_dim] (4 dimensions), got {x.ndim} dimensions"
        )
    a = np.abs(x)
    if granularity == "per_tensor":
        amax = np.asarray(a.max(initial=0.0))
    elif granularity == "per_kv_head":
        amax = a.max(axis=(0, 1, 3), initial=0.0)
    else:
        amax = a.max(axis=3, initial=0.0)
    scale = np.where(amax > 0, amax / _MAX[kv_dtype], 1.0).astype(np.float32)
    # One scale per head_dim row: [kv_heads] lines up with axis 2, the others broadcast.
    values = x / (scale[:, None] if granularity == "per_kv_head" else scale[..., None])
    if kv_dtype == "int8":
        stored = np.clip(np.rint(values), -127, 127).astype(np.int8)
    else:
        stored = _encode_fp8(values, kv_dtype)
    if framework(cache) != "torch":
        return stored, scale
    torch = sys.modules["torch"]
    out = torch.from_numpy(stored)
    name = {"fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}.get(kv_dtype)
    if name is not None and hasattr(torch, name):
        out = out.view(getattr(torch, name))
    return out, torch.from_numpy(scale)


def _quantize_blocks(cache: Any, kv_dtype: str, granularity: Optional[str]) -> Tuple[Any, None]:
    """quantize_kv for ggml's block formats: (uint8 bytes, None)."""
    if granularity is not None:
        raise ValueError(
            f"granularity: must be None for {kv_dtype} (a scale per block of 32 values, inside "
            f"the block; got {granularity!r})"
        )
    x = _as_numpy(cache)
    head_dim = x.shape[-1] if x.ndim else 0
    if x.ndim == 0 or head_dim % _blocks.VALUES or head_dim == 0:
        raise ValueError(
            f"cache: head_dim (cache.shape[-1]) = {head_dim} must be a positive multiple of "
            f"{_blocks.VALUES} for {kv_dtype} (ggml's blocks of {_blocks.VALUES} values)"
        )
    if not np.isfinite(x).all():
        raise ValueError(f"cache: values must be finite for {kv_dtype}")
    stored = _blocks.quantize(x, kv_dtype)
    if framework(cache) == "torch":
        return sys.modules["torch"].from_numpy(stored), None
    return stored, None


def _dequantize_blocks(stored: Any, scale: Any, kv_dtype: str) -> np.ndarray:
    """dequantize_kv for ggml's block formats: uint8 [..., row bytes] -> float32 [..., head_dim]."""
    if scale is not None:
        raise ValueError(
            f"scale: must be None for {kv_dtype} (ggml's blocks hold their own scales)"
        )
    kind = framework(stored)
    if kind == "torch":
        stored = stored.detach().cpu()
    elif kind == "cupy":
        stored = stored.get()
    dt = str(getattr(stored, "dtype", "")).replace("torch.", "")
    if dt != "uint8":
        raise TypeError(f"stored: a {kv_dtype} cache is uint8 bytes (got {dt or type(stored)})")
    a = stored.numpy() if kind == "torch" else np.asarray(stored)
    size = _blocks.BYTES[kv_dtype]
    if a.ndim == 0 or a.shape[-1] % size:
        raise ValueError(
            f"stored: its last dimension = {a.shape[-1] if a.ndim else 0} must be a whole "
            f"number of {kv_dtype} blocks ({size} bytes each)"
        )
    return _blocks.dequantize(a, kv_dtype)


def dequantize_kv(stored: Any, scale: Any = None, kv_dtype: Optional[str] = None) -> np.ndarray:
    """stored x scale as a float32 NumPy array (what the engines compute with): the inverse of
    :func:`quantize_kv` up to its rounding. ``kv_dtype`` is needed for uint8 fp8 bytes and for
    ggml's block formats: ``dequantize_kv(stored, None, "q8_0")`` (or ``"q4_0"``; scale must be
    None there) reads uint8 ``[..., head_dim / 32 x 34 (or 18)]`` bytes of ggml's blocks into
    float32 ``[..., head_dim]``, value = d x q (d the block's f16 scale, widened to float32; the
    product in float32, as ggml's dequantize_row_q8_0 / q4_0). For the 8-bit types ``scale``
    (quantize_kv's second result) is required."""
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise ValueError(
            f"kv_dtype: must be one of {', '.join(KV_DTYPES)} or None (got {kv_dtype!r})"
        )
    if kv_dtype in BLOCK_KV_DTYPES:
        return _dequantize_blocks(stored, scale, kv_dtype)
    kind = framework(stored)
    dt = str(getattr(stored, "dtype", ""))
    names = {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "int8": "int8"}
    found = names.get(dt.replace("torch.", ""))
    if found is None and kv_dtype is None:
        raise TypeError(
            f"stored: a {dt} array needs kv_dtype='fp8_e4m3' or 'fp8_e5m2' (or 'q8_0' / "
            "'q4_0' for ggml's blocks)"
        )
    kv_dtype = kv_dtype or found
    if scale is None:
        raise ValueError(f"scale: required for {kv_dtype} (quantize_kv's second result)")
    if kind == "torch":
        stored = stored.detach().cpu()
        stored = stored.view(sys.modules["torch"].int8 if kv_dtype == "int8" else
                             sys.modules["torch"].uint8).numpy()
    s = np.asarray(_as_numpy(scale), dtype=np.float32)
    if kv_dtype == "int8":
        values = np.asarray(stored).view(np.int8).astype(np.float32)
    else:
        values = _decode_fp8(np.asarray(stored).view(np.uint8), kv_dtype)
    if s.ndim == 1:  # per KV head: [kv_heads] along axis 2
        return values * s[:, None]
    return values * (s[..., None] if s.ndim == 3 else s)
