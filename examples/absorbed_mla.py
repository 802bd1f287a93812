"""DeepSeek's multi-head latent attention (MLA) decoded in its absorbed form through leanattn:
one latent cache row per token (512 latent values + 64 rope values = 576), one KV head shared by
every query head, V read in place as the first 512 values of each row (no V cache).

For a random MLA layer with per-head up-projections W_UK, W_UV [heads, 128, 512]:
- non-absorbed (what transformers' DeepseekV3 computes): per head, K_t = [W_UK c_t ; k_rope_t]
  (192 wide), V_t = W_UV c_t (128 wide), out = softmax(q . K_t * scale) V;
- absorbed (what serving engines decode with): q' = [W_UK^T q_nope ; q_rope] (576 wide), scores
  q' . [c_t ; k_rope_t] (the same numbers), latent out o' = sum_t p_t c_t through
  ``leanattn.decode(q', latent, None, lens, head_dim_v=512)``, then out = W_UV o'.
The scale is 1/sqrt(192) in both (the model's qk_head_dim), so both give the same output; this
prints how far each form is from the fp64 non-absorbed attention.

    python examples/absorbed_mla.py [--dtype bfloat16] [--page-size 64]   (needs torch)
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, Optional, Sequence

import torch

import leanattn


def mla_layer(heads: int, rank: int, nope: int, rope: int, v_dim: int, lens: Sequence[int],
              gen: torch.Generator) -> Dict[str, torch.Tensor]:
    """Random float64 weights, latents and queries of one MLA layer's decode step: W_UK [heads,
    nope, rank], W_UV [heads, v_dim, rank], per request b latents c [b, t, rank] and rope keys
    k_rope [b, t, rope] (after the model's norm and rotary embedding), one new query token per
    request split as q_nope [b, heads, nope] and q_rope [b, heads, rope]."""
    batch, cap = len(lens), max(lens, default=0) + 1
    w = 1.0 / rank ** 0.5  # unit-variance keys and values from unit-variance latents
    return dict(
        w_uk=torch.randn(heads, nope, rank, generator=gen, dtype=torch.float64) * w,
        w_uv=torch.randn(heads, v_dim, rank, generator=gen, dtype=torch.float64) * w,
        c=torch.randn(batch, cap, rank, generator=gen, dtype=torch.float64),
        k_rope=torch.randn(batch, cap, rope, generator=gen, dtype=torch.float64),
        q_nope=torch.randn(batch, heads, nope, generator=gen, dtype=torch.float64),
        q_rope=torch.randn(batch, heads, rope, generator=gen, dtype=torch.float64),
        lens=torch.tensor(list(lens), dtype=torch.int32),
    )


def non_absorbed_sdpa(layer: Dict[str, torch.Tensor], scale: float) -> torch.Tensor:
    """[batch, heads, v_dim] in float64: per request, K and V expanded per head from the
    latents, torch's SDPA (K and V of different widths)."""
    outs = []
    for b, n in enumerate(layer["lens"].tolist()):
        c, k_rope = layer["c"][b, :n], layer["k_rope"][b, :n]
        k_nope = torch.einsum("hdr,tr->htd", layer["w_uk"], c)  # [heads, n, nope]
        k = torch.cat([k_nope, k_rope.expand(k_nope.shape[0], n, -1)], -1)  # [heads, n, 192]
        v = torch.einsum("hdr,tr->htd", layer["w_uv"], c)  # [heads, n, v_dim]
        q = torch.cat([layer["q_nope"][b], layer["q_rope"][b]], -1)[:, None]  # [heads, 1, 192]
        if n == 0:  # no keys: leanattn's convention, zeros
            outs.append(torch.zeros(v.shape[0], v.shape[2], dtype=torch.float64))
            continue
        outs.append(torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)[:, 0])
    return torch.stack(outs)


def latent_cache(layer: Dict[str, torch.Tensor], dtype: torch.dtype,
                 page_size: Optional[int]):
    """The absorbed cache in `dtype`: contiguous [batch, capacity, 1, rank + rope], or paged
    [num_pages, page_size, 1, rank + rope] with a shuffled block table. (cache, block_table)."""
    rows = torch.cat([layer["c"], layer["k_rope"]], -1)[:, :, None].to(dtype)
    if page_size is None:
        return rows, None
    lens = layer["lens"].tolist()
    per = [-(-n // page_size) for n in lens]
    order = torch.randperm(sum(per) + 1, generator=torch.Generator().manual_seed(7))
    pages = torch.zeros(len(order), page_size, 1, rows.shape[-1], dtype=dtype)
    table = torch.zeros(len(lens), max(per, default=0) + 1, dtype=torch.int32)
    used = 0
    for b, n in enumerate(lens):
        for i in range(per[b]):
            page = int(order[used])
            table[b, i] = page
            chunk = rows[b, i * page_size:min(n, (i + 1) * page_size)]
            pages[page, :len(chunk)] = chunk
            used += 1
    return pages, table


def absorbed_decode(layer: Dict[str, torch.Tensor], scale: float, dtype: torch.dtype,
                    page_size: Optional[int] = None) -> torch.Tensor:
    """[batch, heads, v_dim] in float64: W_UK absorbed into the query, leanattn over the latent
    cache (one KV head; V its first `rank` values, read in place), W_UV applied to the result."""
    rank = layer["c"].shape[-1]
    q_latent = torch.einsum("bhd,hdr->bhr", layer["q_nope"], layer["w_uk"])  # [batch, heads, rank]
    q = torch.cat([q_latent, layer["q_rope"]], -1).to(dtype)  # [batch, heads, rank + rope]
    cache, table = latent_cache(layer, dtype, page_size)
    o = leanattn.decode(q, cache, None, layer["lens"], block_table=table, head_dim_v=rank,
                        scale=scale)  # [batch, heads, rank]
    return torch.einsum("bhr,hvr->bhv", o.double(), layer["w_uv"])


def non_absorbed_decode(layer: Dict[str, torch.Tensor], scale: float,
                        dtype: torch.dtype) -> torch.Tensor:
    """The same step through leanattn in the non-absorbed form: K [batch, t, heads, 192] and
    V [batch, t, heads, v_dim] caches expanded from the latents, head_dim_v = v_dim."""
    k_nope = torch.einsum("hdr,btr->bthd", layer["w_uk"], layer["c"])
    k_rope = layer["k_rope"][:, :, None].expand(-1, -1, k_nope.shape[2], -1)
    k = torch.cat([k_nope, k_rope], -1).to(dtype)
    v = torch.einsum("hdr,btr->bthd", layer["w_uv"], layer["c"]).to(dtype)
    q = torch.cat([layer["q_nope"], layer["q_rope"]], -1).to(dtype)
    return leanattn.decode(q, k, v, layer["lens"], scale=scale).double()


def run(lens: Sequence[int] = (300, 0, 37, 1), heads: int = 16, rank: int = 512,
        nope: int = 128, rope: int = 64, v_dim: int = 128, dtype: torch.dtype = torch.float32,
        page_size: Optional[int] = None, seed: int = 0) -> Dict[str, torch.Tensor]:
    """Both forms of one decode step; returns the layer, the fp64 non-absorbed attention
    ("want"), the absorbed ("absorbed") and non-absorbed ("expanded") leanattn outputs."""
    layer = mla_layer(heads, rank, nope, rope, v_dim, lens, torch.Generator().manual_seed(seed))
    scale = (nope + rope) ** -0.5  # the model's 1/sqrt(qk_head_dim), in both forms
    return dict(layer=layer, scale=torch.tensor(scale), want=non_absorbed_sdpa(layer, scale),
                absorbed=absorbed_decode(layer, scale, dtype, page_size),
                expanded=non_absorbed_decode(layer, scale, dtype))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    parser.add_argument("--page-size", type=int, default=None, help="a paged latent cache")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    r = run(dtype=dtype, page_size=args.page_size)
    lens = r["layer"]["lens"].tolist()
    print(f"MLA decode step: 16 query heads, requests of {lens} tokens, scale 1/sqrt(192), "
          f"{args.dtype} caches")
    print(f"  absorbed cache: {576 * dtype.itemsize} bytes per token (one 576-wide row); "
          f"non-absorbed K + V: {16 * (192 + 128) * dtype.itemsize}")
    tolerance = 1e-4 if dtype == torch.float32 else 3e-2
    worst = 0.0
    for name in ("absorbed", "expanded"):
        err = (r[name] - r["want"]).abs().max().item()
        worst = max(worst, err)
        print(f"  max |{name} - fp64 non-absorbed| = {err:.2e}")
    agree = worst <= tolerance
    print(f"both forms within {tolerance:g} of the non-absorbed attention: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
