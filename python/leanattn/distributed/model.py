"""python -m leanattn.distributed.model: a first-order model of context-parallel decode's cost per
layer and per step, for P GPUs holding an N-token sequence (docs/context-parallel.md). Memory-bound
local attention plus an all-gather of the fp32 partial states; every input is a flag, and what is
measured and what is assumed is stated in the docs.

    local(P)   = kv_bytes_per_token * N / P / (efficiency * hbm_bandwidth)
    gather(P)  = launch + hops(P) * hop_latency + (P - 1) * states_bytes / link_bandwidth
    hops(P)    = P - 1 (ring) or ceil(log2 P) (a log-depth algorithm: tree, PAT, NVLS)

with link_bandwidth and hop_latency those of NVLink for P <= gpus_per_node, of the network beyond.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Dict, List


def step_costs(n_tokens: int, ranks: int, a: Any) -> Dict[str, float]:
    """Microseconds per layer: local attention and the all-gather (ring and log-depth), and the
    KV bytes each GPU holds for the whole model."""
    kv_token_layer = 2 * a.kv_heads * a.head_dim * a.kv_bytes  # K and V, one layer
    local = kv_token_layer * n_tokens / ranks / (a.efficiency * a.hbm_tbps * 1e12) * 1e6
    states = a.batch * a.q_heads * (a.head_dim + 1) * 4
    intra = ranks <= a.gpus_per_node
    latency = a.nvlink_hop_us if intra else a.net_hop_us
    bandwidth = (a.nvlink_gbps if intra else a.net_gbps) * 1e9
    wire = (ranks - 1) * states / bandwidth * 1e6
    ring = a.launch_us + (ranks - 1) * latency + wire if ranks > 1 else 0.0
    log = a.launch_us + math.ceil(math.log2(ranks)) * latency + wire if ranks > 1 else 0.0
    return {"local_us": local, "ring_us": ring, "log_us": log, "states_bytes": states,
            "kv_gb_per_gpu": kv_token_layer * a.layers * n_tokens / ranks / 1e9}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m leanattn.distributed.model",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", default="1000000,10000000")
    p.add_argument("--ranks", default="1,8,16,32,64")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--layers", type=int, default=32, help="Llama-3-8B by default")
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--kv-bytes", type=int, default=2, help="bytes per K/V element")
    p.add_argument("--hbm-tbps", type=float, default=4.8, help="H200: 4.8 TB/s")
    p.add_argument("--efficiency", type=float, default=0.8, help="fraction of HBM reached")
    p.add_argument("--hbm-gb", type=float, default=141.0)
    p.add_argument("--weights-gb", type=float, default=16.1, help="Llama-3-8B in bf16")
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--launch-us", type=float, default=8.0, help="collective launch overhead")
    p.add_argument("--nvlink-hop-us", type=float, default=1.0, help="NCCL LL protocol hop")
    p.add_argument("--nvlink-gbps", type=float, default=150.0, help="LL: ~1/3 of NVLink")
    p.add_argument("--net-hop-us", type=float, default=5.0, help="InfiniBand hop")
    p.add_argument("--net-gbps", type=float, default=50.0, help="400 Gb/s per GPU")
    return p


def main(argv: Any = None) -> int:
    a = parser().parse_args(argv)
    rows: List[str] = []
    print(f"# batch {a.batch}, {a.layers} layers, {a.q_heads}/{a.kv_heads} heads x {a.head_dim}, "
          f"{a.kv_bytes}-byte KV; HBM {a.hbm_tbps} TB/s x {a.efficiency}; hops {a.nvlink_hop_us} / "
          f"{a.net_hop_us} us, links {a.nvlink_gbps} / {a.net_gbps} GB/s (NVLink / network), "
          f"launch {a.launch_us} us")
    print("| tokens | GPUs | KV GB/GPU | local us/layer | all-gather us/layer, ring / log | "
          "step ms (32 layers), ring / log | combine share, ring / log |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in a.tokens.split(",")):
        for p in (int(x) for x in a.ranks.split(",")):
            c = step_costs(n, p, a)
            fits = "" if c["kv_gb_per_gpu"] + a.weights_gb <= a.hbm_gb else " (too big)"
            ring_ms = a.layers * (c["local_us"] + c["ring_us"]) / 1e3
            log_ms = a.layers * (c["local_us"] + c["log_us"]) / 1e3
            share = [c[k] / (c["local_us"] + c[k]) for k in ("ring_us", "log_us")]
            rows.append(f"| {n:,} | {p} | {c['kv_gb_per_gpu']:.1f}{fits} | {c['local_us']:.1f} | "
                        f"{c['ring_us']:.1f} / {c['log_us']:.1f} | {ring_ms:.2f} / {log_ms:.2f} | "
                        f"{share[0]:.0%} / {share[1]:.0%} |")
            print(rows[-1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
