#!/usr/bin/env python3
"""leanattn's ggml backend in the llama-cpp-python package (the llama stage).

Run with the python of scripts/llama-cpp-python.sh's venv: the package as pip builds it from
PyPI's sdist (GGML_BACKEND_DL off, so nothing in it reads GGML_BACKEND_PATH). The way in is one
call before the first Llama: ggml_backend_load() from the package's own libggml
(docs/llama-cpp.md, "llama-cpp-python"), as leanattn.integrations.llama_cpp.enable() makes it.
The helper is imported from a stand-in of the installed package (python/leanattn's __init__
needs the compiled extension, which this venv does not have): leanattn/integrations/llama_cpp.py
as in the source tree, and the backend where a wheel built with it ships it (leanattn/lib/), so
that enable() with no argument finds it as a user's would. Four runs, each in a fresh process, of
one model: a
prompt of --prompt-tokens tokens (llama.cpp's docs, as model_check.py takes them) evaluated in
batches of 512 (prefill: the backend takes them too), then --tokens single-token steps fed the
text's next tokens (the same inputs for every run), keeping each step's logits:
  stock-fa-on   Llama(flash_attn=True)
  stock-fa-off  Llama(flash_attn=False): the reference
  leanattn      lc.enable() (ggml_backend_load of the shipped libggml-leanattn.so), then
                Llama(flash_attn=True)
  path-only     GGML_BACKEND_PATH set, no ggml_backend_load: what the package does with it
and two more processes that load no model, enable()'s errors:
  no-backend    the stand-in without lib/: BackendError naming the installed llama-cpp-python and
                where it looked;
  refused       ggml_version() answered "0.0.1" by a library preloaded ahead of ggml's
                (--fake-ggml-version): BackendError naming the installed llama-cpp-python, both
                ggml versions, the tested releases and the rebuild command; nothing loaded.
Checks, each of which fails the run:
  - leanattn computed every attention node, the prompt's batches' and every single-token step's
    (layers x (batches + steps), counted by LEANATTN_GGML_STATS and by lc.nodes_computed()) and
    no others; path-only never loaded it (no
    "leanattn:" line at all); both errors as said;
  - leanattn is as close to stock -fa off as stock -fa on is: its mean KL divergence from stock
    -fa off's next-token distribution over the steps no larger than stock -fa on's plus the
    larger of their standard errors, and its largest logit difference within 2x stock -fa on's
    (at least 0.05; a wrong attention moves logits by whole units);
  - leanattn's next-token choice equals stock -fa off's or stock -fa on's at every step, or the
    step is a near-tie (its top-2 logit gap below stock -fa on's largest logit difference).
Prints a table; exits 1 on a failed check.
"""

import argparse
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

    if args.run in ERRORS:
        return error_child(args)
    fa, load, _ = RUNS[args.run]
    lc = None
    if load:
        # The two lines users write (docs/llama-cpp.md): the backend from the package's lib/.
        sys.path.insert(0, args.package)
        import leanattn.integrations.llama_cpp as lc

        enabled = lc.enable()
        print(f"python_package_check: enabled {enabled}", file=sys.stderr)
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
    if lc is not None:
        print(f"python_package_check: nodes_computed {lc.nodes_computed()}", file=sys.stderr)
    llm.close()  # frees the backend: its LEANATTN_GGML_STATS line
    return 0


ERRORS = ("no-backend", "refused")


def error_child(args) -> int:
    """enable() must raise BackendError; prints its message on stdout."""
    sys.path.insert(0, args.package)
    import leanattn.integrations.llama_cpp as lc

    try:
        lc.enable()
    except lc.BackendError as e:
        print(f"BackendError: {e}")
        return 0
    print("enable() raised nothing")
    return 1


def package(folder: str, backend) -> str:
    """A stand-in of the installed leanattn package: the helper from the source tree and, when
    `backend` is given, the backend where a wheel built with it ships it. Returns its path."""
    root = pathlib.Path(folder)
    helper = pathlib.Path(__file__).resolve().parents[2] / "python/leanattn/integrations"
    (root / "leanattn/integrations").mkdir(parents=True)
    (root / "leanattn/__init__.py").write_text("")
    (root / "leanattn/integrations/__init__.py").write_text("")
    (root / "leanattn/integrations/llama_cpp.py").symlink_to(helper / "llama_cpp.py")
    if backend:
        (root / "leanattn/lib").mkdir()
        (root / "leanattn/lib/libggml-leanattn.so").symlink_to(pathlib.Path(backend).resolve())
    return str(root)


def error_run(args, name: str, folder: str) -> str:
    """Runs the error case `name` in a fresh process; returns enable()'s message."""
    env = dict(os.environ, LEANATTN_GGML="1")
    env.pop("GGML_BACKEND_PATH", None)
    env.pop("LEANATTN_LLAMA_CPP_BACKEND", None)
    env.pop("LEANATTN_GGML_ANY_VERSION", None)
    pkg = package(os.path.join(folder, name), None if name == "no-backend" else args.backend)
    if name == "refused":
        env["LD_PRELOAD"] = args.fake_ggml_version
    cmd = [sys.executable, __file__, "--child", "--run", name, "--package", pkg,
           "--backend", args.backend, "--model", args.model]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit(f"python_package_check: the {name} run: enable() did not raise "
                         f"BackendError ({p.returncode})")
    return p.stdout.strip()


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
           "--package", args.package,
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
    ap.add_argument("--fake-ggml-version",
                    help="a library whose ggml_version() answers 0.0.1 (LD_PRELOAD)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run", choices=list(RUNS) + list(ERRORS), help=argparse.SUPPRESS)
    ap.add_argument("--package", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--text", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.src or not args.fake_ggml_version:
        ap.error("--src and --fake-ggml-version are required")
    if args.tokens < 2:
        ap.error("--tokens: at least 2 (the KL check needs a standard error)")

    import numpy as np

    import llama_cpp

    where = pathlib.Path(llama_cpp.__file__).parent
    print(f"llama-cpp-python {llama_cpp.__version__} from {where}")
    with tempfile.TemporaryDirectory() as folder:
        args.text = os.path.join(folder, "text.txt")
        pathlib.Path(args.text).write_text(corpus(pathlib.Path(args.src)))
        args.package = package(os.path.join(folder, "package"), args.backend)
        logits, logs, errors = {}, {}, {}
        for name in RUNS:
            logits[name], logs[name] = run(args, name, folder)
        for name in ERRORS:
            errors[name] = error_run(args, name, folder)
    failed = []

    version = llama_cpp.__version__
    for name, needed in (("no-backend", [f"llama-cpp-python {version}", "no ggml backend",
                                         "LEANATTN_LLAMA_CPP_BACKEND"]),
                         ("refused", [f"llama-cpp-python {version}", "ggml 0.0.1",
                                      "loaded into ggml 0.0.1", "rebuild it against",
                                      "--target ggml-leanattn", "0.3.36 (ggml 0.25.3)"])):
        print(f"{name}: {errors[name]}")
        missing = [n for n in needed if n not in errors[name]]
        if missing:
            failed.append(f"enable()'s {name} error does not say {missing}")

    found = re.search(r"python_package_check: layers (\d+)", logs["leanattn"])
    stats = re.findall(r"leanattn: computed (\d+) FLASH_ATTN_EXT", logs["leanattn"])
    if found is None or not stats:
        sys.stderr.write(logs["leanattn"][-4000:])
        raise SystemExit("python_package_check: the leanattn run printed no layer count or no "
                         "LEANATTN_GGML_STATS line (was the backend freed?)")
    layers = int(found.group(1))
    nodes = sum(int(n) for n in stats)
    batches = -(-args.prompt_tokens // 512)
    expected = layers * (batches + args.tokens)
    counted = re.search(r"python_package_check: nodes_computed (\d+)", logs["leanattn"])
    if counted is None or int(counted.group(1)) != expected:
        failed.append(f"lc.nodes_computed() said {counted and counted.group(1)}, not {expected}")
    else:
        print(f"lc.nodes_computed(): {counted.group(1)}")
    print(f"nodes: leanattn computed {nodes} FLASH_ATTN_EXT nodes ({layers} layers x "
          f"({batches} prompt batches of 512 + {args.tokens} single-token steps) = {expected})")
    said = sorted(set(re.findall(r"leanattn: (?:takes|declines)[^\n]*", logs["leanattn"])))
    declined = [line for line in said if "declines" in line]
    print(f"  {len(said) - len(declined)} lines 'leanattn: takes ...' (one per node name); "
          f"{len(declined)} declines:")
    for line in declined:
        print(f"  {line}")
    if nodes != expected:
        failed.append("leanattn did not compute exactly every attention node of the run")
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
