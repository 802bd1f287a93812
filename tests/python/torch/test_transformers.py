"""attn_implementation="leanattn" through the real transformers code: small random-weight
models in fp32, greedy generation of 32 tokens against transformers' own attention (SDPA, or
eager where SDPA cannot run the model: sinks, soft-caps), left-padded batches, DeepSeek V3's K
and V of two widths (MLA, against eager), and the clear refusals."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import import_torch

torch = import_torch()
transformers = pytest.importorskip("transformers")
import leanattn.integrations.transformers  # noqa: E402,F401

SMALL = dict(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=2, head_dim=16,
             max_position_embeddings=256)


def model_of(config_cls, attn, dtype=torch.float32, **extra):
    torch.manual_seed(0)
    config = config_cls(**{**SMALL, **extra})
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation=attn, dtype=dtype)
    return model.eval()


def greedy(model, ids, mask=None, tokens=32):
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, max_new_tokens=tokens, do_sample=False,
                              min_new_tokens=tokens, pad_token_id=0)


def same_tokens(config_cls, baseline, prompt_len=9, **extra):
    ids = torch.randint(1, 256, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    want = greedy(model_of(config_cls, baseline, **extra), ids)
    got = greedy(model_of(config_cls, "leanattn", **extra), ids)
    assert torch.equal(got, want), (got, want)
    return got


def test_llama_gqa():
    same_tokens(transformers.LlamaConfig, "sdpa")


def test_mistral_sliding_window():
    # A window of 12 keys: generation runs past it, so the mask drops keys every step.
    same_tokens(transformers.MistralConfig, "sdpa", sliding_window=12)


def test_gpt_oss_sinks():
    from transformers import GptOssConfig

    extra = dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=12,
                 layer_types=["sliding_attention", "full_attention"])
    config_args = {k: v for k, v in SMALL.items()}
    torch.manual_seed(0)
    ids = torch.randint(1, 256, (1, 9), generator=torch.Generator().manual_seed(1))
    outs = []
    for attn in ("eager", "leanattn"):
        torch.manual_seed(0)
        config = GptOssConfig(**config_args, **extra)
        model = transformers.AutoModelForCausalLM.from_config(
            config, attn_implementation=attn, dtype=torch.float32).eval()
        with torch.no_grad():  # sinks are zeros at init: make them matter
            for layer in model.model.layers:
                layer.self_attn.sinks.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(2))
        outs.append(greedy(model, ids))
    assert torch.equal(outs[0], outs[1]), outs


def gemma2_scores_sharpened(attn, **extra):
    """A Gemma 2 (soft-cap 50, its real value; a sliding layer of 12 keys and a full one) whose
    q and k projections are drawn wider than at init (std 0.3), so that scores reach the cap."""
    model = model_of(transformers.Gemma2Config, attn,
                     **{"attn_logit_softcapping": 50.0, "sliding_window": 12,
                        "query_pre_attn_scalar": 16, **extra})
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                proj.weight.normal_(0.0, 0.3, generator=gen)
    return model


def tokens_and_logits(model, ids, mask=None, tokens=32):
    with torch.no_grad():
        r = model.generate(ids, attention_mask=mask, max_new_tokens=tokens, do_sample=False,
                           min_new_tokens=tokens, pad_token_id=0, output_logits=True,
                           return_dict_in_generate=True)
    return r.sequences, torch.stack(r.logits)


@pytest.mark.parametrize("padded", [False, True], ids=["one-request", "padded-batch"])
def test_gemma2_softcap(padded):
    # Decode through leanattn's softcap, prefill through eager. One request: the full layer
    # decodes through a kept plan (no mask), the sliding one through the mask's token pages once
    # generation passes 12 keys; a batch of two, one left-padded: both layers through masks.
    # Logits within fp32 noise of eager's; without the soft-cap they are not (the test would see
    # a dropped or misapplied cap).
    ids = torch.randint(1, 256, (2, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    ids[mask == 0] = 0
    if not padded:
        ids, mask = ids[:1], None
    want, want_logits = tokens_and_logits(gemma2_scores_sharpened("eager"), ids, mask)
    got, got_logits = tokens_and_logits(gemma2_scores_sharpened("leanattn"), ids, mask)
    assert torch.equal(got, want), (got, want)
    torch.testing.assert_close(got_logits, want_logits, rtol=1e-4, atol=1e-4)
    _, uncapped = tokens_and_logits(
        gemma2_scores_sharpened("eager", attn_logit_softcapping=None), ids, mask)
    assert (uncapped - want_logits).abs().max() > 0.1


# DeepSeek V3 (MLA) as transformers runs it: K qk_nope + rope wide, V v_head_dim (unpadded for a
# custom attention), every head its own K and V; MoE kept tiny (4 experts in 2 groups, the first
# layer dense). "small": K 48 / V 32; "deepseek": the real widths, K 192 / V 128.
DEEPSEEK = {
    "small": dict(qk_nope_head_dim=32, qk_rope_head_dim=16, head_dim=16, v_head_dim=32,
                  kv_lora_rank=32),
    "deepseek": dict(qk_nope_head_dim=128, qk_rope_head_dim=64, head_dim=64, v_head_dim=128,
                     kv_lora_rank=64, num_attention_heads=4),
}


def deepseek_sharpened(attn, widths, scaling=1.0):
    """A tiny DeepseekV3ForCausalLM whose q and kv_b projections are drawn wider than at init
    (std 0.3), so that the scores, not the init's near-uniform weights, pick the tokens."""
    heads = DEEPSEEK[widths].get("num_attention_heads", SMALL["num_attention_heads"])
    model = model_of(transformers.DeepseekV3Config, attn, q_lora_rank=None,
                     num_key_value_heads=heads, moe_intermediate_size=64, n_routed_experts=4,
                     n_group=2, topk_group=1, num_experts_per_tok=2, first_k_dense_replace=1,
                     n_shared_experts=1, **DEEPSEEK[widths])
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.kv_b_proj):
                proj.weight.normal_(0.0, 0.3, generator=gen)
            layer.self_attn.scaling *= scaling
    return model


@pytest.mark.parametrize("widths", ["small", "deepseek"])
@pytest.mark.parametrize("padded", [False, True], ids=["one-request", "padded-batch"])
def test_deepseek_v3_k_and_v_of_two_widths(monkeypatch, widths, padded):
    # Decode through leanattn with K and V of their own widths (one request: a kept plan made
    # for head_dim_v; a left-padded batch: the mask's token pages, K and V made dense to share
    # one block table), prefill through SDPA; greedy tokens and logits those of eager.
    from leanattn.integrations import transformers as integration

    ids = torch.randint(1, 256, (2, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    ids[mask == 0] = 0
    if not padded:
        ids, mask = ids[:1], None
    widths_seen, decode = [], integration.decode
    monkeypatch.setattr(integration, "decode", lambda q, k, v, *a, **kw: widths_seen.append(
        (q.shape[-1], v.shape[-1])) or decode(q, k, v, *a, **kw))
    want, want_logits = tokens_and_logits(deepseek_sharpened("eager", widths), ids, mask, 16)
    got, got_logits = tokens_and_logits(deepseek_sharpened("leanattn", widths), ids, mask, 16)
    assert torch.equal(got, want), (got, want)
    torch.testing.assert_close(got_logits, want_logits, rtol=1e-4, atol=1e-4)
    k_width = DEEPSEEK[widths]["qk_nope_head_dim"] + DEEPSEEK[widths]["qk_rope_head_dim"]
    assert set(widths_seen) == {(k_width, DEEPSEEK[widths]["v_head_dim"])}
    assert len(widths_seen) == 15 * 2  # every decode step of both layers
    if not padded:  # the attention's output moves the logits far beyond the tolerance
        _, other = tokens_and_logits(deepseek_sharpened("eager", widths, 1.5), ids, mask, 16)
        assert (other - want_logits).abs().max() > 0.1


def test_softcap_argument():
    from leanattn.integrations.transformers import _softcap_of

    assert _softcap_of({}) is None and _softcap_of({"softcap": None}) is None
    assert _softcap_of({"softcap": 0.0}) is None and _softcap_of({"softcap": 30}) == 30.0
    with pytest.raises(ValueError, match="^softcap: "):
        _softcap_of({"softcap": -1.0})


def test_padded_generation_under_inference_mode():
    # Masks made under torch.inference_mode() have no version counter.
    ids = torch.randint(1, 256, (2, 11), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    ids[mask == 0] = 0
    with torch.inference_mode():
        want = greedy(model_of(transformers.LlamaConfig, "sdpa"), ids, mask, tokens=8)
        got = greedy(model_of(transformers.LlamaConfig, "leanattn"), ids, mask, tokens=8)
    assert torch.equal(got, want), (got, want)


def test_llama_left_padded_batch():
    ids = torch.randint(1, 256, (3, 11), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    mask[2, :7] = 0
    ids[mask == 0] = 0
    want = greedy(model_of(transformers.LlamaConfig, "sdpa"), ids, mask)
    got = greedy(model_of(transformers.LlamaConfig, "leanattn"), ids, mask)
    assert torch.equal(got, want), (got, want)


def test_mask_that_is_not_a_run_is_refused():
    from leanattn.integrations.transformers import _mask_rows

    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, 0, 0, 2] = False
    with pytest.raises(ValueError, match="^attention_mask: request 1"):
        _mask_rows(mask, 2, 6)


def test_mask_rows_are_never_those_of_another_mask():
    # A new mask at the address of an earlier one, with the same shape and version (as when
    # the allocator hands a freed mask's memory to the next step's): its own rows, not the
    # earlier mask's. Made deterministic with two tensors over one NumPy buffer. An in-place
    # change of a mask is seen too.
    from leanattn.integrations.transformers import _mask_rows

    buf = np.ones((2, 1, 1, 64), dtype=bool)
    buf[1, 0, 0, :5] = False
    first = torch.from_numpy(buf)
    assert _mask_rows(first, 2, 64)[1].tolist() == [64, 59]
    buf[1, 0, 0, :9] = False
    second = torch.from_numpy(buf)
    assert second.data_ptr() == first.data_ptr() and second._version == first._version
    assert _mask_rows(second, 2, 64)[1].tolist() == [64, 55]
    second[0, 0, 0, :2] = False
    assert _mask_rows(second, 2, 64)[0].tolist() == [2, 9]


def test_a_steps_two_masks_are_mapped_once_each(monkeypatch):
    # Gemma 2 and gpt-oss alternate a sliding and a full mask over a step's layers: each is read
    # on the host once.
    from leanattn.integrations import transformers as integration

    full = torch.ones(1, 1, 1, 40, dtype=torch.bool)
    full[..., :3] = False
    sliding = full.clone()
    sliding[..., :28] = False
    reads, where = [], np.where
    monkeypatch.setattr(integration.np, "where", lambda *a: reads.append(1) or where(*a))
    for _ in range(4):
        assert integration._mask_rows(full, 1, 40)[1].tolist() == [37]
        assert integration._mask_rows(sliding, 1, 40)[1].tolist() == [12]
    assert len(reads) == 2


@pytest.mark.parametrize("softcap", [None, 0.9])
def test_attention_function_compiles_without_graph_break(softcap):
    from leanattn.integrations.transformers import leanattn_attention_forward

    class Attn(torch.nn.Module):
        sliding_window = None

        def __init__(self):
            super().__init__()
            self.sinks = torch.nn.Parameter(torch.randn(8))

    module = Attn()
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(2, 8, 1, 32, generator=gen)
    k, v = (torch.randn(2, 2, 50, 32, generator=gen) for _ in range(2))

    def step(q, k, v):
        return leanattn_attention_forward(module, q, k, v, None, scaling=0.3,
                                          softcap=softcap)[0] * 1.0

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v)
    torch.testing.assert_close(got, step(q, k, v), rtol=0, atol=0)
    eager_scores = torch.einsum("bhd,bhnd->bhn", q[:, :, 0], k.repeat_interleave(4, 1)) * 0.3
    if softcap is not None:
        eager_scores = softcap * torch.tanh(eager_scores / softcap)
    logits = torch.cat([eager_scores, module.sinks.detach()[None, :, None].expand(2, 8, 1)], -1)
    probs = torch.softmax(logits, -1)[..., :-1]
    want = torch.einsum("bhn,bhnd->bhd", probs, v.repeat_interleave(4, 1))
    torch.testing.assert_close(got[:, 0], want, rtol=1e-5, atol=1e-5)


def test_cuda_queries_get_cuda_plans(monkeypatch):
    # The plan of a step on a CUDA query is the CUDA engine's, made on the query's device and
    # without the CPU thread count; CPU and CUDA plans of one shape are kept apart.
    import contextlib

    from leanattn.integrations import transformers as integration

    made, current = [], []

    def spy(lens, **kwargs):
        made.append(kwargs)
        return ("plan", len(made))

    monkeypatch.setattr(integration, "make_plan", spy)
    monkeypatch.setattr(integration, "workers", 3)
    monkeypatch.setattr(torch.cuda, "device",
                        lambda d: current.append(d) or contextlib.nullcontext())
    integration._PLANS.clear()
    cpu = integration._plan_for(2, 40, 8, 2, 64, 50.0, torch.device("cpu"))
    gpu = integration._plan_for(2, 40, 8, 2, 64, 50.0, torch.device("cuda", 1))
    assert integration._plan_for(2, 40, 8, 2, 64, 50.0, torch.device("cuda", 1)) is gpu
    other = integration._plan_for(2, 40, 8, 2, 64, 50.0, torch.device("cuda", 0))
    assert len({cpu, gpu, other}) == 3
    assert made[0] == dict(q_heads=8, kv_heads=2, head_dim=64, head_dim_v=64, workers=3,
                           softcap=50.0)
    assert made[1] == dict(q_heads=8, kv_heads=2, head_dim=64, head_dim_v=64, softcap=50.0,
                           backend="cuda")
    # V of its own width (DeepSeek's K 192 / V 128): a plan of its own.
    narrow = integration._plan_for(2, 40, 8, 2, 64, 50.0, torch.device("cpu"), 32)
    assert narrow is not cpu and made[-1]["head_dim_v"] == 32
    assert current == [torch.device("cuda", 1), torch.device("cuda", 0)]
    integration._PLANS.clear()


def shared_steps(*runs):
    """Steps of several generations (tokens, step logits) while all saw the same tokens: up to
    and including the first step where one greedy token differs (a near tie in bf16 may flip
    it)."""
    steps = runs[0][1].shape[0]
    new = [tokens[:, -steps:] for tokens, _ in runs]
    differ = torch.stack([(n != new[0]).any(dim=0) for n in new[1:]]).any(dim=0).nonzero()
    return int(differ[0]) + 1 if differ.numel() else steps


@pytest.mark.parametrize("device", [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(
        not torch.cuda.is_available() or "cuda" not in leanattn.backends,
        reason="needs a GPU and leanattn's CUDA backend")),
])
@pytest.mark.parametrize("padded", [False, True], ids=["one-request", "padded-batch"])
def test_bf16_generation_llama_and_gemma2(device, padded):
    # bf16 models with head_dim 64 (what the CUDA engine takes: bf16/f16, head_dim 64/128/256),
    # on the CPU and on the GPU: Llama (baseline SDPA) and Gemma 2 (soft-cap, a sliding layer;
    # baseline eager). One request decodes its full layers through a kept plan (a CUDA plan on
    # the GPU), a left-padded batch through masks. Both bf16 runs are measured against the
    # baseline in fp32 with the same weights: leanattn (fp32 arithmetic on bf16 inputs) must be
    # no further from it than the bf16 baseline (eager rounds Gemma 2's sharp scores to bf16).
    bf16 = dict(head_dim=64, hidden_size=512, dtype=torch.bfloat16)
    ids = torch.randint(1, 256, (2, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    ids[mask == 0] = 0
    ids, mask = (ids.to(device), mask.to(device)) if padded else (ids[:1].to(device), None)
    for make, baseline in ((lambda attn: model_of(transformers.LlamaConfig, attn, **bf16), "sdpa"),
                           (lambda attn: gemma2_scores_sharpened(attn, **bf16), "eager")):
        lean = tokens_and_logits(make("leanattn").to(device), ids, mask, tokens=16)
        base = tokens_and_logits(make(baseline).to(device), ids, mask, tokens=16)
        ref = tokens_and_logits(make(baseline).float().to(device), ids, mask, tokens=16)
        steps = shared_steps(lean, base, ref)
        assert steps >= 2  # at least one step decoded by leanattn
        lean_err = (lean[1][:steps].float() - ref[1][:steps]).abs().max()
        base_err = (base[1][:steps].float() - ref[1][:steps]).abs().max()
        assert lean_err <= 1.25 * base_err + 0.02, (lean_err, base_err)
