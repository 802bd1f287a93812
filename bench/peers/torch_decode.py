"""torch_decode.py: times PyTorch's CPU scaled_dot_product_attention on one decode problem in
several configurations, interleaved round by round, and checks each against an fp64 NumPy
reference. Run by run_peers.sh with build/peers-venv's Python (and OMP_NUM_THREADS /
OMP_PROC_BIND / OMP_PLACES set for pinning); prints one JSON line per configuration, like the C++
harnesses (common.hpp).

Configurations (--variants, default all four): element type f32 or f16 for Q, K and V, and GQA by
enable_gqa=True (K and V not copied) or by K and V expanded per query head beforehand (not timed;
the expanded tensors are what is read). MHA has one GQA form. Each is reported as its own impl,
torch-sdpa-<dtype>-<gqa>; combine.py adds torch-sdpa-best, the fastest correct one per shape.
Layout [batch, heads, tokens, head_dim], one query token, scale 1/sqrt(head_dim),
torch.set_num_threads(--threads), inference mode. K and V live on transparent huge pages
(mmap + MADV_HUGEPAGE), as leanattn's do. Each round runs every configuration once, then a read
pass over a separate buffer (the probe, also reported) so that no run finds the last one's data
in cache. Ragged batches: torch has no ragged dense SDPA, so the batch is padded to the longest
request and a boolean attn_mask hides the padding (as a padded static cache would); bytes are
the useful (unpadded) K+V at 16 bits per element whatever the dtype, as leanattn counts them.

K and V of different widths (--head-dim-v) and absorbed MLA (--v-in-k: no V cache, V is the first
head_dim_v values of K's rows; K only counted in the bytes). A third field of a configuration says
how V reaches SDPA: `slice` (default), V = K[..., :dv], a view (torch's CPU flash kernel wants one
width for Q, K and V, so this runs the math backend), or `k` (--v-in-k only), V = K itself and
the output's first dv values kept: Dk == Dv, the flash backend, no extra bytes read (the
padding transformers applies to V for flash kernels, free here since the padding is K's tail).
GQA form `broadcast` (one KV head only): K and V expanded per query head as stride-0 views.
"""
import argparse
import json
import math
import mmap
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
ALL_VARIANTS = "f32:enable_gqa,f32:expand,f16:enable_gqa,f16:expand"
MLA_VARIANTS = "f32:enable_gqa:k,f32:broadcast:k,bf16:enable_gqa:k,bf16:broadcast:k"
GQA_FORMS = ("enable_gqa", "expand", "broadcast")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", default="custom")
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--head-dim-v", type=int, default=0, help="V width (0: --head-dim)")
    p.add_argument("--v-in-k", action="store_true",
                   help="no V cache: V is the first --head-dim-v values of K's rows")
    p.add_argument("--seq-lens", default="4096", help="comma-separated tokens per request")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rotate-mib", type=int, default=512)
    p.add_argument("--probe-mib", type=int, default=256)
    p.add_argument("--variants", default=None,
                   help="comma-separated dtype:gqa[:v] (dtype f32, f16, bf16; gqa enable_gqa, "
                   f"expand, broadcast; v slice, k). Default {ALL_VARIANTS} "
                   f"({MLA_VARIANTS} with --v-in-k)")
    p.add_argument("--mem-budget-mib", type=int, default=0,
                   help="skip the largest configurations beyond this (0: half of MemAvailable)")
    a = p.parse_args()
    a.seq_lens = [int(x) for x in a.seq_lens.split(",")]
    a.head_dim_v = a.head_dim_v or a.head_dim
    a.variants = a.variants or (MLA_VARIANTS if a.v_in_k else ALL_VARIANTS)
    a.variants = [tuple(v.split(":")) + (() if v.count(":") == 2 else ("slice",))
                  for v in a.variants.split(",")]
    if any(len(v) != 3 or v[0] not in DTYPES or v[1] not in GQA_FORMS or
           v[2] not in ("slice", "k") for v in a.variants):
        p.error("--variants: comma-separated dtype:gqa[:v], e.g. f32:enable_gqa,bf16:expand:k")
    if any(v[2] == "k" for v in a.variants) and not a.v_in_k:
        p.error("--variants: V form k needs --v-in-k")
    if any(v[1] == "broadcast" for v in a.variants) and a.kv_heads != 1:
        p.error("--variants: gqa form broadcast needs --kv-heads 1")
    if a.v_in_k and a.head_dim_v > a.head_dim:
        p.error("--v-in-k: --head-dim-v must not exceed --head-dim")
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


def huge_empty(shape, dtype):
    """A tensor on transparent huge pages: anonymous mmap advised MADV_HUGEPAGE (Linux)."""
    count = math.prod(shape)
    nbytes = max(1, count * torch.empty((), dtype=dtype).element_size())
    buf = mmap.mmap(-1, (nbytes + (2 << 20) - 1) // (2 << 20) * (2 << 20))
    if hasattr(mmap, "MADV_HUGEPAGE"):
        buf.madvise(mmap.MADV_HUGEPAGE)
    return torch.frombuffer(buf, dtype=dtype, count=count).view(*shape)


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 1 << 34


class Variant:
    """One configuration: its KV copies (rotated so that small caches are read cold), query."""

    def __init__(self, a, dtype_name, gqa, vform, k32, v32, q32):
        self.dtype_name, self.g = dtype_name, a.q_heads // a.kv_heads
        self.gqa, self.vform, self.dv = gqa if self.g > 1 else "mha", vform, a.head_dim_v
        dtype = DTYPES[dtype_name]
        self.q = q32.to(dtype)
        k0 = k32.to(dtype)
        v0 = k0[..., :self.dv] if a.v_in_k else v32.to(dtype)
        self.k_ref, self.v_ref = k0, v0  # what the reference reads (the rounded values)
        stored = [k0] if a.v_in_k else [k0, v0]  # the caches; V may be a view of K
        expand = self.gqa == "expand"
        heads = a.q_heads if expand else a.kv_heads
        one = sum(t.numel() for t in stored) * (self.g if expand else 1) * k0.element_size()
        self.copies = max(1, min(64, math.ceil((a.rotate_mib << 20) / max(1, one))))
        self.bytes = self.copies * one
        self.kvs = []
        for _ in range(self.copies):
            held = []
            for t in stored:
                h = huge_empty((t.shape[0], heads, t.shape[2], t.shape[3]), dtype)
                h.copy_(t.repeat_interleave(self.g, dim=1) if expand else t)
                held.append(h)
            k = held[0]
            v = held[1] if not a.v_in_k else k if vform == "k" else k[..., :self.dv]
            if self.gqa == "broadcast":  # one KV head: stride-0 views, nothing copied
                k = k.expand(-1, a.q_heads, -1, -1)
                v = v.expand(-1, a.q_heads, -1, -1)
            self.kvs.append((k, v))
        self.times, self.next = [], 0

    def name(self):
        return (f"torch-sdpa-{self.dtype_name}-{self.gqa.replace('_', '-')}"
                f"{'-vk' if self.vform == 'k' else ''}")

    def run(self, mask, scale, c):
        k, v = self.kvs[c]
        out = F.scaled_dot_product_attention(self.q, k, v, attn_mask=mask, scale=scale,
                                             enable_gqa=self.gqa == "enable_gqa")
        return out[..., :self.dv] if self.vform == "k" else out


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    b, hq, hkv, d, dv = len(a.seq_lens), a.q_heads, a.kv_heads, a.head_dim, a.head_dim_v
    g, n = hq // hkv, max(a.seq_lens)
    total = sum(a.seq_lens)
    # 16-bit elements whatever the dtype (GB/s ranks like speed); K only when V lies in K's rows.
    kv_bytes = total * hkv * (d + (0 if a.v_in_k else dv)) * 2
    gen = torch.Generator().manual_seed(31)

    # K [b, hkv, n, d] and V [b, hkv, n, dv] f32 (no V with --v-in-k), one (request, head) at a
    # time.
    k32 = torch.empty(b, hkv, n, d)
    v32 = None if a.v_in_k else torch.empty(b, hkv, n, dv)
    for t in (k32,) if a.v_in_k else (k32, v32):
        for i in range(b):
            for h in range(hkv):
                t[i, h].copy_(torch.randn(n, t.shape[3], generator=gen))
    q32 = torch.randn(b, hq, 1, d, generator=gen)
    ragged = len(set(a.seq_lens)) > 1
    mask = None
    if ragged:
        pos = torch.arange(n)
        mask = (pos[None, :] < torch.tensor(a.seq_lens)[:, None]).view(b, 1, 1, n)
    scale = 1.0 / math.sqrt(d)

    # The configurations, one GQA form for MHA, the largest dropped first beyond the budget.
    budget = (a.mem_budget_mib << 20) or mem_available() // 2
    wanted, seen = [], set()
    for dt, gqa, vform in a.variants:
        key = (dt, gqa if g > 1 else "mha", vform)
        if key not in seen:
            seen.add(key)
            wanted.append((dt, gqa, vform))
    elt = {"f32": 4, "f16": 2, "bf16": 2}
    cache = k32.numel() + (0 if a.v_in_k else v32.numel())
    need = [cache * elt[dt] * (g if gqa == "expand" else 1) for dt, gqa, _ in wanted]
    kept, used = [], 0
    for i in sorted(range(len(wanted)), key=lambda i: need[i]):
        if used + need[i] > budget:
            print(f"torch_decode.py: skipping {':'.join(wanted[i])} ({need[i] >> 20} MiB, over "
                  f"the {budget >> 20} MiB budget)", file=sys.stderr)
            continue
        kept.append(i)
        used += need[i]
    variants = [Variant(a, *wanted[i], k32, v32, q32) for i in sorted(kept)]

    probe = huge_empty(((max(1, a.probe_mib) << 20) // 4,), torch.float32)
    probe.fill_(1.0)
    probe_gbps = []
    with torch.inference_mode():
        for r in range(-a.warmup, a.repeat):
            for v in variants:
                t0 = time.perf_counter_ns()
                v.run(mask, scale, v.next % v.copies)
                dt = (time.perf_counter_ns() - t0) / 1e3
                v.next += 1
                if r >= 0:
                    v.times.append(dt)
            t0 = time.perf_counter_ns()
            probe.sum()
            if r >= 0:
                probe_gbps.append(probe.nbytes / (time.perf_counter_ns() - t0))
        outs = [v.run(mask, scale, 0).float().numpy() for v in variants]  # [b, hq, 1, dv]

    for v, out in zip(variants, outs):
        err, ref_max = reference_error(a, v, out, scale)
        backend = backend_name(v.q, v.kvs[0][0], v.kvs[0][1], mask, v.gqa == "enable_gqa")
        gqa_text = {"enable_gqa": "enable_gqa", "expand": "expanded KV (read g times)",
                    "broadcast": "KV expanded as stride-0 views", "mha": "MHA"}[v.gqa]
        v_text = ("" if not a.v_in_k else f", V = K[..., :{dv}] (a view)" if v.vform == "slice"
                  else f", V = K ({d} wide), output[..., :{dv}]")
        config = (f"SDPA {v.dtype_name}{' (reads 2x kv_bytes)' if v.dtype_name == 'f32' else ''}"
                  f" head-major, {gqa_text}{v_text}{', padded + bool mask' if ragged else ''}, "
                  f"backend {backend}, huge pages, interleaved with {len(variants)} configs, "
                  f"{torch.get_num_threads()} threads")
        print(json.dumps({
            "impl": v.name(), "label": a.label, "q_heads": hq, "kv_heads": hkv, "head_dim": d,
            "head_dim_v": dv, "v_in_k": a.v_in_k,
            "dtype": v.dtype_name, "seq_lens": ";".join(map(str, a.seq_lens)),
            "threads": a.threads, "repeat": a.repeat,
            "median_us": round(float(np.median(v.times)), 2), "best_us": round(min(v.times), 2),
            "kv_bytes": kv_bytes, "kv_copies": v.copies, "max_abs_err": err,
            "ref_max_abs": ref_max, "probe_gbps": round(float(np.median(probe_gbps)), 3),
            "version": f"torch {torch.__version__}", "config": config}), flush=True)


def reference_error(a, v, out, scale):
    """fp64 reference from the values the variant read, one (request, KV head) at a time."""
    err, ref_max, g = 0.0, 0.0, v.g
    for i, length in enumerate(a.seq_lens):
        for h in range(a.kv_heads):
            kh = v.k_ref[i, h, :length].double().numpy()
            vh = v.v_ref[i, h, :length].double().numpy()
            qg = v.q[i, h * g:(h + 1) * g, 0].double().numpy()
            s = qg @ kh.T * scale
            p = np.exp(s - s.max(axis=1, keepdims=True))
            ref = (p @ vh) / p.sum(axis=1, keepdims=True)
            got = out[i, h * g:(h + 1) * g, 0]
            diff = np.abs(got - ref)
            err = max(err, float(np.max(np.where(np.isfinite(diff), diff, np.inf))))
            ref_max = max(ref_max, float(np.max(np.abs(ref))))
    return err, ref_max


if __name__ == "__main__":
    sys.exit(main())
