"""leanattn.integrations.vllm_backend: the attention backend vLLM loads by the class path that
leanattn.integrations.vllm registers (it imports vLLM: only vLLM's processes import it).

vLLM's pieces and ours (vllm/v1/attention/backend.py has the interface):
  LeanAttnBackend          what vLLM asks of a backend: dtypes, head sizes, cache layouts
  LeanAttnMetadataBuilder  once per step: the batch's lengths, block table and query_start_loc
                           (host tensors on the CPU), and the plans, made on first use and
                           shared by every layer of the step
  LeanAttnImpl             per layer: writes the step's K/V into the paged cache, then runs the
                           step's decode rows and prefill chunks as one mixed batch
The cache is vLLM's [num_blocks, kv_heads, block_size, 2 x head_size] (logical order; strides
as the layout vLLM chose): K the first head_size values of each (block, head, token) row, V the
rest, read in place as leanattn's paged [num_pages, page_size, kv_heads, head_dim] through
strides.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar, Dict, Optional, Tuple

import torch
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.logger import init_logger
from vllm.v1.kv_cache_interface import KVCacheLayout

import leanattn
from leanattn import _leanattn as _ext

# LEANATTN_VLLM_THREADS=own: leanattn's own worker threads instead of vLLM's OpenMP team (for
# comparisons; the team is the default).
_THREADS_ENV = "LEANATTN_VLLM_THREADS"

logger = init_logger("vllm.leanattn")  # under vLLM's logger, so its handlers print it


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"leanattn's vLLM backend (LEANATTN_VLLM=1) does not support {what}; unset LEANATTN_VLLM "
        f"to run vLLM's own CPU attention")


class LeanAttnBackend(AttentionBackend):
    """vLLM's attention backend on leanattn's CPU engine (registered as CPU_ATTN)."""

    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list] = ["auto"]

    @staticmethod
    def get_name() -> str:
        return "CPU_ATTN"

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list:
        return [MultipleOf(16)]

    @classmethod
    def get_supported_head_sizes(cls) -> list:
        return list(range(16, 577, 16))  # leanattn's head_dim rule

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple:
        # Any layout reads through strides; head-major pages keep a head's tokens contiguous.
        return (KVCacheLayout.LBHNC, KVCacheLayout.LBNHC)

    @classmethod
    def supports_non_causal(cls) -> bool:
        return True

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_sink(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER

    @staticmethod
    def get_impl_cls() -> type:
        return LeanAttnImpl

    @staticmethod
    def get_builder_cls() -> type:
        return LeanAttnMetadataBuilder


class LeanAttnCustomBackend(LeanAttnBackend):
    """The same backend under vLLM's CUSTOM name (``--attention-backend CUSTOM``)."""

    @staticmethod
    def get_name() -> str:
        return "CUSTOM"


# The settings a plan is made for, beyond the step's lengths (one per distinct layer kind).
PlanKey = Tuple[int, int, int, Optional[int], Optional[float], bool, bool]


@dataclass
class LeanAttnMetadata:
    num_actual_tokens: int
    query_start_loc: torch.Tensor  # [num_reqs + 1] int32, host
    seq_lens: torch.Tensor  # [num_reqs] int32, host: each request's tokens, the new ones last
    block_table: torch.Tensor  # [num_reqs, max_blocks] int32
    causal: bool
    workers: int
    plans: Dict[PlanKey, leanattn.Plan] = field(default_factory=dict)

    def plan_for(self, key: PlanKey) -> leanattn.Plan:
        """The step's plan for layers of settings `key`, made by the first such layer."""
        plan = self.plans.get(key)
        if plan is None:
            q_heads, kv_heads, head_dim, window_left, softcap, sinks, alibi = key
            plan = leanattn.plan(
                self.seq_lens, q_heads=q_heads, kv_heads=kv_heads, head_dim=head_dim,
                workers=self.workers, causal=self.causal, window_left=window_left,
                softcap=softcap, sinks=sinks, alibi=alibi, query_start_loc=self.query_start_loc)
            self.plans[key] = plan
        return plan


_team_lent = False


def _engine_workers() -> int:
    """The workers every call runs with: vLLM's OpenMP team (lent to leanattn once per process,
    after vLLM's worker has bound it to its cores) unless LEANATTN_VLLM_THREADS=own."""
    global _team_lent
    workers = torch.get_num_threads()
    if os.environ.get(_THREADS_ENV, "").strip().lower() == "own":
        threads = "leanattn's own threads"
    else:
        if not _team_lent:
            _team_lent = bool(leanattn.use_openmp())
        threads = "vLLM's OpenMP team"
    logger.info_once("leanattn %s: vLLM's attention on leanattn's CPU engine, %d workers on %s",
                     leanattn.__version__, workers, threads)
    return workers


class LeanAttnMetadataBuilder(AttentionMetadataBuilder[LeanAttnMetadata]):
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        budget = vllm_config.scheduler_config.max_num_batched_tokens
        if budget > _ext.MAX_QUERY_TOKENS:
            raise _unsupported(
                f"max_num_batched_tokens={budget}: a request's query tokens per step are at most "
                f"{_ext.MAX_QUERY_TOKENS}; pass max_num_batched_tokens <= {_ext.MAX_QUERY_TOKENS}")
        self.workers = _engine_workers()

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> LeanAttnMetadata:
        m = common_attn_metadata
        if isinstance(m.causal, torch.Tensor):
            raise _unsupported("a per-request causal flag (dynamic causal attention)")
        n = m.num_reqs
        return LeanAttnMetadata(
            num_actual_tokens=m.num_actual_tokens,
            query_start_loc=m.query_start_loc_cpu[: n + 1].to(torch.int32),
            seq_lens=m.seq_lens[:n].to("cpu", torch.int32),
            block_table=m.block_table_tensor[:n],
            causal=bool(m.causal),
            workers=self.workers)


def cache_views(kv_cache: torch.Tensor, head_size: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """K and V of vLLM's cache [num_blocks, kv_heads, block_size, 2 x head_size] as leanattn's
    paged [num_blocks, block_size, kv_heads, head_size] views (no copy)."""
    return (kv_cache[..., :head_size].transpose(1, 2),
            kv_cache[..., head_size:].transpose(1, 2))


class LeanAttnImpl(AttentionImpl):
    calls: ClassVar[int] = 0  # forward calls that ran attention, all layers (the tests read it)

    def __init__(self, num_heads: int, head_size: int, scale: float, num_kv_heads: int,
                 alibi_slopes: Optional[list], sliding_window: Optional[int], kv_cache_dtype: str,
                 logits_soft_cap: Optional[float] = None, attn_type: str = AttentionType.DECODER,
                 kv_sharing_target_layer_name: Optional[str] = None,
                 sinks: Optional[torch.Tensor] = None) -> None:
        if attn_type != AttentionType.DECODER:
            raise _unsupported(f"attention type {attn_type!r} (decoder attention only)")
        if kv_cache_dtype != "auto":
            raise _unsupported(f"kv_cache_dtype={kv_cache_dtype!r} (the model's dtype, 'auto', only)")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads
        self.kv_cache_dtype = kv_cache_dtype
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
        self.attn_type = attn_type
        # vLLM's sliding_window counts the query's own key: window_left is one less.
        self.window_left = None if sliding_window is None else int(sliding_window) - 1
        self.softcap = float(logits_soft_cap) if logits_soft_cap else None
        self.alibi_slopes = (None if alibi_slopes is None
                             else torch.tensor(alibi_slopes, dtype=torch.float32))
        self.sinks = sinks  # loaded with the weights: made float32 at the first forward

    def _plan_key(self) -> PlanKey:
        return (self.num_heads, self.num_kv_heads, self.head_size, self.window_left,
                self.softcap, self.sinks is not None, self.alibi_slopes is not None)

    def forward(self, layer, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                kv_cache: torch.Tensor, attn_metadata: Optional[LeanAttnMetadata],
                output: torch.Tensor, output_scale: Optional[torch.Tensor] = None,
                output_block_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
        """query [num_tokens, num_heads, head_size], kv_cache as cache_views reads it, output
        [num_tokens, num_heads, head_size]: written for the step's actual tokens."""
        if output_scale is not None or output_block_scale is not None:
            raise _unsupported("fused output quantization")
        if attn_metadata is None:  # vLLM's warm-up pass
            return output
        md = attn_metadata
        n = md.num_actual_tokens
        LeanAttnImpl.calls += 1
        if self.sinks is not None and self.sinks.dtype != torch.float32:
            self.sinks = self.sinks.to(torch.float32)
        k_cache, v_cache = cache_views(kv_cache, self.head_size)
        leanattn.decode(
            query[:n], k_cache, v_cache, md.seq_lens, block_table=md.block_table,
            scale=self.scale, query_start_loc=md.query_start_loc, causal=md.causal,
            window_left=self.window_left, softcap=self.softcap, sinks=self.sinks,
            alibi_slopes=self.alibi_slopes, plan=md.plan_for(self._plan_key()),
            workers=md.workers, out=output[:n])
        return output

    def do_kv_cache_update(self, layer, key: torch.Tensor, value: torch.Tensor,
                           kv_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
        """key, value [num_tokens, kv_heads, head_size] into the slots of slot_mapping
        [num_tokens] (block x block_size + offset; negative: a padding token, not written)."""
        n = slot_mapping.shape[0]
        slots = slot_mapping
        if n and bool((slots < 0).any()):
            keep = slots >= 0
            slots, key, value = slots[keep], key[:n][keep], value[:n][keep]
        else:
            key, value = key[:n], value[:n]
        block_size = kv_cache.shape[2]
        blocks, offsets = slots // block_size, slots % block_size
        kv_cache[blocks, :, offsets, : self.head_size] = key
        kv_cache[blocks, :, offsets, self.head_size:] = value
