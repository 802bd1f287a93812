"""Shared helpers of the leanattn Python tests: random decode problems (contiguous and paged
caches in every dtype), independent NumPy fp64 attentions written from the definitions (plain,
and with the variants), and the accuracy check used against them and against leanattn.reference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pytest

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 tests are skipped without ml_dtypes
    BF16 = None

DTYPES = ["float32", "float16", "bfloat16"]


def import_torch():
    """The torch module for the tests under tests/python/torch: a skip where it is not installed,
    a failure where LEANATTN_REQUIRE_TORCH is set (scripts/test-torch.sh, so CI never reports
    skipped torch tests as passed)."""
    if os.environ.get("LEANATTN_REQUIRE_TORCH"):
        import torch

        return torch
    return pytest.importorskip("torch")

# Output tolerance |out - ref| <= ATOL + RTOL * |ref| per dtype: the output is rounded to the
# dtype once (half an ulp) after float32 accumulation; values are weighted means of N(0, 1).
TOLERANCE = {"float32": (2e-5, 2e-5), "float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)}
LSE_TOLERANCE = 1e-3


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        if BF16 is None:
            pytest.skip("bfloat16 needs ml_dtypes")
        return BF16
    return np.dtype(name)


@dataclass
class Case:
    q: np.ndarray  # [batch, q_heads, head_dim]
    k: np.ndarray  # [batch, capacity, kv_heads, head_dim] or [num_pages, page_size, kv_heads, d]
    v: np.ndarray  # same as k, its last dimension head_dim_v
    seq_lens: np.ndarray  # [batch] int32
    block_table: Optional[np.ndarray] = None  # [batch, max_pages] int32, paged only

    def args(self):
        return self.q, self.k, self.v, self.seq_lens


def make_case(
    rng: np.random.Generator,
    seq_lens: Sequence[int],
    q_heads: int = 8,
    kv_heads: int = 2,
    head_dim: int = 64,
    dtype: str = "float32",
    kv_dtype: Optional[str] = None,
    page_size: Optional[int] = None,
    spare: int = 3,
    head_dim_v: Optional[int] = None,
) -> Case:
    """Random N(0, 1) inputs, V's rows head_dim_v wide (None: head_dim). Contiguous caches get
    `spare` unused rows of capacity; paged caches get `spare` unused pages, a shuffled block
    table and -1 in unused table entries."""
    dv = head_dim if head_dim_v is None else head_dim_v
    lens = np.asarray(seq_lens, dtype=np.int32)
    batch = len(lens)
    qd, kvd = np_dtype(dtype), np_dtype(kv_dtype or dtype)
    q = rng.standard_normal((batch, q_heads, head_dim)).astype(qd)
    if page_size is None:
        cap = int(lens.max(initial=0)) + spare
        shape = (batch, cap, kv_heads, head_dim)
        k = rng.standard_normal(shape).astype(kvd)
        v = rng.standard_normal(shape[:3] + (dv,)).astype(kvd)
        return Case(q, k, v, lens)
    pages = [(int(n) + page_size - 1) // page_size for n in lens]
    num_pages = sum(pages) + spare
    shape = (num_pages, page_size, kv_heads, head_dim)
    k = rng.standard_normal(shape).astype(kvd)
    v = rng.standard_normal(shape[:3] + (dv,)).astype(kvd)
    table = np.full((batch, max(pages, default=0) + 1), -1, dtype=np.int32)
    order = rng.permutation(num_pages)
    used = 0
    for b, n in enumerate(pages):
        table[b, :n] = order[used:used + n]
        used += n
    return Case(q, k, v, lens, table)


def replay_lengths(rng: np.random.Generator, count: int, batch: int = 5,
                   bound: int = 200) -> list:
    """``count`` int32 length sets for one captured step of ``batch`` requests of at most
    ``bound`` tokens: growing, shrinking, all empty, one long request, then random (zeros
    included)."""
    sets = [[min(bound, 11 * (i + 1) * (b + 1)) for b in range(batch)] for i in range(4)]
    sets += [[max(0, bound - 10 - 80 * i - 7 * b) for b in range(batch)] for i in range(2)]
    sets += [[0] * batch, [bound if b == 1 else int(b == 3) for b in range(batch)]]
    while len(sets) < count:
        sets.append([0 if rng.integers(5) == 0 else int(rng.integers(bound + 1))
                     for _ in range(batch)])
    return [np.asarray(s, dtype=np.int32) for s in sets[:count]]


def to_f64(x) -> np.ndarray:
    """Any supported array (NumPy incl. bfloat16, PyTorch) as float64 NumPy."""
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().double().numpy()
    return np.asarray(x).astype(np.float64)


def numpy_attention(q, k, v, seq_lens, block_table=None, scale=None):
    """Decode attention in float64 from the definition, written independently of the library:
    gather each request's keys, softmax of the scaled scores, weighted sum of values (V's rows
    of their own width: the output's)."""
    q64, k64, v64 = to_f64(q), to_f64(k), to_f64(v)
    batch, q_heads, head_dim = q64.shape
    kv_heads = k64.shape[2]
    group = q_heads // kv_heads
    # The library holds the scale as a float32 (1/sqrt(head_dim) computed in float32).
    if scale is None:
        scale = np.float32(1.0) / np.sqrt(np.float32(head_dim))
    scale = float(np.float32(scale))
    out = np.zeros((batch, q_heads, v64.shape[-1]))
    lse = np.full((batch, q_heads), -np.inf)
    for b in range(batch):
        n = int(seq_lens[b])
        if n == 0:
            continue
        t = np.arange(n)
        if block_table is None:
            keys, values = k64[b, :n], v64[b, :n]  # [n, kv_heads, head_dim]
        else:
            page_size = k64.shape[1]
            pages = np.asarray(block_table)[b, t // page_size]
            keys, values = k64[pages, t % page_size], v64[pages, t % page_size]
        heads = np.arange(q_heads) // group
        scores = np.einsum("hd,nhd->hn", q64[b], keys[:, heads]) * scale  # [q_heads, n]
        m = scores.max(axis=1, keepdims=True)
        p = np.exp(scores - m)
        total = p.sum(axis=1)
        out[b] = np.einsum("hn,nhd->hd", p, values[:, heads]) / total[:, None]
        lse[b] = m[:, 0] + np.log(total)
    return out, lse


def numpy_variant_attention(q, k, v, lens, causal=True, window_left=None, softcap=None,
                            sinks=None, alibi=None, scale=None):
    """The variants of docs/numerics.md from their definitions, in float64, one query row at a
    time: q [batch, q_len, q_heads, d]; k [batch, capacity, kv_heads, d], v the same with rows
    of its own width dv; out [batch, q_len, q_heads, dv] and lse."""
    batch, q_len, q_heads, d = q.shape
    group = q_heads // k.shape[2]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    out = np.zeros(q.shape[:-1] + v.shape[-1:])
    lse = np.full((batch, q_len, q_heads), -np.inf)
    for b in range(batch):
        n = int(lens[b])
        if n == 0:
            continue
        for i in range(q_len):
            pos = n - q_len + i
            keys = np.arange(n)
            visible = np.ones(n, bool)
            if causal:
                visible &= keys <= pos
            if window_left is not None and window_left >= 0:
                visible &= keys >= pos - window_left
            for h in range(q_heads):
                kh = h // group
                s = (k[b, :n, kh].astype(np.float64) @ q[b, i, h].astype(np.float64)) * scale
                if softcap:
                    s = softcap * np.tanh(s / softcap)
                if alibi is not None:
                    s = s - float(alibi[h]) * np.abs(keys - pos)
                s = np.where(visible, s, -np.inf)
                terms = [s] if sinks is None else [s, np.array([float(sinks[h])])]
                m = max(t.max() for t in terms)
                denom = sum(np.exp(t - m).sum() for t in terms)
                w = np.exp(s - m) / denom
                out[b, i, h] = w @ v[b, :n, kh].astype(np.float64)
                lse[b, i, h] = m + np.log(denom)
    return out, lse


def assert_close(out, ref, dtype: str, lse=None, ref_lse=None):
    """out (any framework) against a float64 reference with the dtype's tolerance; lse must be
    -inf exactly where the reference is."""
    got = to_f64(out)
    atol, rtol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, ref, atol=atol, rtol=rtol)
    if lse is not None:
        got_lse = to_f64(lse)
        assert np.array_equal(np.isneginf(got_lse), np.isneginf(ref_lse))
        finite = np.isfinite(ref_lse)
        np.testing.assert_allclose(got_lse[finite], ref_lse[finite], atol=LSE_TOLERANCE, rtol=1e-5)


@pytest.fixture
def fast_path_only(monkeypatch):
    """decode's general path made to fail, so a decode call that returns took the fast path."""
    import leanattn._decode as decode_module

    def general(*args, **kwargs):
        raise AssertionError("took the general path")

    monkeypatch.setattr(decode_module, "_decode_general", general)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
