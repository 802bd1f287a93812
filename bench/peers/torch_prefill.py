"""torch_prefill.py: times PyTorch's CPU scaled_dot_product_attention on one prompt micro-batch at
depth (bench/prefill_vs_ggml.sh runs it beside leanattn and ggml) and checks sampled rows against
an fp64 NumPy reference; prints one line of key=value fields.

Q [1, q_heads, q_len, d], K and V [1, kv_heads, depth + q_len, d] (enable_gqa=True, not copied),
an explicit boolean mask in which row i sees keys [0, depth + i] (bottom-right causal: torch's
is_causal is top-left aligned when q_len != kv_len), scale 1/sqrt(d), f32 and bf16 (--dtype),
torch.set_num_threads(--threads), inference mode. K and V are drawn in f32 and rounded to the
dtype; the reference reads the rounded values.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--q-heads", type=int, default=9)
    p.add_argument("--kv-heads", type=int, default=3)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--depth", type=int, default=4096)
    p.add_argument("--q-len", type=int, default=512)
    p.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    n_kv, g = a.depth + a.q_len, a.q_heads // a.kv_heads
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(1, a.q_heads, a.q_len, a.head_dim, generator=gen).to(dtype)
    k = torch.randn(1, a.kv_heads, n_kv, a.head_dim, generator=gen).to(dtype)
    v = torch.randn(1, a.kv_heads, n_kv, a.head_dim, generator=gen).to(dtype)
    rows = torch.arange(a.q_len).unsqueeze(1)
    mask = torch.arange(n_kv).unsqueeze(0) <= a.depth + rows  # [q_len, n_kv]
    times = []
    with torch.inference_mode():
        for i in range(a.repeat + 1):
            start = time.perf_counter()
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
            if i > 0:
                times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    qd, kd, vd = (t.double().numpy()[0] for t in (q, k, v))
    got = out.float().double().numpy()[0]
    err = 0.0
    for r in np.linspace(0, a.q_len - 1, min(8, a.q_len)).astype(int):
        for h in range(a.q_heads):
            s = kd[h // g, : a.depth + r + 1] @ qd[h, r] / np.sqrt(a.head_dim)
            w = np.exp(s - s.max())
            ref = w @ vd[h // g, : a.depth + r + 1] / w.sum()
            err = max(err, float(np.abs(got[h, r] - ref).max()))
    bound = 2e-3 if a.dtype == "f32" else 3e-2
    fmas = 2.0 * a.head_dim * a.q_heads * (a.q_len * a.depth + a.q_len * (a.q_len + 1) / 2)
    median = times[len(times) // 2]
    print(f"impl=torch-sdpa type={a.dtype} heads={a.q_heads}/{a.kv_heads} d={a.head_dim} "
          f"depth={a.depth} q_len={a.q_len} threads={a.threads} median_us={median:.1f} "
          f"min_us={times[0]:.1f} gfma_s={fmas / median * 1e-3:.2f} max_err={err:.3g} "
          f"check={'ok' if err <= bound else 'FAIL'} torch={torch.__version__}")
    return 0 if err <= bound else 1


if __name__ == "__main__":
    raise SystemExit(main())
