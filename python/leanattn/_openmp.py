"""leanattn.use_openmp: the CPU engine's workers on the process's OpenMP team instead of threads of
its own. An engine that runs its model on OpenMP (PyTorch's CPU ops, vLLM's CPU worker, which
binds each team thread to a core) then shares those threads with leanattn: the team that just ran
a matmul runs attention, and no second set of threads competes for the cores. The runtime is the
one already loaded in the process (libgomp, or an Intel/LLVM runtime with its GOMP entry points),
found in /proc/self/maps; nothing is loaded or linked."""

from __future__ import annotations

import ctypes
import os
from typing import Optional

from . import _leanattn as _ext

_RUNTIMES = ("libgomp", "libiomp5", "libomp")
_ENTRY_POINTS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


def _loaded_runtimes() -> "list[str]":
    """Paths of the OpenMP runtimes mapped into this process, in the order first mapped."""
    found: "list[str]" = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip() if line.count(" ") >= 5 else ""
                if path.startswith("/") and os.path.basename(path).startswith(_RUNTIMES):
                    if path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def use_openmp(enable: bool = True, library: Optional[str] = None) -> Optional[str]:
    """Runs the CPU engine's workers on this process's OpenMP team (``enable=False``: on
    leanattn's own threads again). ``library``: the runtime's path; default, the one the process
    has loaded (import torch first: its libgomp), preferring one inside torch's folder when
    several are. Returns the runtime's path, or None when disabled. Pass ``workers`` equal to the
    team's size (``torch.get_num_threads()``) to :func:`decode` and :func:`plan`.

    Raises:
        RuntimeError: no OpenMP runtime is loaded (and ``library`` not given), or it lacks
            GOMP_parallel / omp_get_thread_num / omp_get_num_threads.
        ValueError: another runtime was lent to this process before (one per process).
    """
    if not enable:
        _ext._lend_openmp(0, 0, 0)
        return None
    if library is None:
        loaded = _loaded_runtimes()
        if not loaded:
            raise RuntimeError(
                "use_openmp: no OpenMP runtime (libgomp, libiomp5, libomp) is loaded in this "
                "process: import torch (or the library that runs on OpenMP) first, or pass library=")
        torch_dir = os.path.dirname(getattr(__import__("sys").modules.get("torch"), "__file__", "")
                                    or "/nonexistent")
        library = next((p for p in loaded if p.startswith(torch_dir + os.sep)), loaded[0])
    # RTLD_NOLOAD where the runtime is loaded already: the handle of that very copy.
    mode = os.RTLD_NOLOAD if library in _loaded_runtimes() else os.RTLD_LOCAL
    runtime = ctypes.CDLL(library, mode=mode)
    addresses = []
    for name in _ENTRY_POINTS:
        try:
            addresses.append(ctypes.cast(getattr(runtime, name), ctypes.c_void_p).value)
        except AttributeError:
            raise RuntimeError(f"use_openmp: {library} has no {name}: not an OpenMP runtime with "
                               f"GOMP's entry points") from None
    _ext._lend_openmp(*addresses)
    return library
