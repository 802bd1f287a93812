#!/usr/bin/env python3
"""Parallel sequences of different lengths in llama-server, with and without leanattn's backend.

llama-server with --parallel N slots in one unified KV cache (its default layout): N requests
whose prompts have different lengths (--lengths, tokens of llama.cpp's own docs) are sent at
once, each decoding --tokens tokens; while they decode together every step's attention node has
one query row per sequence, each seeing its own cells of the shared cache. Three configurations,
alternated --runs times: stock -fa on, leanattn (-fa on, GGML_BACKEND_PATH), stock -fa off. The
decode rate is the server's own: tokens generated over the slots' generation time, summed over
the slots (each response's `timings`). Prints the medians and writes
bench/results/llama-cpp-parallel-<model>-<cpu>-<cores>c-<date>.txt.
  bench/llama_cpp_parallel.py [--model smollm2] [--lengths 512,1024,2048,4096] [--tokens 64]
                              [--runs 2] [--threads 2]
"""

import argparse
import concurrent.futures
import datetime
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

from llama_server_io import ROOT, build_backend, cpu_name, post, sh



def serve(args, llama: str, backend: str, model: str, config: str, ctx: int, port: int):
    env = dict(os.environ, LEANATTN_GGML="1" if config == "leanattn" else "0")
    if config == "leanattn":
        env["GGML_BACKEND_PATH"] = backend
    fa = "off" if config == "stock-fa-off" else "on"
    cmd = [f"{llama}/build/bin/llama-server", "-m", model, "-fa", fa, "-c", str(ctx), "-np",
           str(len(args.lengths)), "-t", str(args.threads), "--port", str(port), "--host",
           "127.0.0.1"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    sys.exit("llama_cpp_parallel: llama-server did not start")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--lengths", default="512,1024,2048,4096",
                    type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18941)
    args = ap.parse_args()
    llama = sh("scripts/llama-cpp.sh")
    model = sh("scripts/gguf-model.sh", args.model)
    backend = build_backend(llama)
    docs = sorted(pathlib.Path(llama, "src/docs").rglob("*.md"))
    text = "\n\n".join(p.read_text(errors="replace") for p in docs)
    ctx = len(args.lengths) * (max(args.lengths) + args.tokens + 64)

    rates: dict[str, list[float]] = {}
    for run in range(args.runs):
        for config in ("stock-fa-on", "leanattn", "stock-fa-off"):
            proc = serve(args, llama, backend, model, config, ctx, args.port)
            url = f"http://127.0.0.1:{args.port}"
            try:
                tokens = post(url + "/tokenize", {"content": text})["tokens"]
                # Different texts per slot (no shared prefix), each of its own length.
                prompts = [tokens[i * 997:i * 997 + n] for i, n in enumerate(args.lengths)]
                body = lambda p: {"prompt": p, "n_predict": args.tokens, "temperature": 0.0,
                                  "cache_prompt": False, "ignore_eos": True}
                with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                    outs = list(pool.map(lambda p: post(url + "/completion", body(p)), prompts))
            finally:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=60)
            # Slots decode together: the step rate is the sum of the slots' rates.
            rate = sum(o["timings"]["predicted_per_second"] for o in outs)
            rates.setdefault(config, []).append(rate)
            print(f"run {run + 1} {config}: {rate:.2f} tokens/s over {len(outs)} slots", flush=True)

    cpu = cpu_name()
    med = {c: statistics.median(v) for c, v in rates.items()}
    best = max(med["stock-fa-on"], med["stock-fa-off"])
    lines = [
        f"llama.cpp parallel decode, {args.model}, llama-server -np {len(args.lengths)} "
        f"(prompts {args.lengths} tokens, {args.tokens} decoded each) -t {args.threads}, "
        f"{args.runs} alternated runs",
        f"machine: {cpu}, {os.cpu_count()} cores; date: "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%MZ}, commit "
        f"{sh('git', 'rev-parse', '--short', 'HEAD')}, llama.cpp: {llama}",
        "tokens/s summed over the slots (the server's timings), medians:",
        f"  stock -fa on {med['stock-fa-on']:.2f}, leanattn {med['leanattn']:.2f}, "
        f"stock -fa off {med['stock-fa-off']:.2f}: {med['leanattn'] / med['stock-fa-on']:.2f}x "
        f"fa-on, {med['leanattn'] / best:.2f}x the best stock",
        "runs: " + "; ".join(f"{c} {', '.join(f'{r:.2f}' for r in v)}" for c, v in rates.items()),
    ]
    cores = os.cpu_count()
    slug = cpu.replace("(R)", "").replace(" Processor", "").replace(" ", "-").lower()
    out = ROOT / (f"bench/results/llama-cpp-parallel-{args.model}-{slug}-{cores}c-"
                  f"{datetime.date.today():%Y-%m-%d}.txt")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
