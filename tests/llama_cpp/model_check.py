#!/usr/bin/env python3
"""A real GGUF model in stock llama.cpp with and without leanattn's backend (the llama stage).

1. Greedy decoding: llama-server (-fa on, one slot) gets a prompt of --prompt-tokens tokens (text
   of llama.cpp's own docs, tokenized by the model) and decodes --tokens tokens with temperature 0
   and the top-2 log-probabilities of every step, once with the backend (GGML_BACKEND_PATH) and
   once without (LEANATTN_GGML=0), and once stock with -fa off. The backend's tokens must equal
   stock -fa on's; where they first differ (after that the texts differ), the step must be a
   near-tie: the backend's top-2 log-probability gap there smaller than the largest difference
   between stock -fa on's and -fa off's log-probabilities of the same tokens before it (how far
   two stock kernels already disagree), or stock -fa off choosing the backend's token there.
2. KL divergence: llama-perplexity --kl-divergence over --kl-tokens tokens against stock -fa off's
   logits, every run with micro-batches of --ubatch tokens (llama.cpp's default 512: each chunk's
   prompt nodes go through the backend's many-rows path, causal, the mask read in place): the
   backend's mean KL divergence must be no larger than stock -fa on's plus the larger of their
   standard errors (the two are printed; the note says which is lower).
The server's shutdown prints the backend's node count (LEANATTN_GGML_STATS=1): it must be > 0.
--cache-type q8_0 (or q4_0) gives the -fa on runs, stock and the backend's, that K/V cache type
(ggml's blocks, quantized by llama.cpp); stock -fa off stays the f16 reference.
Prints a table; exits 1 on a failed check.
"""

import argparse
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def corpus(llama_src: pathlib.Path) -> str:
    """llama.cpp's documentation, in a fixed order: English prose, code and tables."""
    files = sorted((llama_src / "docs").rglob("*.md")) + [llama_src / "README.md"]
    return "\n\n".join(f.read_text(errors="replace") for f in files if f.is_file())


def cache_flags(args, fa: str) -> list[str]:
    """-ctk/-ctv for --cache-type: the flash-attention runs only (llama.cpp quantizes a V cache
    only with flash attention, so stock -fa off, the reference, keeps f16)."""
    return ["-ctk", args.cache_type, "-ctv", args.cache_type] if fa == "on" else []


class Server:
    def __init__(self, args, fa: str, lean: bool, port: int):
        env = dict(os.environ, LEANATTN_GGML="1" if lean else "0", LEANATTN_GGML_STATS="1")
        if lean:
            env["GGML_BACKEND_PATH"] = args.backend
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        cmd = [f"{args.bin}/llama-server", "-m", args.model, "-fa", fa, "-c",
               str(args.prompt_tokens + args.tokens + 64), "-np", "1", "-t", str(args.threads),
               "--port", str(port), "--host", "127.0.0.1"] + cache_flags(args, fa)
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        self.stop()
        sys.exit(f"model_check: llama-server did not start:\n{self.output()[-3000:]}")

    def post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=1800) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        """Stops the server (its shutdown prints the backend's node count) and keeps its log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        path = pathlib.Path(self.log.name)
        self.text = path.read_text(errors="replace")
        path.unlink()

    def output(self) -> str:
        return self.text


def decode(args, fa: str, lean: bool, prompt: list[int]) -> tuple[list[dict], int]:
    """Greedy steps [{id, logprob, top: [(id, logprob), ...]}] and the backend's node count."""
    server = Server(args, fa, lean, args.port)
    try:
        out = server.post("/completion", {"prompt": prompt, "n_predict": args.tokens,
                                          "temperature": 0.0, "n_probs": 2, "cache_prompt": False,
                                          "ignore_eos": True})
    finally:
        server.stop()
    log = server.output()
    nodes = sum(int(n) for n in re.findall(r"leanattn: computed (\d+) FLASH_ATTN_EXT", log))
    steps = []
    for p in out["completion_probabilities"]:
        top = [(t["id"], t["logprob"]) for t in p["top_logprobs"]]
        steps.append({"id": p["id"], "logprob": p["logprob"], "top": top})
    return steps, nodes


def tokenize(args, text: str) -> list[int]:
    server = Server(args, "off", False, args.port)
    try:
        return server.post("/tokenize", {"content": text})["tokens"]
    finally:
        server.stop()


def kl_divergence(args, text_file: str, base: str, fa: str, lean: bool) -> tuple[float, float]:
    env = dict(os.environ, LEANATTN_GGML="1" if lean else "0")
    if lean:
        env["GGML_BACKEND_PATH"] = args.backend
    cmd = [f"{args.bin}/llama-perplexity", "-m", args.model, "-f", text_file, "-c",
           str(args.kl_ctx), "-b", str(args.kl_ctx), "-t", str(args.threads), "-fa", fa,
           "--kl-divergence-base", base] + cache_flags(args, fa)
    # The same micro-batches for the reference (stock -fa off) as for the runs compared with it:
    # ggml's matrix products take other paths for other batch sizes.
    cmd += ["-ub", str(args.ubatch)]
    if os.path.exists(base):
        cmd += ["--kl-divergence"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"model_check: {' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    if "--kl-divergence" not in cmd:
        return 0.0, 0.0
    m = re.search(r"Mean\s+KLD:\s+([-0-9.e]+)\s+±\s+([-0-9.e]+)", out.stdout + out.stderr)
    if m is None:
        sys.exit(f"model_check: no KL divergence in llama-perplexity's output:\n{out.stdout[-3000:]}")
    return float(m.group(1)), float(m.group(2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="llama.cpp's build/bin")
    ap.add_argument("--src", required=True, help="llama.cpp's source tree (its docs are the text)")
    ap.add_argument("--backend", required=True, help="libggml-leanattn.so")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--kl-tokens", type=int, default=4096)
    ap.add_argument("--kl-ctx", type=int, default=2048)
    ap.add_argument("--ubatch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18931)
    ap.add_argument("--cache-type", default="f16",
                    help="K and V cache type of the -fa on runs (q8_0, q4_0: ggml's blocks)")
    args = ap.parse_args()
    ok = True

    text = corpus(pathlib.Path(args.src))
    tokens = tokenize(args, text)
    need = max(args.prompt_tokens, args.kl_tokens)
    if len(tokens) < need:
        sys.exit(f"model_check: the text has {len(tokens)} tokens, {need} needed")
    prompt = tokens[: args.prompt_tokens]
    on, on_nodes = decode(args, "on", False, prompt)
    lean, lean_nodes = decode(args, "on", True, prompt)
    off, _ = decode(args, "off", False, prompt)
    # How far the two stock kernels disagree on the same tokens (while their tokens agree).
    spread = 0.0
    for a, b in zip(on, off):
        if a["id"] != b["id"]:
            break
        spread = max(spread, abs(a["logprob"] - b["logprob"]))
    same = next((i for i, (a, b) in enumerate(zip(on, lean)) if a["id"] != b["id"]), len(on))
    print(f"greedy decoding after {len(prompt)} prompt tokens: {len(on)} tokens, "
          f"leanattn equals stock -fa on for the first {same}; stock -fa on vs -fa off "
          f"log-probability spread {spread:.2e}; backend nodes {lean_nodes} (stock {on_nodes})")
    if lean_nodes == 0 or on_nodes != 0:
        print("model_check: FAIL: the backend did not compute the server's attention nodes")
        ok = False
    if same < len(on):
        # A near-tie: leanattn's own top-2 gap there is within how far the two stock kernels
        # disagree, or stock -fa off (exact softmax, f32 products) chose leanattn's token too.
        gap = lambda step: step["top"][0][1] - step["top"][1][1] if len(step["top"]) > 1 else 9.9
        near_tie = gap(lean[same]) < spread or off[same]["id"] == lean[same]["id"]
        print(f"  first difference at step {same}: stock -fa on {on[same]['id']} (top-2 gap "
              f"{gap(on[same]):.2e}), leanattn {lean[same]['id']} (gap {gap(lean[same]):.2e}), "
              f"stock -fa off {off[same]['id']} (gap {gap(off[same]):.2e}): "
              f"{'a near-tie' if near_tie else 'NOT a near-tie'}")
        ok = ok and near_tie

    with tempfile.TemporaryDirectory() as tmp:
        text_file = os.path.join(tmp, "text.txt")
        # Whole chunks of kl_ctx tokens covering at least kl_tokens (llama-perplexity's chunks).
        server = Server(args, "off", False, args.port)
        try:
            chunks = -(-args.kl_tokens // args.kl_ctx)
            body = server.post("/detokenize", {"tokens": tokens[: chunks * args.kl_ctx + 16]})
        finally:
            server.stop()
        pathlib.Path(text_file).write_text(body["content"])
        base = os.path.join(tmp, "base.kld")
        kl_divergence(args, text_file, base, "off", False)
        kl_on, se_on = kl_divergence(args, text_file, base, "on", False)
        kl_lean, se_lean = kl_divergence(args, text_file, base, "on", True)
    print(f"KL divergence against stock -fa off over {chunks} x {args.kl_ctx} tokens, "
          f"-ub {args.ubatch}: stock -fa on {kl_on:.3e} ± {se_on:.1e}, "
          f"leanattn {kl_lean:.3e} ± {se_lean:.1e}")
    if kl_lean > kl_on + max(se_on, se_lean):
        print("model_check: FAIL: leanattn's KL divergence exceeds stock -fa on's")
        ok = False
    print("model_check: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
