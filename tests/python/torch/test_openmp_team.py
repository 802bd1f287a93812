"""leanattn.use_openmp: the CPU engine's workers on the OpenMP team torch loaded (what the vLLM
backend runs on), against the fp64 definition, on vLLM's cache layout read through strides
(leanattn/integrations/vllm_backend.py's cache_views: [blocks, kv_heads, block_size,
2 x head_dim], K first); the errors. Without vLLM: the plugin's own tests need its venv."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from conftest import assert_close, import_torch

torch = import_torch()
import leanattn  # noqa: E402
from leanattn.integrations import vllm as vllm_plugin  # noqa: E402

from test_mixed_batch import COUNTS, LENS, numpy_mixed, starts_of  # noqa: E402

BLOCK = 16


@pytest.fixture
def team():
    path = leanattn.use_openmp()
    yield path
    leanattn.use_openmp(False)


def vllm_layout_case(rng, head_dim=64, kv_heads=2, q_heads=8):
    """A paged cache in vLLM's CPU layout, a block table that shuffles its blocks, packed q."""
    per_request = [-(-n // BLOCK) for n in LENS]
    blocks = sum(per_request) + 3
    kv = torch.from_numpy(
        rng.standard_normal((blocks, kv_heads, BLOCK, 2 * head_dim)).astype(np.float32))
    order = rng.permutation(blocks).astype(np.int32)
    table = np.zeros((len(LENS), max(per_request)), np.int32)
    at = 0
    for b, n in enumerate(per_request):
        table[b, :n] = order[at:at + n]
        at += n
    q = rng.standard_normal((sum(COUNTS), q_heads, head_dim)).astype(np.float32)
    k = kv[..., :head_dim].transpose(1, 2)  # [blocks, BLOCK, kv_heads, head_dim], strided
    v = kv[..., head_dim:].transpose(1, 2)
    return q, k, v, table


@pytest.mark.parametrize("workers", [1, 3, 5])
@pytest.mark.parametrize("threads", [1, 2])
def test_team_runs_every_worker(rng, team, workers, threads):
    assert team and "omp" in team.split("/")[-1]
    q, k, v, table = vllm_layout_case(rng)
    assert not k.is_contiguous()
    lens, starts = np.array(LENS, np.int32), starts_of(COUNTS)
    want, want_lse = numpy_mixed(q, k.numpy(), v.numpy(), lens, starts, table)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out = torch.full((q.shape[0], q.shape[1], q.shape[2]), float("nan"))
        lse = torch.full(q.shape[:2], float("nan"))
        plan = leanattn.plan(lens, q_heads=8, kv_heads=2, head_dim=64, workers=workers, tile=16,
                             query_start_loc=starts)
        leanattn.decode(torch.from_numpy(q), k, v, torch.from_numpy(lens), block_table=table,
                        query_start_loc=torch.from_numpy(starts), plan=plan, workers=workers,
                        out=out, lse_out=lse)
    finally:
        torch.set_num_threads(before)
    assert_close(out, want, "float32", lse, want_lse)


def test_team_from_other_python_threads(rng, team):
    q, k, v, table = vllm_layout_case(rng)
    lens, starts = np.array(LENS, np.int32), starts_of(COUNTS)
    want, _ = numpy_mixed(q, k.numpy(), v.numpy(), lens, starts, table)
    results = []

    def run():
        results.append(leanattn.decode(torch.from_numpy(q), k, v, torch.from_numpy(lens),
                                       block_table=table, query_start_loc=starts, workers=2))

    runners = [threading.Thread(target=run) for _ in range(3)]
    for r in runners:
        r.start()
    for r in runners:
        r.join()
    assert len(results) == 3
    for out in results:
        assert_close(out, want, "float32")


def test_errors():
    with pytest.raises(ValueError, match="parallel"):
        leanattn._leanattn._lend_openmp(1, 0, 0)
    with pytest.raises(OSError):
        leanattn.use_openmp(library="/nonexistent/libgomp.so.1")
    import ctypes.util
    libc = ctypes.util.find_library("c")
    if libc:
        with pytest.raises(RuntimeError, match="GOMP_parallel"):
            leanattn.use_openmp(library=libc)


def test_plugin_gate(monkeypatch):
    monkeypatch.delenv(vllm_plugin.ENV, raising=False)
    assert not vllm_plugin.enabled()
    vllm_plugin.register()  # does nothing (and imports no vLLM) without LEANATTN_VLLM
    monkeypatch.setenv(vllm_plugin.ENV, "1")
    assert vllm_plugin.enabled()
    monkeypatch.setenv(vllm_plugin.ENV, "0")
    assert not vllm_plugin.enabled()
