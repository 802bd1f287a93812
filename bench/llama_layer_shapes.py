#!/usr/bin/env python3
"""Random-weight GGUF models with the attention shapes people run (bench/llama_layer_shapes.sh).

Run with the torch venv's python (scripts/python-env.sh's torch venv: transformers, torch,
tokenizers). Makes, for one shape, a transformers LlamaForCausalLM with random weights
(torch.manual_seed(0), transformers' own initialization) and converts it with llama.cpp's own
convert_hf_to_gguf.py (the vendored tree of scripts/llama-cpp.sh, with its gguf-py), q8_0
weights. Only attention's shape matters to what is measured; the rest is kept small or shared:
  8b   Llama-3-8B's attention: 32 query heads, 8 KV heads, head size 128, hidden 4096
  1b   Llama-3.2-1B's attention: 32 query heads, 8 KV heads, head size 64, hidden 2048
an intermediate size of 1024, tied embeddings, rope theta 500000, a trained context of 131072,
and SmolLM2's tokenizer (vocabulary 49152): rebuilt as a tokenizer.json from the tokens and
merges of the GGUF of scripts/gguf-model.sh smollm2 (byte-level BPE, digits split one by one,
as SmolLM2's own), which convert_hf_to_gguf.py recognizes as "smollm" by its hash.
  python bench/llama_layer_shapes.py --shape 8b --layers 2 --src <llama.cpp src> \\
      --tokenizer-gguf <SmolLM2.gguf> --out model.gguf
  python3 bench/llama_layer_shapes.py --summary results.csv   (the table of the note, any python)
The summary's attention time per layer is the step's time above the depth-0 step's (stock -fa on,
f16), divided by the layers: (1/tokens_per_s(depth) - 1/tokens_per_s(0)) / layers; scaled to the
full models' layers (32 for 8b, 16 for 1b) it is what attention adds to their decode step. For
the backend, its own time per node (LEANATTN_GGML_STATS, f16 caches) is given beside it: since
2026-12-07 the backend takes f16 prompt nodes too, so that figure mixes the prefill's nodes with
the decode's and is not a decode node's time (the step-based attention time per layer is).
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

SHAPES = {  # name: (hidden, query heads, KV heads, head size)
    "8b": (4096, 32, 8, 128),
    "1b": (2048, 32, 8, 64),
}


def tokenizer_files(gguf_path: str, src: pathlib.Path, folder: str) -> None:
    """tokenizer.json and tokenizer_config.json of SmolLM2, from its GGUF's vocabulary."""
    sys.path.insert(0, str(src / "gguf-py"))
    import gguf  # llama.cpp's own gguf-py, the tree's version
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    reader = gguf.GGUFReader(gguf_path)

    def field(name):
        return reader.fields[name].contents()

    tokens = field("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field("tokenizer.ggml.merges")]
    types = field("tokenizer.ggml.token_type")
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    special = [t for t, ty in zip(tokens, types) if ty == 3]  # control tokens
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=tokens[field("tokenizer.ggml.bos_token_id")],
        eos_token=tokens[field("tokenizer.ggml.eos_token_id")],
        unk_token=tokens[field("tokenizer.ggml.unknown_token_id")],
        pad_token=tokens[field("tokenizer.ggml.padding_token_id")],
        additional_special_tokens=special)
    fast.save_pretrained(folder)


FULL_LAYERS = {"8b": 32, "1b": 16}


def summary(path: str) -> int:
    import csv

    rows = list(csv.DictReader(open(path)))
    base = {}
    for r in rows:
        if r["depth"] == "0" and r["config"] == "stock-fa-on" and r["cache"] == "f16":
            base[r["shape"]] = 1e3 / float(r["tokens_per_s"])
    print("| shape | depth | cache | config | tokens/s | ms/token | attention ms/layer | "
          "x full layers (ms/token) | backend's node ms | vs stock's best |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    groups = {}
    for r in rows:
        if r["depth"] != "0":
            groups.setdefault((r["shape"], r["depth"], r["cache"]), []).append(r)
    for (shape, depth, cache), group in groups.items():
        best = max(float(r["tokens_per_s"]) for r in group if r["config"] != "leanattn")
        for r in group:
            ts = float(r["tokens_per_s"])
            layers = int(r["layers"])
            attn = (1e3 / ts - base[shape]) / layers
            node = ""
            if r["config"] == "leanattn" and cache == "f16" and r["leanattn_nodes"]:
                node = f"{float(r['leanattn_ms']) / int(r['leanattn_nodes']):.2f}"
            ratio = f"{ts / best:.2f}x" if r["config"] == "leanattn" else ""
            print(f"| {shape} | {depth} | {cache} | {r['config']} | {ts:.1f} "
                  f"(±{float(r['stddev']):.1f}) | {1e3 / ts:.1f} | {attn:.2f} | "
                  f"{attn * FULL_LAYERS[shape]:.0f} | {node} | {ratio} |")
    for shape, t in base.items():
        print(f"\ndepth 0, {shape}: {t:.2f} ms/token (stock -fa on, f16)")
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        return summary(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=SHAPES, required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--src", required=True, help="llama.cpp's source tree (convert_hf_to_gguf.py)")
    ap.add_argument("--tokenizer-gguf", required=True, help="SmolLM2's GGUF (its tokenizer)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--outtype", default="q8_0")
    args = ap.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, heads, kv_heads, head_dim = SHAPES[args.shape]
    src = pathlib.Path(args.src)
    with tempfile.TemporaryDirectory() as folder:
        tokenizer_files(args.tokenizer_gguf, src, folder)
        config = LlamaConfig(
            vocab_size=49152, hidden_size=hidden, intermediate_size=1024,
            num_hidden_layers=args.layers, num_attention_heads=heads,
            num_key_value_heads=kv_heads, head_dim=head_dim, max_position_embeddings=131072,
            rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1,
            eos_token_id=2, pad_token_id=2, torch_dtype="float16")
        torch.manual_seed(0)
        model = LlamaForCausalLM(config).to(torch.float16)
        model.save_pretrained(folder, safe_serialization=True)
        del model
        out = pathlib.Path(args.out)
        # The tree's own gguf-py ahead of any installed gguf package (the converter needs its
        # version). The converter imports sentencepiece before it looks for a tokenizer.model,
        # which a BPE tokenizer has none of; where the package is missing (the torch venv) a
        # stand-in that is never called lets it go on to tokenizer.json.
        stub = pathlib.Path(folder) / "stub"
        try:
            import sentencepiece  # noqa: F401
        except ImportError:
            (stub / "sentencepiece").mkdir(parents=True)
            (stub / "sentencepiece" / "__init__.py").write_text(
                "class SentencePieceProcessor:  # never called: no tokenizer.model\n    pass\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(src / "gguf-py"), str(stub)] +
            [p for p in [os.environ.get("PYTHONPATH")] if p]))
        env.pop("NO_LOCAL_GGUF", None)
        part = out.with_name(out.name + ".part")
        subprocess.run([sys.executable, str(src / "convert_hf_to_gguf.py"), folder, "--outfile",
                        str(part), "--outtype", args.outtype], check=True,
                       env=env)
        part.rename(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
