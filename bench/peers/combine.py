"""combine.py: merges one run of run_peers.sh into the results CSV and its sidecar JSON.

Called by run_peers.sh as
    combine.py RUN_DIR OUT_CSV
RUN_DIR holds shapes.tsv (label, q_heads, kv_heads, head_dim, seq_lens, leanattn CSV path per
shape), peers.jsonl (one JSON object per peer run, from the harnesses) and meta.json (date,
commit, cpu, threads, versions, skipped runs). A shape runs in rounds (one shapes.tsv line and
one peers.jsonl line per implementation per round): each implementation's row takes the median
of its round medians, the best of its bests and the largest error. Each leanattn strategy becomes
one row (leanattn-lean, leanattn-split, leanattn-head; a dtype other than f16 is appended:
leanattn-lean-bf16), each torch configuration one (torch-sdpa-<dtype>-<gqa>[-vk]), and
torch-sdpa-best repeats the fastest correct torch row of the shape. head_dim_v and v_in_k (V is
the first head_dim_v values of K's rows: absorbed MLA) come from the rows themselves. Every peer
row takes probe_gbps from leanattn's CSVs of the same shape (the median of its rounds' probes,
measured in the same run). Standard library only.
"""
import csv
import json
import statistics
import sys
from pathlib import Path


def merge_rounds(rows):
    """One row per (impl, dtype, shape, seq_lens): median of the medians, best of the bests."""
    groups = {}
    for r in rows:
        groups.setdefault((r["impl"], r["dtype"], r["shape"], r["seq_lens"]), []).append(r)
    merged = []
    for same in groups.values():
        r = dict(same[0])
        r["median_us"] = statistics.median(float(x["median_us"]) for x in same)
        r["best_us"] = min(float(x["best_us"]) for x in same)
        r["max_abs_err"] = max(float(x["max_abs_err"]) for x in same)
        r["ok"] = int(all(int(x["ok"]) for x in same))
        if len(same) > 1:
            r["config"] = f"{r['config']}; median of {len(same)} rounds"
        merged.append(r)
    return merged


def add_torch_best(rows):
    """torch-sdpa-best: the fastest correct torch configuration of each shape."""
    best = {}
    for r in rows:
        if r["impl"].startswith("torch-sdpa-") and r["ok"]:
            key = (r["shape"], r["seq_lens"])
            if key not in best or r["median_us"] < best[key]["median_us"]:
                best[key] = r
    for r in best.values():
        rows.append(dict(r, impl="torch-sdpa-best", config=f"{r['impl']}: {r['config']}"))

COLUMNS = ["date", "commit", "cpu", "threads", "impl", "shape", "q_heads", "kv_heads", "head_dim",
           "head_dim_v", "v_in_k", "dtype", "seq_lens", "total_tokens", "median_us", "best_us",
           "kv_bytes", "gbps", "probe_gbps", "probe_fraction", "max_abs_err", "ref_max_abs", "ok",
           "version", "config"]


def peer_ok(r):
    """A sanity bound, not a precision policy: a wrong layout, head mapping, scale or a missing
    normalisation gives errors of the order of the outputs themselves (max |ref|), while a
    correct f16 pipeline stays far below. ggml accumulates P V in f16, and its error against
    max |ref| grows with the context (outputs shrink like 1/sqrt(n), its error does not), hence
    the absolute floor of 4e-3 (a few f16 ulps at 1.0). The errors themselves are in the CSV."""
    return r["max_abs_err"] <= max(0.1 * r["ref_max_abs"], 4e-3)


def main(run_dir, out_csv):
    run = Path(run_dir)
    meta = json.loads((run / "meta.json").read_text())
    rows = []
    probes = {}  # (shape, seq_lens) -> leanattn's probe of every round
    with open(run / "shapes.tsv") as f:
        for label, qh, kvh, d, lens, lean_csv in csv.reader(f, delimiter="\t"):
            key = (label, lens.replace(",", ";"))
            if not lean_csv or not Path(lean_csv).exists():
                continue
            with open(lean_csv) as lf:
                for r in csv.DictReader(lf):
                    probes.setdefault(key, []).append(float(r["probe_gbps"]))
                    suffix = "" if r["dtype"] == "f16" else "-" + r["dtype"]
                    rows.append({
                        "impl": "leanattn-" + r["strategy"] + suffix, "shape": label,
                        "q_heads": qh, "kv_heads": kvh, "head_dim": d,
                        "head_dim_v": int(r.get("head_dim_v") or d),
                        "v_in_k": int(r.get("shared_kv") or 0), "dtype": r["dtype"],
                        "seq_lens": key[1],
                        "median_us": float(r["median_us"]), "best_us": float(r["min_us"]),
                        "kv_bytes": int(r["kv_bytes"]), "max_abs_err": float(r["max_abs_err"]),
                        "ref_max_abs": "", "ok": int(r["ok"]),
                        "version": f"leanattn {r['commit']}",
                        "config": f"{r['strategy']} simd {r['simd']} workers {r['workers']}"
                                  + (f" order {r['order']}" if r.get("order") else "")
                                  + (f" splits {r['splits']}" if r["strategy"] == "split" else ""),
                    })
    peers_file = run / "peers.jsonl"
    for line in peers_file.read_text().splitlines() if peers_file.exists() else []:
        if not line.strip().startswith("{"):
            continue
        r = json.loads(line)
        rows.append({
            "impl": r["impl"], "shape": r["label"], "q_heads": r["q_heads"],
            "kv_heads": r["kv_heads"], "head_dim": r["head_dim"],
            "head_dim_v": r.get("head_dim_v", r["head_dim"]), "v_in_k": int(r.get("v_in_k", False)),
            "dtype": r["dtype"],
            "seq_lens": r["seq_lens"], "median_us": r["median_us"], "best_us": r["best_us"],
            "kv_bytes": r["kv_bytes"], "max_abs_err": r["max_abs_err"],
            "ref_max_abs": r["ref_max_abs"], "ok": int(peer_ok(r)), "version": r["version"],
            "config": r["config"],
        })
    rows = merge_rounds(rows)
    add_torch_best(rows)
    for r in rows:
        probe = statistics.median(probes.get((r["shape"], r["seq_lens"]), [0.0]))
        gbps = r["kv_bytes"] / (r["median_us"] * 1e-6) / 1e9
        r.update({"date": meta["date"], "commit": meta["commit"], "cpu": meta["cpu"],
                  "threads": meta["threads"], "gbps": f"{gbps:.3f}",
                  "total_tokens": sum(int(x) for x in r["seq_lens"].split(";")),
                  "probe_gbps": f"{probe:.3f}" if probe else "",
                  "probe_fraction": f"{gbps / probe:.4f}" if probe else "",
                  "max_abs_err": f"{float(r['max_abs_err']):.3e}",
                  "ref_max_abs": f"{float(r['ref_max_abs']):.3e}" if r["ref_max_abs"] != "" else ""})
    if not rows:
        print("combine.py: no results in " + run_dir, file=sys.stderr)
        return 1
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    Path(out_csv).with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    failed = [f"{r['impl']} {r['shape']} {r['seq_lens']}" for r in rows if not r["ok"]]
    print(f"combine.py: {len(rows)} rows -> {out_csv}" +
          (f"; FAILED the reference check: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: combine.py RUN_DIR OUT_CSV")
    sys.exit(main(sys.argv[1], sys.argv[2]))
