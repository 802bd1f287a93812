"""attn_implementation="leanattn" through the real transformers code: small random-weight
models in fp32, greedy generation of 32 tokens against transformers' own attention (SDPA, or
eager where SDPA cannot run the model), left-padded batches, and the clear refusals."""

from __future__ import annotations

import pytest

from conftest import import_torch

torch = import_torch()
transformers = pytest.importorskip("transformers")
import leanattn.integrations.transformers  # noqa: E402,F401

SMALL = dict(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=2, head_dim=16,
             max_position_embeddings=256)


def model_of(config_cls, attn, **extra):
    torch.manual_seed(0)
    config = config_cls(**SMALL, **extra)
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation=attn, dtype=torch.float32)
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


def test_gemma2_softcap_refused():
    model = model_of(transformers.Gemma2Config, "leanattn", attn_logit_softcapping=50.0)
    ids = torch.randint(1, 256, (1, 5))
    with pytest.raises(ValueError, match="^softcap: "):
        greedy(model, ids, tokens=2)


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


def test_attention_function_compiles_without_graph_break():
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
        return leanattn_attention_forward(module, q, k, v, None, scaling=0.3)[0] * 1.0

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q, k, v)
    torch.testing.assert_close(got, step(q, k, v), rtol=0, atol=0)
    eager_scores = torch.einsum("bhd,bhnd->bhn", q[:, :, 0], k.repeat_interleave(4, 1)) * 0.3
    logits = torch.cat([eager_scores, module.sinks.detach()[None, :, None].expand(2, 8, 1)], -1)
    probs = torch.softmax(logits, -1)[..., :-1]
    want = torch.einsum("bhn,bhnd->bhd", probs, v.repeat_interleave(4, 1))
    torch.testing.assert_close(got[:, 0], want, rtol=1e-5, atol=1e-5)
