#!/usr/bin/env python3
"""leanattn's ggml backend in the llama-cpp-python package (the llama stage).

Run with the python of scripts/llama-cpp-python.sh's venv: the package as pip builds it from
PyPI's sdist (GGML_BACKEND_DL off, so nothing in it reads GGML_BACKEND_PATH). The way in is one
call before the first Llama: ggml_backend_load() from the package's own libggml
(docs/llama-cpp.md, "llama-cpp-python"). Four runs, each in a fresh process, of one model: a
prompt of --prompt-tokens tokens (llama.cpp's docs, as model_check.py takes them) evaluated in
batches of 512 (prefill: the backend declines it), then --tokens single-token steps fed the
text's next tokens (the same inputs for every run), keeping each step's logits:
  stock-fa-on   Llama(flash_attn=True)
  stock-fa-off  Llama(flash_attn=False): the reference
  leanattn      ggml_backend_load(libggml-leanattn.so), then Llama(flash_attn=True)
  path-only     GGML_BACKEND_PATH set, no ggml_backend_load: what the package does with it
Checks, each of which fails the run:
  - leanattn computed every attention node of every single-token step (layers x steps, counted by
    LEANATTN_GGML_STATS) and no others; path-only never loaded it (no "leanattn:" line at all);
  - leanattn is as close to stock -fa off as stock -fa on is: its mean KL divergence from stock
    -fa off's next-token distribution over the steps no larger than stock -fa on's plus the
    larger of their standard errors, and its largest logit difference within 2x stock -fa on's
    (at least 0.05; a wrong attention moves logits by whole units);
  - leanattn's next-token choice equals stock -fa off's or stock -fa on's at every step, or the
    step is a near-tie (its top-2 logit gap below stock -fa on's largest logit difference).
Prints a table; exits 1 on a failed check.
"""

import argparse
import ctypes
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from model_check import corpus  # noqa: E402  (llama.cpp's docs in a fixed order)

RUNS = {  # name: (flash attention, ggml_backend_load the backend, GGML_BACKEND_PATH set)
    "stock-fa-on": (True, False, False),
    "stock-fa-off": (False, False, False),
    "leanattn": (True, True, False),
    "path-only": (True, False, True),
}


def child(args) -> int:
    """One run in this process: writes the steps' logits [tokens, n_vocab] to args.out."""
    import numpy as np

    import llama_cpp

    fa, load, _ = RUNS[args.run]
    if load:
        # The libggml that the package's libllama loaded registers the backend; the next Llama's
        # context adds it as an ACCEL device, as llama.cpp's tools do. By its soname: the
        # package's lib folder holds copies, not links (libggml.so, .so.0, .so.0.25.3), and a
        # path would load a second ggml with a registry of its own, which llama never asks.
        libggml = ctypes.CDLL("libggml.so.0")
        libggml.ggml_backend_load.restype = ctypes.c_void_p
        libggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
        if not libggml.ggml_backend_load(args.backend.encode()):
            print(f"ggml_backend_load({args.backend}) returned NULL", file=sys.stderr)
            return 1
    text = pathlib.Path(args.text).read_text()
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=args.prompt_tokens + args.tokens + 16,
                          n_batch=512, n_threads=args.threads, flash_attn=fa, verbose=True)
    tokens = llm.tokenize(text.encode(), add_bos=True)[: args.prompt_tokens + args.tokens]
    if len(tokens) < args.prompt_tokens + args.tokens:
        print(f"the text has only {len(tokens)} tokens", file=sys.stderr)
        return 1
    llm.eval(tokens[: args.prompt_tokens])
    n_vocab = llm.n_vocab()
    steps = []
    for t in tokens[args.prompt_tokens:]:
        llm.eval([t])  # one query row: the backend's
        logits = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        steps.append(np.ctypeslib.as_array(logits, shape=(n_vocab,)).copy())
    np.save(args.out, np.stack(steps))
    layers = llama_cpp.llama_model_n_layer(llm.model)
    print(f"python_package_check: layers {layers}", file=sys.stderr)
    llm.close()  # frees the backend: its LEANATTN_GGML_STATS line
    return 0


def run(args, name: str, folder: str):
    """Runs `name` in a fresh process; returns (logits, its stderr)."""
    import numpy as np

    _, _, path = RUNS[name]
    env = dict(os.environ, LEANATTN_GGML="1", LEANATTN_GGML_STATS="1")
    env.pop("GGML_BACKEND_PATH", None)
    if path:
        env["GGML_BACKEND_PATH"] = args.backend
    out = os.path.join(folder, f"{name}.npy")
    cmd = [sys.executable, __file__, "--child", "--run", name, "--out", out, "--text", args.text,
           "--model", args.model, "--backend", args.backend, "--threads", str(args.threads),
           "--prompt-tokens", str(args.prompt_tokens), "--tokens", str(args.tokens)]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"python_package_check: the {name} run took over 900 s")
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"python_package_check: the {name} run failed ({p.returncode})")
    return np.load(out), p.stderr


def kl(ref, x):
    """Per step KL(softmax(ref) || softmax(x)), in float64."""
    import numpy as np

    def log_softmax(z):
        z = z.astype(np.float64)
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    lr, lx = log_softmax(ref), log_softmax(x)
    return (np.exp(lr) * (lr - lx)).sum(axis=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="llama.cpp's source tree (its docs are the text)")
    ap.add_argument("--backend", required=True, help="libggml-leanattn.so")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run", choices=RUNS, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--text", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.src:
        ap.error("--src is required")
    if args.tokens < 2:
        ap.error("--tokens: at least 2 (the KL check needs a standard error)")

    import numpy as np

    import llama_cpp

    where = pathlib.Path(llama_cpp.__file__).parent
    print(f"llama-cpp-python {llama_cpp.__version__} from {where}")
    with tempfile.TemporaryDirectory() as folder:
        args.text = os.path.join(folder, "text.txt")
        pathlib.Path(args.text).write_text(corpus(pathlib.Path(args.src)))
        logits, logs = {}, {}
        for name in RUNS:
            logits[name], logs[name] = run(args, name, folder)
    failed = []

    found = re.search(r"python_package_check: layers (\d+)", logs["leanattn"])
    stats = re.findall(r"leanattn: computed (\d+) FLASH_ATTN_EXT", logs["leanattn"])
    if found is None or not stats:
        sys.stderr.write(logs["leanattn"][-4000:])
        raise SystemExit("python_package_check: the leanattn run printed no layer count or no "
                         "LEANATTN_GGML_STATS line (was the backend freed?)")
    layers = int(found.group(1))
    nodes = sum(int(n) for n in stats)
    print(f"nodes: leanattn computed {nodes} FLASH_ATTN_EXT nodes ({layers} layers x "
          f"{args.tokens} single-token steps = {layers * args.tokens}); the prompt's batches of "
          "512 stay on ggml")
    said = sorted(set(re.findall(r"leanattn: (?:takes|declines)[^\n]*", logs["leanattn"])))
    declined = [line for line in said if "declines" in line]
    print(f"  {len(said) - len(declined)} lines 'leanattn: takes ...' (one per node name); "
          f"{len(declined)} declines:")
    for line in declined:
        print(f"  {line}")
    if nodes != layers * args.tokens:
        failed.append("leanattn did not compute exactly every single-token step's attention")
    if re.search(r"LEANATTN|^leanattn:", logs["path-only"], re.MULTILINE):
        failed.append("GGML_BACKEND_PATH alone loaded the backend (docs say it does not)")
    else:
        print("path-only: GGML_BACKEND_PATH alone: the backend was not loaded (no leanattn line)")

    off = logits["stock-fa-off"]
    rows = []
    for name in ("stock-fa-on", "leanattn"):
        x = logits[name]
        k = kl(off, x)
        rows.append((name, k.mean(), k.std(ddof=1) / np.sqrt(len(k)),
                     np.abs(x - off).max(), (x.argmax(1) == off.argmax(1)).sum()))
    print(f"{'run':<12} {'KL vs -fa off':>14} {'+-':>9} {'max |dlogit|':>13} "
          f"{'argmax = off':>13}   ({args.tokens} steps after {args.prompt_tokens} tokens)")
    for name, m, se, dmax, same in rows:
        print(f"{name:<12} {m:14.3e} {se:9.1e} {dmax:13.4f} {same:>13}")
    (_, m_on, se_on, d_on, _), (_, m_lean, se_lean, d_lean, _) = rows
    if m_lean > m_on + max(se_on, se_lean):
        failed.append(f"KL: leanattn {m_lean:.3e} > stock -fa on {m_on:.3e} + error")
    if d_lean > max(2 * d_on, 0.05):
        failed.append(f"logits: leanattn differs by {d_lean:.4f} > 2 x stock -fa on's {d_on:.4f}")
    lean = logits["leanattn"]
    top2 = np.sort(lean, axis=1)[:, -2:]
    for i in range(args.tokens):
        choice = lean[i].argmax()
        if choice in (off[i].argmax(), logits["stock-fa-on"][i].argmax()):
            continue
        gap = top2[i, 1] - top2[i, 0]
        if gap >= d_on:
            failed.append(f"step {i}: leanattn chose {choice} (top-2 gap {gap:.4f}), stock "
                          f"-fa off {off[i].argmax()}, -fa on {logits['stock-fa-on'][i].argmax()}")
        else:
            print(f"step {i}: leanattn chose {choice}, a near-tie (gap {gap:.4f} < {d_on:.4f})")
    for f in failed:
        print(f"python_package_check: FAILED: {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
