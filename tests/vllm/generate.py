"""Offline vLLM engines (LLM.generate, greedy, in this process), one after another, on token-id
prompts: for each job, every request's generated tokens and the top-k logprobs of its prompt (in
the first round) and generated positions, as JSON, with the number of forward calls leanattn's
backend served (0: vLLM's own attention ran). One process serves several jobs: importing vLLM
takes longer than starting an engine.
  python tests/vllm/generate.py JOBS.json
JOBS.json: a list of jobs, each {"model": folder, "rounds": [[prompt, ...], ...], "out": file}
and optionally "dtype" (bfloat16), "prefix_caching" (true), "batched_tokens" (64),
"max_tokens" (16), "logprobs" (5), "kv_space_gb" (1), "kv_cache_dtype" ("auto"); with
"expect_error": true the job records the error that starting the engine raised, {"error": ...}
(it must raise one), and the process stops after it. The rounds run one after another on the
job's engine, so a later round's prompts can hit the prefix cache an earlier one filled.
LEANATTN_VLLM=1 in the environment selects leanattn (the plugin) for every job.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time


def _top(logprobs) -> dict:
    """{token id: logprob} of one position's top-k (vLLM's Logprob objects)."""
    return {int(t): float(lp.logprob) for t, lp in logprobs.items()}


def _calls() -> int:
    backend = sys.modules.get("leanattn.integrations.vllm_backend")
    return backend.LeanAttnImpl.calls if backend else 0


def run_job(job: dict) -> dict:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    rounds, max_tokens, k = job["rounds"], job.get("max_tokens", 16), job.get("logprobs", 5)
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(job.get("kv_space_gb", 1))
    calls = _calls()
    start = time.perf_counter()
    try:
        llm = LLM(model=job["model"], dtype=job.get("dtype", "bfloat16"), enforce_eager=True,
                  seed=0, max_model_len=max(len(p) for r in rounds for p in r) + max_tokens + 16,
                  max_num_batched_tokens=job.get("batched_tokens", 64), max_num_seqs=16,
                  enable_chunked_prefill=True, kv_cache_dtype=job.get("kv_cache_dtype", "auto"),
                  enable_prefix_caching=job.get("prefix_caching", True))
    except Exception as e:  # noqa: BLE001 (recorded for the test to read)
        if job.get("expect_error"):
            return {"error": f"{type(e).__name__}: {e}"}
        raise
    if job.get("expect_error"):
        raise SystemExit(f"generate.py: {job['out']}: the engine started; an error was expected")
    startup = time.perf_counter() - start
    results = []
    start = time.perf_counter()
    for r, prompts in enumerate(rounds):
        # Prompt logprobs in the first round only: vLLM serves a request that asks for them
        # without the prefix cache, and the later rounds are there to hit it.
        params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True,
                                logprobs=k, prompt_logprobs=k if r == 0 else None)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                            use_tqdm=False)
        results.append([{
            "tokens": list(out.outputs[0].token_ids),
            "logprobs": [_top(lp) for lp in out.outputs[0].logprobs],
            "prompt_logprobs": [None if lp is None else _top(lp)
                                for lp in out.prompt_logprobs or []],
            "cached_tokens": out.num_cached_tokens,
        } for out in outs])
    generate_seconds = time.perf_counter() - start
    del llm
    gc.collect()
    return {"attention_calls": _calls() - calls, "startup_seconds": startup,
            "generate_seconds": generate_seconds, "rounds": results}


def main() -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine core in this process
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    for job in jobs:
        result = run_job(job)
        with open(job["out"], "w") as f:
            json.dump(result, f)
        if "error" in result:
            print(f"generate.py: {job['out']}: {result['error']}", flush=True)
            break
        print(f"generate.py: {job['out']}: start-up {result['startup_seconds']:.1f} s, "
              f"generation {result['generate_seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
