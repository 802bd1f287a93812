"""plot_results.py: the figures of docs/figures from benchmark results and plans (matplotlib).

  bandwidth CSV... [--out PNG] [--metric gbps|time]
      Effective bandwidth (KV bytes / median time) or time against context length, one panel per
      shape (head configuration), one line per leanattn strategy and per peer, with the
      read-bandwidth probe measured in the same run as the roofline. Shapes with a single
      context (a ragged batch) get a bar panel. Reads bench/peers/run_peers.sh CSVs
      (bench/results/cpu-peers-*.csv) and/or `leanattn bench --csv` files.
  plan [JSON...] [--out-dir DIR] [--leanattn BIN] [--example ARGS]
      One picture per plan: workers (y) against the lean tiles each one processes (x), coloured
      by (request, KV head), partial / finalise / direct segments marked. Reads
      `leanattn plan --format json` files; with none, runs BIN for the lean, split and head
      strategies on one example problem and writes plan-<strategy>.png on a common scale.

Run with build/peers-venv's Python (matplotlib is installed there by run_peers.sh); see
bench/README.md for the exact commands.
"""
import argparse
import csv
import json
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
                     "legend.fontsize": 10, "figure.dpi": 110})

# Implementation -> (label, colour, line style, line width); leanattn strategies in blues.
IMPLS = {
    "leanattn-lean": ("leanattn lean", "#0b4f9c", "-", 2.6),
    "leanattn-split": ("leanattn split", "#4f8fd6", "--", 1.6),
    "leanattn-head": ("leanattn head", "#8fbbe8", ":", 1.8),
    "leanattn-lean-head-major": ("leanattn lean, head-major", "#3a3aa8", "-.", 1.6),
    "leanattn-lean-invariant": ("leanattn lean, batch-invariant", "#5b9aa8", "-.", 1.6),
    "ggml": ("ggml flash_attn_ext", "#e07b00", "-", 1.8),
    "torch-sdpa": ("PyTorch SDPA", "#c2185b", "-", 1.8),
    "torch-sdpa-best": ("PyTorch SDPA, fastest of f32/f16 x enable_gqa/expanded", "#c2185b", "-", 1.8),
    "onednn": ("oneDNN (unfused)", "#2e7d32", "-", 1.8),
}


# ---- results ------------------------------------------------------------------------------------

def read_rows(paths):
    """Rows of peers CSVs and leanattn bench CSVs, in one form."""
    rows = []
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                if "impl" in r:  # run_peers.sh CSV
                    lens = [int(x) for x in r["seq_lens"].split(";")]
                    impl, shape, threads = r["impl"], r["shape"], r["threads"]
                    shown = ",".join(fmt_tokens(x) for x in lens[:8]) + ("..." if len(lens) > 8 else "")
                    batch_text = f"batch of {len(lens)}: {shown} tokens"
                else:  # leanattn bench CSV
                    batch, total, longest = int(r["batch"]), int(r["total_tokens"]), int(r["max_seq_len"])
                    # This CSV has no per-request lengths: a ragged batch is (longest, rest).
                    lens = [longest] * batch if total == batch * longest else [longest, total - longest]
                    impl, shape, threads = "leanattn-" + r["strategy"], r["case"], r["workers"]
                    batch_text = (f"batch of {batch}: {fmt_tokens(total)} tokens in all, "
                                  f"longest {fmt_tokens(longest)}")
                rows.append({
                    "impl": impl, "shape": shape, "q_heads": int(r["q_heads"]),
                    "kv_heads": int(r["kv_heads"]), "head_dim": int(r["head_dim"]),
                    "dtype": r["dtype"], "lens": lens, "batch_text": batch_text, "median_us": float(r["median_us"]),
                    "gbps": float(r["gbps"]),
                    "probe_gbps": float(r["probe_gbps"]) if r.get("probe_gbps") else None,
                    "cpu": r["cpu"], "threads": threads, "date": r["date"][:10], "commit": r["commit"],
                })
    if not rows:
        sys.exit("plot_results.py: no result rows in " + ", ".join(map(str, paths)))
    return rows


def fmt_tokens(n):
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def plot_bandwidth(args):
    rows = shown(read_rows(args.csv), args.all_torch)
    panels = defaultdict(list)
    for r in rows:
        batch = tuple(r["lens"]) if len(set(r["lens"])) > 1 else len(r["lens"])  # ragged: own panel
        panels[(r["shape"], r["q_heads"], r["kv_heads"], r["head_dim"], batch)].append(r)
    keys = list(panels)
    cols = min(len(keys), args.columns)
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.6 * cols, 4.4 * nrows), squeeze=False)
    time_metric = args.metric == "time"
    for ax, key in zip(axes.flat, keys):
        shape, qh, kvh, d, _ = key
        prs = panels[key]
        contexts = sorted({max(r["lens"]) for r in prs if len(set(r["lens"])) == 1})
        ragged = any(len(set(r["lens"])) > 1 for r in prs)
        title = f"{shape}: {qh}/{kvh} heads, d {d}"
        if ragged or len(contexts) < 2:
            missing = sorted({r["impl"] for r in rows} - {r["impl"] for r in prs})
            bar_panel(ax, prs, title, time_metric, missing)
            continue
        for impl in [i for i in IMPLS if any(r["impl"] == i for r in prs)] + \
                sorted({r["impl"] for r in prs} - set(IMPLS)):
            pts = sorted((max(r["lens"]), r) for r in prs if r["impl"] == impl)
            label, colour, style, width = IMPLS.get(impl, (impl, "grey", "-", 1.5))
            label = with_dtype(label, impl, pts[0][1]["dtype"])
            ys = [r["median_us"] / 1e3 if time_metric else r["gbps"] for _, r in pts]
            ax.plot([x for x, _ in pts], ys, style, color=colour, lw=width, marker="o", ms=4,
                    label=label)
        if not time_metric:
            probe = sorted({(max(r["lens"]), r["probe_gbps"]) for r in prs if r["probe_gbps"]})
            if probe:
                ax.plot([x for x, _ in probe], [y for _, y in probe], "k--", lw=1.3,
                        label="read-bandwidth probe (roofline)")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("effective bandwidth (GB/s)\nK+V bytes / median time")
        else:
            ax.set_yscale("log")
            ax.set_ylabel("median time per decode step (ms)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(contexts, [fmt_tokens(c) for c in contexts])
        ax.set_xlabel(f"context length (tokens), batch {len(prs[0]['lens'])}")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    handles, labels = {}, []
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center",
               ncol=min(4, len(handles)), frameon=False, bbox_to_anchor=(0.5, 0.0))
    r0 = rows[0]
    smoke = any(str(p).endswith("-smoke.csv") for p in args.csv)
    fig.suptitle(f"Single-token decode attention on the CPU: {r0['cpu']}, {r0['threads']} threads "
                 f"({r0['date']}, commit {r0['commit']})"
                 + ("\nSMOKE RUN: small contexts, few repeats, busy machine - not a measurement"
                    if smoke else ""), fontsize=13, color="black")
    legend_rows = (len(handles) + 3) // 4
    fig.tight_layout(rect=(0, 0.045 * legend_rows / nrows + 0.02, 1, 0.95 if smoke else 0.97))
    save(fig, args.out)


def with_dtype(label, impl, dtype):
    """Legend label, with the KV dtype when it is not the f16 that leanattn uses (not for
    torch-sdpa-best, whose fastest variant changes dtype from point to point)."""
    return label if dtype == "f16" or impl == "torch-sdpa-best" else f"{label}, {dtype} KV"


def shown(rows, all_torch):
    """The rows to draw: PyTorch's variants only as their fastest (torch-sdpa-best), unless
    all_torch (the CSV keeps every variant)."""
    return [r for r in rows if all_torch or not r["impl"].startswith("torch-sdpa-")
            or r["impl"] == "torch-sdpa-best"]


def bar_panel(ax, prs, title, time_metric, missing):
    """One bar per implementation for a shape measured at a single context (e.g. ragged);
    `missing`: implementations of the figure that did not run this shape."""
    order = [i for i in IMPLS if any(r["impl"] == i for r in prs)] + \
        sorted({r["impl"] for r in prs} - set(IMPLS))
    vals, colours, labels = [], [], []
    for impl in order:
        r = next(r for r in prs if r["impl"] == impl)
        label, colour, _, _ = IMPLS.get(impl, (impl, "grey", "-", 1))
        vals.append(r["median_us"] / 1e3 if time_metric else r["gbps"])
        colours.append(colour)
        if impl == "torch-sdpa-best":
            labels.append(f"PyTorch SDPA\nfastest: {r['dtype']}")
        else:
            labels.append(with_dtype(label, impl, r["dtype"]).replace(" ", "\n", 1))
    bars = ax.bar(range(len(vals)), vals, color=colours)
    ax.bar_label(bars, fmt="%.3g", fontsize=9, padding=2)
    ax.set_xticks(range(len(vals)), labels, fontsize=9)
    probe = [r["probe_gbps"] for r in prs if r["probe_gbps"]]
    if probe and not time_metric:
        ax.axhline(probe[0], color="k", ls="--", lw=1.3, label="read-bandwidth probe (roofline)")
    if missing:
        names = ", ".join(IMPLS.get(m, (m,))[0] for m in missing)
        ax.set_xlabel(f"not run (no ragged batches): {names}", fontsize=9, style="italic")
    ax.set_ylim(0, max(vals + ([] if time_metric else probe)) * 1.15)
    ax.set_ylabel("median time (ms)" if time_metric else "effective bandwidth (GB/s)")
    ax.set_title(f"{title}\n{prs[0]['batch_text']}", fontsize=11)
    ax.grid(True, axis="y", alpha=0.3)


# ---- plans --------------------------------------------------------------------------------------

KIND_STYLE = {  # kind -> (hatch, edge width, alpha)
    "direct": ("", 0.6, 1.0),
    "finalise": ("", 2.2, 1.0),
    "partial": ("///", 0.6, 0.55),
}


def plot_plan(plan, out, xmax=None):
    workers = plan["workers"]
    pairs = sorted({(s["request"], s["kv_head"]) for w in workers for s in w["segments"]})
    cmap = plt.get_cmap("tab20" if len(pairs) > 10 else "tab10")
    colour = {p: cmap(i % cmap.N) for i, p in enumerate(pairs)}
    n = len(workers)
    fig, ax = plt.subplots(figsize=(12, max(3.6, 1.4 + 0.5 * n, 0.3 * (len(pairs) + 4))))
    for w in workers:
        x = 0
        y = w["worker"]
        for s in w["segments"]:
            width = s["tile_end"] - s["tile_begin"]
            hatch, lw, alpha = KIND_STYLE.get(s["kind"], ("..", 0.6, 1.0))
            ax.barh(y, width, left=x, height=0.72, color=colour[(s["request"], s["kv_head"])],
                    alpha=alpha, hatch=hatch, edgecolor="black", linewidth=lw)
            if width >= 0.06 * (xmax or plan["total_tiles"] / max(1, n)):
                tag = {"partial": "part", "finalise": "final", "direct": "direct"}.get(s["kind"], s["kind"])
                ax.text(x + width / 2, y, f"r{s['request']}h{s['kv_head']}\n{tag}", ha="center",
                        va="center", fontsize=9)
            x += width
    longest = max(w["tiles"] for w in workers)
    ax.axvline(longest, color="black", ls="--", lw=1.2)
    right = longest > 0.6 * (xmax or longest)
    ax.text(longest, -0.6, f" longest worker: {longest} tiles ", ha="right" if right else "left",
            va="bottom", fontsize=9)
    for w in workers:
        if w["tiles"] == 0:
            ax.text(0.3, w["worker"], "idle", va="center", fontsize=9, style="italic", color="grey")
    ax.set_yticks(range(n), [f"worker {i}" for i in range(n)])
    ax.set_ylim(n - 0.5, -0.9)
    ax.set_xlim(0, xmax or max(w["tiles"] for w in workers) * 1.02)
    ax.set_xlabel(f"lean tiles processed by the worker, in order "
                  f"(1 tile = {plan['tile_tokens']} tokens of one KV head)")
    lens = plan["seq_lens"]
    shown = ", ".join(map(str, lens[:8])) + (", ..." if len(lens) > 8 else "")
    split = f", {plan['splits']} splits per pair" if plan["strategy"] == "split" else ""
    order = f", {plan['order']} order" if plan["strategy"] == "lean" else ""
    ax.set_title(f"{plan['strategy']} plan{order}{split}: {len(lens)} requests ({shown} tokens) "
                 f"x {plan['kv_heads']} KV heads (group {plan['group_size']}), {n} workers")
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Patch(facecolor=colour[p], edgecolor="black", label=f"request {p[0]}, KV head {p[1]}")
               for p in pairs]
    handles += [Patch(facecolor="#cccccc", edgecolor="black", hatch="///", alpha=0.7,
                      label="partial: state to a slot"),
                Patch(facecolor="#999999", edgecolor="black", lw=2.2,
                      label="finalise: own part + merge of the slots"),
                Patch(facecolor="#999999", edgecolor="black", lw=0.6,
                      label="direct: whole pair, writes the output")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              fontsize=9)
    fig.tight_layout()
    save(fig, out)


def plot_plans(args):
    plans = []
    if args.json:
        for path in args.json:
            plans.append((json.loads(Path(path).read_text()), Path(path).stem))
    else:
        for strategy in ("lean", "split", "head"):
            cmd = [args.leanattn, "plan", "--format", "json", "--strategy", strategy,
                   *shlex.split(args.example)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"plot_results.py: {' '.join(cmd)} failed:\n{res.stderr}")
            plans.append((json.loads(res.stdout), f"plan-{strategy}"))
    xmax = max(w["tiles"] for p, _ in plans for w in p["workers"]) * 1.02
    for plan, stem in plans:
        plot_plan(plan, Path(args.out_dir) / f"{stem}.png", xmax)


def save(fig, out):
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    print(f"plot_results.py: wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bandwidth", help="GB/s or time against context length")
    b.add_argument("csv", nargs="+", help="run_peers.sh CSVs and/or leanattn bench --csv files")
    b.add_argument("--out", default="docs/figures/cpu-bandwidth.png")
    b.add_argument("--metric", choices=["gbps", "time"], default="gbps")
    b.add_argument("--columns", type=int, default=2, help="panels per row")
    b.add_argument("--all-torch", action="store_true",
                   help="draw every PyTorch variant, not only the fastest (torch-sdpa-best)")
    pl = sub.add_parser("plan", help="pictures of plans")
    pl.add_argument("json", nargs="*", help="leanattn plan --format json outputs")
    pl.add_argument("--out-dir", default="docs/figures")
    pl.add_argument("--leanattn", default="build/release/apps/leanattn/leanattn")
    pl.add_argument("--example", default="--seq-lens 6000,1500,400 --q-heads 8 --kv-heads 2 "
                                         "--workers 8 --tile 128",
                    help="problem flags for leanattn plan when no JSON is given")
    a = p.parse_args()
    plot_bandwidth(a) if a.cmd == "bandwidth" else plot_plans(a)


if __name__ == "__main__":
    main()
