"""The error of 8-bit KV caches against an unquantized one (issue 18, docs/numerics.md,
"Quantized KV caches"): for each cache type and scale granularity, the decode output on the
quantized cache against the fp64 attention of the float32 cache it was made from, next to the
same for an f16 cache. Two kinds of data: iid N(0, 1) K and V, and "LLM-like" K whose channels
have log-normal magnitudes with a few outlier channels (x 20), as measured K caches have, with
N(0, 1) V. Prints a Markdown table: relative RMS error and max absolute error of the output.

    python bench/quantized_error.py [--tokens 4096] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

import leanattn


def data(kind: str, rng: np.random.Generator, tokens: int, kv_heads: int, d: int):
    shape = (1, tokens, kv_heads, d)
    k = rng.standard_normal(shape)
    v = rng.standard_normal(shape)
    if kind == "llm-like":
        channel = np.exp(0.5 * rng.standard_normal((kv_heads, d)))
        outliers = rng.choice(d, size=4, replace=False)
        channel[:, outliers] *= 20.0
        k = k * channel
    return k.astype(np.float32), v.astype(np.float32)


def fp64_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    q_heads, d = q.shape[1], q.shape[2]
    group = q_heads // k.shape[2]
    out = np.zeros(q.shape)
    for h in range(q_heads):
        s = k[0, :, h // group].astype(np.float64) @ q[0, h].astype(np.float64) / np.sqrt(d)
        w = np.exp(s - s.max())
        out[0, h] = (w / w.sum()) @ v[0, :, h // group].astype(np.float64)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    q_heads, kv_heads, d = 32, 8, 128
    lens = np.array([args.tokens], np.int32)
    print(f"32/8 heads, d 128, {args.tokens} tokens, f32 Q and output; error of the output "
          "against fp64 attention on the float32 cache (rel. RMS = RMS error / RMS output)\n")
    print("| data | cache | scales | rel. RMS error | max abs error |")
    print("|---|---|---|---|---|")
    for kind in ("N(0,1)", "llm-like"):
        rng = np.random.default_rng(args.seed)
        k, v = data(kind, rng, args.tokens, kv_heads, d)
        q = rng.standard_normal((1, q_heads, d)).astype(np.float32)
        want = fp64_attention(q, k, v)
        rms = np.sqrt(np.mean(want**2))

        def row(cache: str, scales: str, out: np.ndarray) -> None:
            err = out.astype(np.float64) - want
            print(f"| {kind} | {cache} | {scales} | {np.sqrt(np.mean(err**2)) / rms:.2e} | "
                  f"{np.abs(err).max():.2e} |")

        row("f16", "-", leanattn.decode(q, k.astype(np.float16), v.astype(np.float16), lens))
        for kv_dtype in ("fp8_e4m3", "fp8_e5m2", "int8"):
            for scales in ("per_tensor", "per_kv_head", "per_token_head"):
                kq, ks = leanattn.quantize_kv(k, kv_dtype, scales)
                vq, vs = leanattn.quantize_kv(v, kv_dtype, scales)
                out = leanattn.decode(q, kq, vq, lens, kv_dtype=kv_dtype, k_scale=ks, v_scale=vs)
                row(kv_dtype, scales, out)


if __name__ == "__main__":
    main()
