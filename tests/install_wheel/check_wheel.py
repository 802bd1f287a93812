"""The installed wheel, run as a user would (scripts/package-check.sh, from a fresh venv, the
working directory outside the source tree so that only the installed package is imported):

- a decode with every strategy on 1 to 3 workers, against the package's fp64 reference;
- leanattn.__version__, the `leanattn` command's --version and both against `want_version`;
- no Highway library loaded from outside the installed package (this process's /proc/self/maps,
  and ldd of the extension and of the command-line tool);
- `leanattn plan` through the console script.

    python check_wheel.py WANT_VERSION [--hidden]

--hidden: the caller has made the system's libhwy unloadable (a bind mount in a private mount
namespace); the check first proves that it is (else the run would prove nothing).
Prints "N passed, N failed" last; exit status 1 on any failure.
"""

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}")


def hwy_paths(lines):
    """Paths of Highway libraries named in `lines` (maps or ldd output)."""
    found = set()
    for line in lines:
        for token in line.split():
            if "libhwy" in token and token.startswith("/"):
                found.add(os.path.realpath(token))
    return found


def main():
    want_version = sys.argv[1]
    hidden = "--hidden" in sys.argv[2:]
    if hidden:
        try:
            ctypes.CDLL("libhwy.so.1")
            check("the system libhwy is hidden", False, "libhwy.so.1 still loads")
        except OSError as e:
            check("the system libhwy is hidden", True, str(e).split(":")[-1].strip())

    import leanattn

    install = pathlib.Path(leanattn.__file__).resolve().parent
    site = install.parent
    check("__version__", leanattn.__version__ == want_version, leanattn.__version__)

    rng = np.random.default_rng(5)
    seq_lens = np.array([300, 0, 77, 1], np.int32)
    q = rng.standard_normal((4, 8, 64)).astype(np.float32)
    k = rng.standard_normal((4, 300, 2, 64)).astype(np.float32)
    v = rng.standard_normal((4, 300, 2, 64)).astype(np.float32)
    ref = leanattn.reference(q, k, v, seq_lens)
    for strategy in ("lean", "split", "head"):
        for workers in (1, 2, 3):
            out = leanattn.decode(q, k, v, seq_lens, strategy=strategy, workers=workers)
            err = float(np.max(np.abs(out - ref)))
            check(f"decode {strategy} on {workers} workers", err <= 1e-4, f"max err {err:.2e}")

    # Every Highway library this process mapped must be the wheel's own copy.
    with open("/proc/self/maps") as f:
        mapped = hwy_paths(f)
    outside = [p for p in mapped if not p.startswith(str(site))]
    check("libhwy mapped only from the wheel", not outside,
          ", ".join(sorted(mapped)) or "none mapped")

    extension = next(install.glob("_leanattn*.so"))
    tool = install / "bin" / "leanattn"
    for what, path in (("extension", extension), ("command-line tool", tool)):
        ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
        libs = hwy_paths(ldd.splitlines())
        bad = [p for p in libs if not p.startswith(str(site))] + (
            ["a libhwy not found"] if "not found" in ldd else [])
        check(f"ldd of the {what}: libhwy only from the wheel", not bad,
              ", ".join(sorted(libs)) or "none")

    command = shutil.which("leanattn", path=os.path.dirname(sys.executable))
    check("`leanattn` console script installed", command is not None, str(command))
    if command:
        got = subprocess.run([command, "--version"], capture_output=True, text=True)
        check("leanattn --version", got.returncode == 0 and got.stdout.split()[-1] == want_version,
              got.stdout.strip() or got.stderr.strip())
        got = subprocess.run([command, "plan", "--seq-lens", "500,7", "--kv-heads", "2",
                              "--workers", "3"], capture_output=True, text=True)
        check("leanattn plan", got.returncode == 0 and "worker 2" in got.stdout,
              got.stderr.strip() or got.stdout.splitlines()[0])

    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
