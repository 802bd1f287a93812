#!/usr/bin/env python3
"""Time to first token of a long prompt arriving while three llama-server slots decode at depth.

llama-server with 4 slots (-np 4), -t --threads: three requests whose prompts are --depth tokens
(different texts of llama.cpp's own docs, `cache_prompt: false`) stream tokens until the
measurement ends; once all three are decoding (each has streamed its first token) their rate is
taken over --baseline-seconds, then a 4th request with a --prompt-tokens prompt (another text)
and n_predict --predict is sent. Measured per run:
  - its time to first token, client-side (send to the first streamed token) and the server's own
    `timings.prompt_ms` (its prompt processing, from its final response);
  - the three decode slots' tokens/s meanwhile: the tokens they streamed between the 4th
    request's send and its first token, over that time, summed over the slots (and the slowest
    slot's), beside their rate over the baseline window just before (the 4th not yet sent).
The decode slots are then cancelled (their connections closed). Six configurations, alternated
--runs times: stock -fa on, stock -fa off, leanattn (-fa on, GGML_BACKEND_PATH=--backend), each
with -kvu (one unified KV cache, every slot in one stream) and -no-kvu (a stream per slot).
Every server gets -c 4 x the per-slot context (max(depth + --decode-tokens, prompt + predict) +
64, in 256s) and `--override-kv llama.context_length=int:<per-slot context>`: the server caps a
slot at the model's trained context (SmolLM2: 8192 tokens), which an 8192-token prompt plus its
tokens would overrun; the key only sets that cap (no YaRN/rope scaling in these models).
LEANATTN_GGML_STATS=1: the backend's node count and time, read from the server's log at exit.
-b/-ub: llama.cpp's defaults (2048/512) unless --batch/--ubatch are given; the results say which.
Prints the medians and writes
bench/results/llama-cpp-server-ttft-<model>-<cpu>-<cores>c-<date>[-<tag>].txt.
Run it alone on the machine (e.g. `flock /tmp/leanattn-bench.lock chrt -f 10 ...`).
  bench/llama_cpp_server_ttft.py [--model smollm2] [--depth 4096] [--prompt-tokens 8192]
      [--predict 8] [--decode-tokens 2048] [--baseline-seconds 5] [--runs 2] [--threads 2]
      [--batch N] [--ubatch N] [--configs stock-fa-on-kvu,...] [--backend PATH] [--tag TAG]
"""

import argparse
import datetime
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from llama_server_io import ROOT, build_backend, cpu_name, post, sh

CONFIGS = ("stock-fa-on-kvu", "stock-fa-off-kvu", "leanattn-kvu",
           "stock-fa-on-no-kvu", "stock-fa-off-no-kvu", "leanattn-no-kvu")


class Stream(threading.Thread):
    """One streaming /completion request: (client time, tokens predicted so far) per token chunk,
    the time the response's headers came (the server has started its prompt), the final
    response's timings."""

    def __init__(self, port: int, body: dict):
        super().__init__(daemon=True)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        self.body = dict(body, stream=True)
        self.sent = self.headers = None
        self.tokens: list[tuple[float, int]] = []
        self.final: dict | None = None
        self.ended: float | None = None  # the stream's end, or its error
        self.error: str | None = None
        self.closing = False

    def run(self) -> None:
        try:
            self.sent = time.monotonic()
            self.conn.request("POST", "/completion", json.dumps(self.body),
                              {"Content-Type": "application/json"})
            resp = self.conn.getresponse()
            self.headers = time.monotonic()
            if resp.status != 200:
                self.error = f"HTTP {resp.status}: {resp.read()[:500]!r}"
                return
            while True:
                line = resp.readline()
                if not line:
                    break
                now = time.monotonic()
                if not line.startswith(b"data: "):
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    self.error = str(chunk["error"])
                    break
                n = chunk.get("tokens_predicted", 0)
                if chunk.get("tokens") and n > 0:
                    self.tokens.append((now, n))
                if chunk.get("stop"):
                    self.final = chunk
                    break
        except (OSError, http.client.HTTPException, ValueError) as e:
            if not self.closing:
                self.error = f"{type(e).__name__}: {e}"
        finally:
            self.ended = time.monotonic()

    def count_at(self, t: float) -> int:
        """Tokens streamed by client time t."""
        n = 0
        for when, k in self.tokens:
            if when > t:
                break
            n = k
        return n

    def close(self) -> None:
        self.closing = True
        try:
            if self.conn.sock is not None:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Server:
    def __init__(self, args, llama: str, config: str, ctx: int, slot_ctx: int):
        lean = config.startswith("leanattn")
        env = dict(os.environ, LEANATTN_GGML="1" if lean else "0", LEANATTN_GGML_STATS="1")
        if lean:
            env["GGML_BACKEND_PATH"] = args.backend
        fa = "off" if config.startswith("stock-fa-off") else "on"
        self.cmd = [f"{llama}/build/bin/llama-server", "-m", args.model_path, "-fa", fa,
                    "-c", str(ctx), "-np", "4", "-no-kvu" if config.endswith("no-kvu") else "-kvu",
                    "-t", str(args.threads),
                    "--override-kv", f"llama.context_length=int:{slot_ctx}",
                    "--port", str(args.port), "--host", "127.0.0.1"]
        if args.batch:
            self.cmd += ["-b", str(args.batch)]
        if args.ubatch:
            self.cmd += ["-ub", str(args.ubatch)]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="ttft-server-", suffix=".log",
                                               delete=False)
        chrt = ["chrt"] + args.server_chrt.split() if args.server_chrt else []
        self.proc = subprocess.Popen(chrt + self.cmd, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{args.port}"
        deadline = time.time() + 180
        while time.time() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        sys.exit(f"llama_cpp_server_ttft: llama-server did not start ({' '.join(self.cmd)}):\n"
                 f"{self.output()[-3000:]}")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.output()

    def output(self) -> str:
        self.log.flush()
        return pathlib.Path(self.log.name).read_text(errors="replace")


def sched_name(pid: int) -> str:
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}
    policy = os.sched_getscheduler(pid)
    return f"{names.get(policy, policy)} {os.sched_getparam(pid).sched_priority}"


def prompts(tokens: list[int], lengths: list[int]) -> list[list[int]]:
    """Different texts (offsets 997 x i apart, cycled where the text runs out), one per length."""
    out = []
    for i, n in enumerate(lengths):
        start = (i * 997 + sum(lengths[:i])) % len(tokens)
        out.append([tokens[(start + j) % len(tokens)] for j in range(n)])
    return out


def one_run(args, llama: str, config: str, text: str, ctx: int, slot_ctx: int) -> dict:
    server = Server(args, llama, config, ctx, slot_ctx)
    decoders: list[Stream] = []
    fourth = None
    try:
        tokens = post(server.url + "/tokenize", {"content": text})["tokens"]
        ps = prompts(tokens, [args.depth] * 3 + [args.prompt_tokens])
        base = {"temperature": 0.0, "cache_prompt": False, "ignore_eos": True}
        for p in ps[:3]:
            # Room left in the slot: they decode until cancelled.
            decoders.append(Stream(args.port, dict(base, prompt=p,
                                                   n_predict=slot_ctx - args.depth - 16)))
        for d in decoders:
            d.start()
        deadline = time.monotonic() + 3600
        while any(not d.tokens for d in decoders):
            bad = [d.error for d in decoders if d.error or not d.is_alive()]
            if bad or time.monotonic() > deadline:
                raise RuntimeError(f"{config}: a decode slot failed before decoding: {bad}")
            time.sleep(0.01)
        t_all = time.monotonic()
        time.sleep(args.baseline_seconds)
        fourth = Stream(args.port, dict(base, prompt=ps[3], n_predict=args.predict))
        fourth.start()
        fourth.join(timeout=3600)
        if fourth.error or not fourth.tokens or fourth.final is None:
            raise RuntimeError(f"{config}: 4th request: {fourth.error or 'no tokens'}")
        t_send, t_first = fourth.sent, fourth.tokens[0][0]
        stopped = [i for i, d in enumerate(decoders)
                   if d.ended is not None and d.ended <= t_first]
        if stopped:
            raise RuntimeError(f"{config}: decode slots {stopped} stopped before the 4th request's "
                               f"first token ({[d.error for d in decoders]}); raise --decode-tokens")
        during = [d.count_at(t_first) - d.count_at(t_send) for d in decoders]
        before = [d.count_at(t_send) - d.count_at(t_all) for d in decoders]
    except BaseException:
        print(f"llama_cpp_server_ttft: {config} failed; server log kept: {server.log.name}",
              file=sys.stderr)
        raise
    finally:
        for d in decoders:
            d.close()
        for d in decoders:
            d.join(timeout=30)
        log = server.stop()
    os.unlink(server.log.name)
    ttft = t_first - t_send
    timings = fourth.final.get("timings", {})
    stats = re.findall(r"leanattn: computed (\d+) FLASH_ATTN_EXT nodes in ([\d.]+) ms", log)
    unified = re.search(r"kv_unified = '(\w+)'", log)
    declines = sorted(set(re.findall(r"leanattn: (declines FLASH_ATTN_EXT[^\n]*)", log)))
    return {
        "ttft_s": ttft,
        "queued_s": fourth.headers - t_send,  # until the server started the 4th prompt
        "prompt_ms": timings.get("prompt_ms", float("nan")),
        "prompt_n": timings.get("prompt_n", 0),
        "during_tps": sum(during) / ttft,
        "during_min_tps": min(during) / ttft,
        "during_tokens": during,
        "before_tps": sum(before) / (t_send - t_all),
        "nodes": sum(int(n) for n, _ in stats) if stats else None,
        "node_ms": sum(float(ms) for _, ms in stats) if stats else None,
        "kv_unified": unified.group(1) if unified else "?",
        "declines": declines,
        "cmd": server.cmd,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--depth", type=int, default=4096, help="decode slots' prompt tokens")
    ap.add_argument("--prompt-tokens", type=int, default=8192, help="the 4th request's prompt")
    ap.add_argument("--predict", type=int, default=8, help="the 4th request's n_predict")
    ap.add_argument("--decode-tokens", type=int, default=2048,
                    help="at least this much room to decode in each decode slot")
    ap.add_argument("--baseline-seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, help="-b (llama.cpp's default 2048)")
    ap.add_argument("--ubatch", type=int, help="-ub (llama.cpp's default 512)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    type=lambda s: [c for c in s.split(",") if c])
    ap.add_argument("--backend", help="libggml-leanattn.so (default: built in build/llama)")
    ap.add_argument("--server-chrt", default="auto",
                    help="chrt arguments for the server ('' = inherit the client's policy); "
                         "auto: under a real-time policy of priority p, '-r p' for the server "
                         "and p + 1 for the client")
    ap.add_argument("--tag", default="", help="suffix of the result file's name")
    ap.add_argument("--port", type=int, default=18951)
    args = ap.parse_args()
    for c in args.configs:
        if c not in CONFIGS:
            sys.exit(f"llama_cpp_server_ttft: unknown config {c} ({', '.join(CONFIGS)})")
    sched = "client and server: " + sched_name(0)
    if args.server_chrt == "auto":
        args.server_chrt = ""
        policy, prio = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
        if policy in (os.SCHED_FIFO, os.SCHED_RR):
            # Under SCHED_FIFO every server thread inherits one priority, and llama.cpp's compute
            # threads, which spin and never yield, hold both cores while they decode: the
            # server's HTTP thread then waited 1-4 s to take the 4th request (and the client to
            # send it and read the streams), the slots decoding meanwhile. Round-robin gives
            # the HTTP thread a core within a time slice; the client preempts the server.
            args.server_chrt = f"-r {prio}"
            os.sched_setscheduler(0, policy, os.sched_param(min(prio + 1, 99)))
            sched = f"server: chrt -r {prio}, client: {sched_name(0)}"
    elif args.server_chrt:
        sched = f"server: chrt {args.server_chrt}, client: {sched_name(0)}"
    llama = sh("scripts/llama-cpp.sh")
    args.model_path = sh("scripts/gguf-model.sh", args.model)
    if args.backend is None and any(c.startswith("leanattn") for c in args.configs):
        args.backend = build_backend(llama)
    if args.backend is not None:
        args.backend = str(pathlib.Path(args.backend).resolve())
    docs = sorted(pathlib.Path(llama, "src/docs").rglob("*.md"))
    text = "\n\n".join(p.read_text(errors="replace") for p in docs)
    slot_ctx = max(args.depth + args.decode_tokens, args.prompt_tokens + args.predict) + 64
    slot_ctx = (slot_ctx + 255) // 256 * 256
    ctx = 4 * slot_ctx

    started = time.monotonic()
    res: dict[str, list[dict]] = {}
    for run in range(args.runs):
        for config in args.configs:
            r = one_run(args, llama, config, text, ctx, slot_ctx)
            res.setdefault(config, []).append(r)
            nodes = f", {r['nodes']} nodes in {r['node_ms']:.0f} ms" if r["nodes"] is not None \
                else ""
            print(f"run {run + 1} {config} (kv_unified {r['kv_unified']}): TTFT "
                  f"{r['ttft_s']:.2f} s (server prompt_ms {r['prompt_ms']:.0f} over "
                  f"{r['prompt_n']} tokens, started after {r['queued_s']:.2f} s); decode slots "
                  f"{r['during_tps']:.2f} tokens/s during it (per slot {r['during_tokens']} "
                  f"tokens), {r['before_tps']:.2f} before{nodes}", flush=True)
            for d in r["declines"]:
                print(f"  {d}", flush=True)
    elapsed = time.monotonic() - started

    med = lambda c, k: statistics.median(r[k] for r in res[c])
    cpu = cpu_name()
    batch = f"-b {args.batch or '2048 (default)'} -ub {args.ubatch or '512 (default)'}"
    lines = [
        f"llama-server time to first token, {args.model}: a {args.prompt_tokens}-token prompt "
        f"(n_predict {args.predict}) arriving while 3 slots decode at depth {args.depth}; "
        f"-np 4 -c {ctx} (slot context {slot_ctx}, --override-kv "
        f"llama.context_length=int:{slot_ctx}) {batch} -t {args.threads}, "
        f"{args.runs} alternated runs, baseline window {args.baseline_seconds:g} s",
        f"machine: {cpu}, {os.cpu_count()} cores; date: "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%MZ}, commit "
        f"{sh('git', 'rev-parse', '--short', 'HEAD')}, llama.cpp: {llama}",
        f"backend: {args.backend or '-'}; flags: {' '.join(sys.argv[1:]) or '(defaults)'}; "
        f"{elapsed / 60:.1f} min; scheduling: {sched}",
        "TTFT: client-side, send to first streamed token (server prompt_ms); decode: the 3 "
        "slots' streamed tokens/s between the send and that token, summed (slowest slot), and "
        "summed over the baseline window before the send; medians:",
    ]
    for c in args.configs:
        nodes = [r["nodes"] for r in res[c] if r["nodes"] is not None]
        lines.append(
            f"  {c:20s} TTFT {med(c, 'ttft_s'):7.2f} s (prompt_ms {med(c, 'prompt_ms'):9.0f}); "
            f"decode during {med(c, 'during_tps'):6.2f} tokens/s (slowest slot "
            f"{med(c, 'during_min_tps'):5.2f}), before {med(c, 'before_tps'):6.2f}"
            + (f"; backend nodes {statistics.median(nodes):.0f}" if nodes else ""))
    lines.append("runs (TTFT s / prompt_ms / decode tokens during, per slot / tokens/s before"
                 " [/ backend nodes in ms, the server's whole life]):")
    for c in args.configs:
        lines.append(f"  {c}: " + "; ".join(
            f"{r['ttft_s']:.2f} / {r['prompt_ms']:.0f} / {r['during_tokens']} / "
            f"{r['before_tps']:.2f}"
            + (f" / {r['nodes']} in {r['node_ms']:.0f}" if r["nodes"] is not None else "")
            for r in res[c]))
    for c in args.configs:
        lines.append(f"  {c} server: {' '.join(res[c][0]['cmd'][1:])}"
                     .replace(str(args.model_path), "<model>"))
        for d in sorted({d for r in res[c] for d in r["declines"]}):
            lines.append(f"    {d}")
    cores = os.cpu_count()
    slug = cpu.replace("(R)", "").replace(" Processor", "").replace(" ", "-").lower()
    tag = f"-{args.tag}" if args.tag else ""
    out = ROOT / (f"bench/results/llama-cpp-server-ttft-{args.model}-{slug}-{cores}c-"
                  f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}{tag}.txt")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
