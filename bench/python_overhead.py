"""Per-call cost of leanattn.decode on a tiny problem (batch 1, 32/8 heads, head_dim 128, 16
tokens: what a model pays per layer per token at short context), with and without a reused plan
and caller outputs (plain, and with Gemma 2's soft-cap), for NumPy arrays and PyTorch tensors;
and the same with 0 tokens (the overhead alone, no attention work). Prints min and median microseconds over several runs.

    python bench/python_overhead.py [--runs 7] [--reps 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, List, Tuple

import numpy as np

import leanattn


def timed(fn: Callable[[], object], runs: int, reps: int) -> Tuple[float, float]:
    """(min, median) microseconds per call over `runs` runs of `reps` calls."""
    for _ in range(reps // 10):
        fn()
    per_call: List[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        per_call.append((time.perf_counter() - start) / reps * 1e6)
    return min(per_call), statistics.median(per_call)


def cases(lib: str, dtype: str, tokens: int):
    """(label, callable) pairs for one framework, dtype and length."""
    b, hq, hk, d = 1, 32, 8, 128
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype)
              for s in ((b, hq, d), (b, 16, hk, d), (b, 16, hk, d))]
    if lib == "torch":
        import torch

        arrays = [torch.from_numpy(a) for a in arrays]
        lens = torch.tensor([tokens], dtype=torch.int32)
        out, lse = torch.empty_like(arrays[0]), torch.empty(b, hq)
    else:
        lens = np.array([tokens], np.int32)
        out, lse = np.empty_like(arrays[0]), np.empty((b, hq), np.float32)
    q, k, v = arrays
    plan = leanattn.plan([tokens], q_heads=hq, kv_heads=hk, head_dim=d)
    capped = leanattn.plan([tokens], q_heads=hq, kv_heads=hk, head_dim=d, softcap=50.0)
    calls = [
        ("decode(q, k, v, seq_lens)", lambda: leanattn.decode(q, k, v, lens)),
        ("decode(..., plan=, out=, lse_out=)",
         lambda: leanattn.decode(q, k, v, plan=plan, out=out, lse_out=lse)),
        # Gemma 2's decode: a plan made for its soft-cap (the fast path takes it along).
        ("decode(..., plan=, out=, lse_out=, softcap=50)",
         lambda: leanattn.decode(q, k, v, plan=capped, out=out, lse_out=lse, softcap=50.0)),
    ]
    if lib == "torch":
        import torch
        from leanattn import torch_ops  # noqa: F401  (registers the ops)

        calls.append(("torch.ops.leanattn.decode_(..., out, lse)",
                      lambda: torch.ops.leanattn.decode_(q, k, v, lens, out, lse)))
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    libs = ["numpy"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        pass
    print(f"leanattn {leanattn.__version__}, {leanattn.default_workers()} workers, "
          f"SIMD {leanattn.simd_targets()[0]}")
    print(f"{'framework':9} {'dtype':8} {'tokens':>6}  {'call':48} {'min us':>7} {'median us':>9}")
    for lib in libs:
        for dtype in ("float16", "float32"):
            for tokens in (16, 0):
                for label, fn in cases(lib, dtype, tokens):
                    lo, med = timed(fn, args.runs, args.reps)
                    print(f"{lib:9} {dtype:8} {tokens:6}  {label:48} {lo:7.1f} {med:9.1f}")


if __name__ == "__main__":
    main()
