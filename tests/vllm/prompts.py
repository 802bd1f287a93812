"""The prompts of the vLLM tests, as rounds (lists of prompts, each a list of token ids): the
rounds run one after another on one engine, so a later round can hit the prefix cache that an
earlier one filled."""

from __future__ import annotations

import random

import models


def random_rounds(seed: int, vocab: int = models.RANDOM_VOCAB) -> list:
    """Two rounds of token-id prompts: mixed lengths (7 to 1000), then prompts sharing a prefix
    of 512 tokens and a whole prompt with one of the first round."""
    rng = random.Random(seed)
    first = [[rng.randrange(100, vocab) for _ in range(n)] for n in (7, 130, 1000, 333, 64)]
    second = [first[2][:512] + [rng.randrange(100, vocab) for _ in range(90)],
              first[1] + [rng.randrange(100, vocab)],
              [rng.randrange(100, vocab) for _ in range(40)]]
    return [first, second]


def text_rounds(folder: str) -> list:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    story = ("Decoding one token reads the whole key-value cache, so attention at long context is "
             "bound by memory bandwidth. LeanAttention splits the total work of a batch into equal "
             "ranges, one per worker, and merges the partial softmax states exactly. ")
    chats = ["What is the capital of France?",
             "Write a short poem about the sea.",
             "Summarize this text: " + story * 3,
             "List three prime numbers."]
    ids = [tok.apply_chat_template([{"role": "user", "content": c}], add_generation_prompt=True,
                                   tokenize=True, return_dict=True)["input_ids"] for c in chats]
    second = [ids[2][: len(ids[2]) - 5] + tok.encode(" Then explain it to a child."),
              ids[0]]
    return [ids, second]
