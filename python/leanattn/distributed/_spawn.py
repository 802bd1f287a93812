"""run_local: runs a function on every rank of a process group of local processes (forked by a
forkserver that has imported torch, or spawned; one FileStore rendezvous, no ports), for tests,
examples and the benchmark. Nothing hangs: the group has a timeout and the processes are joined
with a deadline, then killed.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, List, Optional


@dataclass
class RankResult:
    """What one rank's function returned (``value``) or raised (``error``: ``"Type: message"``,
    ``None`` when it returned), and the seconds it ran; ``exitcode`` of its process (``None``:
    killed at the deadline)."""

    value: Any
    error: Optional[str]
    seconds: float
    exitcode: Optional[int]


def _child(fn: Callable[..., Any], rank: int, world_size: int, tmp: str, args: tuple,
           group_timeout: float, threads: int, backend: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(threads)
    start = time.monotonic()
    value, error = None, None
    try:
        dist.init_process_group(backend, init_method=f"file://{os.path.join(tmp, 'store')}",
                                rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=group_timeout))
        value = fn(rank, world_size, *args)
    except BaseException as e:  # reported to the parent, which decides
        error = f"{type(e).__name__}: {e}"
        if os.environ.get("LEANATTN_DIST_TRACEBACK"):
            traceback.print_exc()
    torch.save({"value": value, "error": error, "seconds": time.monotonic() - start},
               os.path.join(tmp, f"rank{rank}.pt"))
    # No destroy_process_group: with a dead peer it could wait; the process exit frees it all.


def _context() -> Any:
    """A forkserver context that has imported torch and leanattn once: every later process is a
    fork of it, which saves each rank the import of torch (seconds); spawn where there is none."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "leanattn.distributed"])
    return ctx


def run_local(fn: Callable[..., Any], world_size: int, *args: Any, timeout: float = 60.0,
              group_timeout: float = 10.0, threads: int = 1,
              backend: str = "gloo") -> List[RankResult]:
    """Runs ``fn(rank, world_size, *args)`` in ``world_size`` spawned processes that form a Gloo
    process group (the default group; ``backend="nccl"`` for GPUs, fn picks its device), and
    returns each rank's result in rank order.

    Args:
        fn: a module-level function (pickled by name); its return value must be picklable by
            torch.save (tensors, numbers, dicts, lists).
        timeout: seconds for the whole run; processes still alive then are killed.
        group_timeout: the process group's timeout: a collective waiting on a dead or failed
            peer raises after at most this long.
        threads: torch intra-op threads per process.
    """
    import torch

    ctx = _context()
    results: List[RankResult] = []
    with tempfile.TemporaryDirectory(prefix="leanattn-dist-") as tmp:
        procs = [ctx.Process(target=_child, args=(fn, r, world_size, tmp, args, group_timeout,
                                                  threads, backend), daemon=True)
                 for r in range(world_size)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        for r, p in enumerate(procs):
            path = os.path.join(tmp, f"rank{r}.pt")
            if os.path.exists(path):
                got = torch.load(path, weights_only=False)
                results.append(RankResult(got["value"], got["error"], got["seconds"],
                                          p.exitcode))
            else:
                why = "killed at the deadline" if p.exitcode == -9 else f"exit code {p.exitcode}"
                results.append(RankResult(None, f"no result ({why})", float("nan"), p.exitcode))
    return results
