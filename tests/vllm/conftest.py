"""Fixtures of the vLLM tests: the models (tests/vllm/models.py, made once) and every offline
engine run the tests compare (JOBS), made once per session by tests/vllm/generate.py in two
processes, one per backend, one after the other: vLLM binds its OpenMP threads to every core, and
two engines side by side would spin against each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import prompts  # noqa: E402

# name -> (backend, model, prompts, options of generate.py's jobs). The fp32 runs of vLLM's own
# attention are the references; random128's fp32 leanattn run is also test_vllm_serve's offline
# result.
JOBS = {
    "random64/vllm": ("vllm", "random64", "random", {"dtype": "float32"}),
    "random64/leanattn": ("leanattn", "random64", "random",
                          {"dtype": "float32", "prefix_caching": False}),
    "random128/vllm": ("vllm", "random128", "random", {"dtype": "float32"}),
    "random128/leanattn": ("leanattn", "random128", "random", {"dtype": "float32"}),
    "random128/vllm_bf16": ("vllm", "random128", "random", {}),
    "random128/leanattn_bf16": ("leanattn", "random128", "random", {}),
    "smollm2/vllm": ("vllm", "smollm2", "text", {"dtype": "float32", "batched_tokens": 32}),
    "smollm2/vllm_bf16": ("vllm", "smollm2", "text", {"batched_tokens": 32}),
    "smollm2/leanattn_bf16": ("leanattn", "smollm2", "text", {"batched_tokens": 32}),
    # What the backend refuses, at start-up (last: the process stops after an error).
    "refused/kv_fp8": ("leanattn", "random64", "random",
                       {"kv_cache_dtype": "fp8", "expect_error": True}),
}


class Runs:
    def __init__(self, folder: str, models_folder: str) -> None:
        self.folder = folder
        self.models_folder = models_folder
        self.models = {}
        self.results = None
        self.failure = None  # the first run's error, reported again by every later test

    def model(self, kind: str) -> str:
        if kind not in self.models:
            self.models[kind] = models.make(os.path.join(self.models_folder, kind), kind)
        return self.models[kind]

    def rounds(self, which: str, kind: str) -> list:
        return prompts.random_rounds(seed=1) if which == "random" else prompts.text_rounds(
            self.model(kind))

    def __getitem__(self, name: str) -> dict:
        """generate.py's JSON of job `name`, plus "log" (its process's output)."""
        if self.results is None:
            self.results = {}
            try:
                for backend in ("vllm", "leanattn"):
                    self._run(backend, {n: j for n, j in JOBS.items() if j[0] == backend})
            except BaseException as e:
                self.failure = e
                raise
        if self.failure is not None:
            pytest.fail(f"the vLLM runs failed: {self.failure}")
        return self.results[name]

    def _run(self, backend: str, jobs: dict) -> None:
        spec = []
        for name, (_, kind, which, opts) in jobs.items():
            out = os.path.join(self.folder, name.replace("/", "-") + ".json")
            spec.append(dict(opts, model=self.model(kind), rounds=self.rounds(which, kind),
                             out=out))
        jobs_file = os.path.join(self.folder, f"{backend}.jobs.json")
        with open(jobs_file, "w") as f:
            json.dump(spec, f)
        env = dict(os.environ)
        env.pop("LEANATTN_VLLM", None)
        if backend == "leanattn":
            env["LEANATTN_VLLM"] = "1"
        proc = subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), jobs_file],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=1200)
        if proc.returncode != 0:
            pytest.fail(f"vLLM runs ({backend}) failed (exit {proc.returncode}):\n"
                        f"{proc.stdout[-6000:]}")
        for name, job in zip(jobs, spec):
            if not os.path.exists(job["out"]):
                pytest.fail(f"vLLM run {name} wrote nothing:\n{proc.stdout[-6000:]}")
            with open(job["out"]) as f:
                self.results[name] = dict(json.load(f), log=proc.stdout, rounds_in=job["rounds"])


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> Runs:
    """The session's runs. LEANATTN_VLLM_MODELS: a folder that keeps the models between
    sessions (scripts/test-vllm.sh: one outside the clone, keyed by models.py's hash); default
    the session's temporary folder. LEANATTN_REQUIRE_VLLM=1: fail, not skip, without vLLM."""
    if not os.environ.get("LEANATTN_REQUIRE_VLLM"):
        pytest.importorskip("vllm")
    folder = str(tmp_path_factory.mktemp("vllm"))
    return Runs(folder, os.environ.get("LEANATTN_VLLM_MODELS") or folder)
