"""leanattn.integrations.vllm: vLLM's attention on leanattn's CPU engine, as a vLLM plugin.

The leanattn wheel declares ``register`` in the entry-point group ``vllm.general_plugins``, which
vLLM runs in each of its processes. With ``LEANATTN_VLLM=1`` in the environment, ``register``
puts :class:`LeanAttnBackend` (``vllm_backend.py``) in the place of vLLM's CPU attention
(``CPU_ATTN``: vLLM's CPU platform picks that backend whatever ``--attention-backend`` says) and
as ``CUSTOM`` (for a platform that honours ``--attention-backend CUSTOM``); without it vLLM runs
unchanged::

    LEANATTN_VLLM=1 vllm serve <model> ...              # or, in Python, before LLM(...):
    os.environ["LEANATTN_VLLM"] = "1"

Decode rows and prefill chunks of a step run as one mixed batch (``query_start_loc``), planned
once per step for all layers, on the OpenMP threads vLLM's CPU worker binds to its cores
(:func:`leanattn.use_openmp`). Configurations the backend lacks (quantized KV caches, encoder
attention) stop vLLM at start-up with a message naming them. docs/integration.md, "vLLM".
"""

from __future__ import annotations

import os

ENV = "LEANATTN_VLLM"
BACKEND = "leanattn.integrations.vllm_backend.LeanAttnBackend"
CUSTOM_BACKEND = "leanattn.integrations.vllm_backend.LeanAttnCustomBackend"


def enabled() -> bool:
    """Whether ``LEANATTN_VLLM`` asks for the backend ("1", "true", "yes", "on")."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def register() -> None:
    """vLLM's plugin hook: with LEANATTN_VLLM set, leanattn becomes vLLM's CPU attention."""
    if not enabled():
        return
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

    register_backend(AttentionBackendEnum.CPU_ATTN, BACKEND)
    register_backend(AttentionBackendEnum.CUSTOM, CUSTOM_BACKEND)
