"""torch_decode.py: times PyTorch's CPU scaled_dot_product_attention on one decode problem and
checks its output against an fp64 NumPy reference. Run by run_peers.sh with build/peers-venv's
Python (and OMP_NUM_THREADS / OMP_PROC_BIND / OMP_PLACES set for pinning); prints one JSON line,
like the C++ harnesses (common.hpp).

Configuration: f16 (or --dtype) Q, K, V in torch's layout [batch, heads, tokens, head_dim], one query token,
scale 1/sqrt(head_dim), torch.set_num_threads(--threads), inference mode. GQA: enable_gqa=True
(K and V are not copied), or --gqa expand (K and V repeated per query head beforehand, not timed).
Ragged batches: torch has no ragged dense SDPA, so the batch is padded to the longest request and
a boolean attn_mask hides the padding (as a padded static cache would); bytes are still counted
as the useful (unpadded) K+V.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", default="custom")
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--seq-lens", default="4096", help="comma-separated tokens per request")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rotate-mib", type=int, default=512)
    p.add_argument("--gqa", choices=["enable_gqa", "expand"], default="enable_gqa")
    p.add_argument("--dtype", choices=list(DTYPES), default="f16", help="Q, K, V element type")
    a = p.parse_args()
    a.seq_lens = [int(x) for x in a.seq_lens.split(",")]
    if a.q_heads % a.kv_heads or min(a.seq_lens) < 0 or max(a.seq_lens) < 1 or a.repeat < 1:
        p.error("--q-heads must be a multiple of --kv-heads; lengths >= 0, one > 0; --repeat >= 1")
    return a


def backend_name(q, k, v, mask, gqa):
    """Which SDPA backend torch picks for these inputs (flash / math / ...), if it says."""
    try:
        choice = torch._fused_sdp_choice(q, k, v, mask, 0.0, False, scale=None, enable_gqa=gqa)
        return torch.nn.attention.SDPBackend(choice).name
    except Exception:  # private API; only informative
        return "unknown"


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    b, hq, hkv, d = len(a.seq_lens), a.q_heads, a.kv_heads, a.head_dim
    g, n = hq // hkv, max(a.seq_lens)
    total = sum(a.seq_lens)
    dtype = DTYPES[a.dtype]
    kv_bytes = total * hkv * d * 2 * 2  # 16-bit elements whatever the dtype: GB/s ranks like speed
    gen = torch.Generator().manual_seed(31)

    # K, V [b, hkv, n, d] f16, filled one (request, head) at a time to bound the f32 temporary.
    k0 = torch.empty(b, hkv, n, d, dtype=dtype)
    v0 = torch.empty_like(k0)
    for t in (k0, v0):
        for i in range(b):
            for h in range(hkv):
                t[i, h].copy_(torch.randn(n, d, generator=gen))
    q = torch.randn(b, hq, 1, d, generator=gen).to(dtype)
    ragged = len(set(a.seq_lens)) > 1
    mask = None
    if ragged:
        pos = torch.arange(n)
        mask = (pos[None, :] < torch.tensor(a.seq_lens)[:, None]).view(b, 1, 1, n)

    def prepare(k, v):
        if a.gqa == "expand" and g > 1:
            return k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        return k, v

    copies = max(1, min(64, math.ceil((a.rotate_mib << 20) / max(1, k0.nbytes + v0.nbytes))))
    kvs = [prepare(k0, v0)] + [prepare(k0.clone(), v0.clone()) for _ in range(copies - 1)]
    gqa_flag = a.gqa == "enable_gqa" and g > 1
    scale = 1.0 / math.sqrt(d)

    def run(c):
        k, v = kvs[c]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                              enable_gqa=gqa_flag)

    times = []
    with torch.inference_mode():
        for r in range(-a.warmup, a.repeat):
            t0 = time.perf_counter_ns()
            run((r + a.warmup) % copies)
            dt = (time.perf_counter_ns() - t0) / 1e3
            if r >= 0:
                times.append(dt)
        out = run(0).float().numpy()  # [b, hq, 1, d]

    # fp64 reference, one (request, KV head) at a time.
    err, ref_max = 0.0, 0.0
    for i, length in enumerate(a.seq_lens):
        for h in range(hkv):
            kh = k0[i, h, :length].double().numpy()
            vh = v0[i, h, :length].double().numpy()
            qg = q[i, h * g:(h + 1) * g, 0].double().numpy()
            s = qg @ kh.T * scale
            p = np.exp(s - s.max(axis=1, keepdims=True))
            ref = (p @ vh) / p.sum(axis=1, keepdims=True)
            got = out[i, h * g:(h + 1) * g, 0]
            diff = np.abs(got - ref)
            err = max(err, float(np.max(np.where(np.isfinite(diff), diff, np.inf))))
            ref_max = max(ref_max, float(np.max(np.abs(ref))))

    k, v = kvs[0]
    backend = backend_name(q, k, v, mask, gqa_flag)
    config = (f"SDPA {a.dtype}{' (reads 2x kv_bytes)' if a.dtype == 'f32' else ''} head-major, {'enable_gqa' if gqa_flag else 'expanded KV' if g > 1 else 'MHA'}"
              f"{', padded + bool mask' if ragged else ''}, backend {backend}, "
              f"{torch.get_num_threads()} threads")
    print(json.dumps({
        "impl": "torch-sdpa", "label": a.label, "q_heads": hq, "kv_heads": hkv, "head_dim": d,
        "dtype": a.dtype, "seq_lens": ";".join(map(str, a.seq_lens)), "threads": a.threads,
        "repeat": a.repeat, "median_us": round(float(np.median(times)), 2),
        "best_us": round(min(times), 2), "kv_bytes": kv_bytes, "kv_copies": copies,
        "max_abs_err": err, "ref_max_abs": ref_max, "version": f"torch {torch.__version__}",
        "config": config}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
