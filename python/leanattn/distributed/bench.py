"""python -m leanattn.distributed.bench: per-step cost of context-parallel decode on a local Gloo
group of 1..P processes: the local lean decode over each rank's shard, each combine path's time,
and the bytes each rank puts on the wire. One sequence batch is sharded contiguously; every
phase starts after a barrier, so the combine time excludes waiting for a slower rank, and the
step's time of a phase is the slowest rank's. Prints min and median over the steps.

    python -m leanattn.distributed.bench --ranks 1,2,3,4 --seq-len 131072 --steps 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Dict, List

import torch
import torch.distributed as dist

from .. import _decode as _local
from .. import default_workers
from . import _combine
from ._decode import _local_q
from ._shard import shard_positions
from ._spawn import run_local

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_FNS = {"all_gather": _combine.all_gather_combine, "all_reduce": _combine.all_reduce_combine,
        "all_to_all": _combine.all_to_all_combine}


def _rank(rank: int, world: int, cfg: Dict[str, Any]) -> Dict[str, Any]:
    """This rank's per-step seconds: {"local": [...], combine: [...]} and its KV bytes."""
    dtype = _DTYPES[cfg["dtype"]]
    lens = [cfg["seq_len"]] * cfg["batch"]
    local, _ = shard_positions(lens, rank, world, "contiguous")
    g = torch.Generator().manual_seed(1000 + rank)
    shape = (cfg["batch"], max(1, int(local.max())), cfg["kv_heads"], cfg["head_dim"])
    k = torch.randn(shape, generator=g).to(dtype)
    v = torch.randn(shape, generator=g).to(dtype)
    q = torch.randn(cfg["batch"], cfg["q_heads"], cfg["head_dim"],
                    generator=torch.Generator().manual_seed(7)).to(dtype)
    q_local = _local_q(q)  # as decode() passes it: fp32 on the host
    workers = max(1, cfg["cores"] // world)
    times: Dict[str, List[float]] = {"local": []}
    for name in cfg["combines"]:
        times[name] = []
    for step in range(cfg["warmup"] + cfg["steps"]):
        dist.barrier()
        t0 = time.perf_counter()
        out, lse = _local.decode(q_local, k, v, local, workers=workers, return_lse=True)
        t1 = time.perf_counter()
        if step >= cfg["warmup"]:
            times["local"].append(t1 - t0)
        for name in cfg["combines"]:
            dist.barrier()
            t2 = time.perf_counter()
            _FNS[name](out, lse)
            t3 = time.perf_counter()
            if step >= cfg["warmup"]:
                times[name].append(t3 - t2)
    return {"times": times, "kv_bytes": 2 * k.numel() * k.element_size(),
            "tokens": int(local.sum()), "workers": workers}


def _rank_fn() -> Any:
    """_rank pickled by its package name, also when this module runs as __main__ (-m)."""
    from leanattn.distributed import bench

    return bench._rank


def _summary(per_rank: List[Dict[str, Any]], key: str) -> Dict[str, float]:
    """Per step the slowest rank, then min and median over the steps, in ms."""
    steps = [max(r["times"][key][i] for r in per_rank)
             for i in range(len(per_rank[0]["times"][key]))]
    return {"min_ms": 1e3 * min(steps), "median_ms": 1e3 * statistics.median(steps)}


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leanattn.distributed.bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="1,2,3,4", help="group sizes, comma-separated")
    p.add_argument("--seq-len", type=int, default=131072, help="tokens per request (whole)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--q-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--dtype", default="float16", choices=list(_DTYPES))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--combines", default="all_gather,all_reduce,all_to_all")
    p.add_argument("--cores", type=int, default=default_workers(),
                   help="cores split between the ranks (workers per rank = cores // ranks)")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)
    cfg = {k: getattr(args, k) for k in ("seq_len", "batch", "q_heads", "kv_heads", "head_dim",
                                         "dtype", "steps", "warmup", "cores")}
    combines = [c for c in args.combines.split(",") if c]
    rows = []
    print(f"# {args.batch} x {args.seq_len} tokens, q_heads {args.q_heads}, kv_heads "
          f"{args.kv_heads}, head_dim {args.head_dim}, {args.dtype}; {args.cores} cores; "
          f"slowest rank per step, min / median of {args.steps} steps (ms)")
    print(f"{'ranks':>5} {'tokens/rank':>11} {'workers':>7} {'local':>15}  " +
          "  ".join(f"{c:>19}" for c in combines) + f"  {'wire B/rank':>11}")
    for world in (int(n) for n in args.ranks.split(",")):
        cfg["combines"] = [c for c in combines if c != "all_to_all" or args.q_heads % world == 0]
        results = run_local(_rank_fn(), world, cfg, timeout=1800.0, group_timeout=120.0)
        errors = [f"rank {r}: {res.error}" for r, res in enumerate(results) if res.error]
        if errors:
            raise SystemExit("\n".join(errors))
        per_rank = [res.value for res in results]
        row = {"ranks": world, "tokens_per_rank": max(r["tokens"] for r in per_rank),
               "kv_bytes_per_rank": max(r["kv_bytes"] for r in per_rank),
               "workers": per_rank[0]["workers"], "local": _summary(per_rank, "local")}
        for c in cfg["combines"]:
            row[c] = _summary(per_rank, c)
            row[c]["wire_bytes_per_rank"] = _combine.wire_bytes(c, args.batch, args.q_heads,
                                                                args.head_dim, world)
        rows.append(row)
        cells = [f"{row[c]['min_ms']:8.3f}/{row[c]['median_ms']:8.3f}" if c in row
                 else f"{'-':>17}" for c in combines]
        wire = _combine.wire_bytes("all_gather", args.batch, args.q_heads, args.head_dim, world)
        print(f"{world:>5} {row['tokens_per_rank']:>11} {row['workers']:>7} "
              f"{row['local']['min_ms']:7.2f}/{row['local']['median_ms']:7.2f}  "
              + "  ".join(f"{c:>19}" for c in cells) + f"  {wire:>11}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": {**cfg, "combines": combines}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
