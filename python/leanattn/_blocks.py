"""ggml's block formats q8_0 and q4_0 in NumPy: the quantizers of quantize_kv (the same bytes as
ggml's reference quantizers quantize_row_q8_0_ref / quantize_row_q4_0_ref, float32 arithmetic as
there) and the dequantizers of dequantize_kv (value = d x q in float32).

A row of head_dim values (a multiple of 32) is head_dim / 32 blocks of 32 values:
    q8_0: 34 bytes: a little-endian f16 scale d, then 32 int8 codes q; value = d x q.
    q4_0: 18 bytes: a little-endian f16 scale d, then 16 bytes; value j < 16 is the low nibble of
          byte j, value j + 16 its high nibble; value = d x (nibble - 8).
"""

from __future__ import annotations

import numpy as np

VALUES = 32  # ggml's QK8_0 = QK4_0
BYTES = {"q8_0": 34, "q4_0": 18}


def row_bytes(kv_dtype: str, head_dim: int) -> int:
    """Bytes of a row of head_dim values (head_dim a multiple of 32)."""
    return head_dim // VALUES * BYTES[kv_dtype]


def _inverse(d: np.ndarray) -> np.ndarray:
    """ggml's ``id = d ? 1.0f / d : 0.0f`` in float32."""
    with np.errstate(divide="ignore"):
        return np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)


def _scale_bytes(d: np.ndarray) -> np.ndarray:
    """float32 [n, 1] -> [n, 2] uint8: little-endian f16, rounded to nearest even
    (GGML_FP32_TO_FP16; overflow gives infinity, as there)."""
    with np.errstate(over="ignore"):
        return d.astype("<f2").view(np.uint8)


def _q8_0(blocks: np.ndarray) -> np.ndarray:
    """quantize_row_q8_0_ref: amax = max |x|, d = amax / 127, q = roundf(x x id)."""
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float32)
    x0 = (blocks * _inverse(d)).astype(np.float32)
    # roundf (half away from zero): exact in float64, where |x0| + 0.5 needs no rounding.
    q = np.copysign(np.floor(np.abs(x0).astype(np.float64) + 0.5), x0)
    return np.concatenate([_scale_bytes(d), q.astype(np.int8).view(np.uint8)], axis=1)


def _q4_0(blocks: np.ndarray) -> np.ndarray:
    """quantize_row_q4_0_ref: max = the first value of largest |x| (signed; +0 when all are
    zero), d = max / -8, q = min(15, (int8_t)(x x id + 8.5f)), two values a byte."""
    n = blocks.shape[0]
    a = np.abs(blocks)
    first = a.argmax(axis=1)  # the first of the largest, as ggml's strict `amax < |v|`
    top = blocks[np.arange(n), first]
    top = np.where(a[np.arange(n), first] > 0, top, np.float32(0)).astype(np.float32)[:, None]
    d = (top / np.float32(-8)).astype(np.float32)
    x0 = (blocks * _inverse(d)).astype(np.float32)
    shifted = (x0 + np.float32(8.5)).astype(np.float32)  # >= 0: |x x id| <= 8
    q = np.minimum(np.trunc(shifted), 15).astype(np.uint8)
    packed = q[:, : VALUES // 2] | (q[:, VALUES // 2 :] << np.uint8(4))
    return np.concatenate([_scale_bytes(d), packed], axis=1)


def quantize(x: np.ndarray, kv_dtype: str) -> np.ndarray:
    """float32 [..., head_dim] (head_dim a multiple of 32, checked by the caller) -> uint8
    [..., head_dim / 32 x block bytes], C-contiguous."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    head_dim = x.shape[-1]
    blocks = x.reshape(-1, VALUES)
    stored = (_q8_0 if kv_dtype == "q8_0" else _q4_0)(blocks)
    return stored.reshape(x.shape[:-1] + (row_bytes(kv_dtype, head_dim),))


def dequantize(stored: np.ndarray, kv_dtype: str) -> np.ndarray:
    """uint8 [..., row bytes] (a multiple of the block's bytes, checked by the caller) -> float32
    [..., head_dim]: d x q, d read as f16 and widened to float32, the product in float32."""
    stored = np.ascontiguousarray(stored, dtype=np.uint8)
    size = BYTES[kv_dtype]
    blocks = stored.reshape(-1, size)
    d = np.ascontiguousarray(blocks[:, :2]).view("<f2").astype(np.float32)  # [n, 1]
    if kv_dtype == "q8_0":
        q = blocks[:, 2:].view(np.int8).astype(np.float32)
    else:
        nibbles = blocks[:, 2:]
        q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8
    values = (d * q).astype(np.float32)
    return values.reshape(stored.shape[:-1] + (stored.shape[-1] // size * VALUES,))
