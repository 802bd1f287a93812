"""leanattn: decode-phase attention built on LeanAttention (stream-K).

The KV work of the whole batch (every request x KV head x tile of tokens) is cut into equal
ranges, one per persistent worker, and partial softmax states are merged exactly in a fixed
order, so every worker stays busy whatever the mix of lengths and the result is plain attention.

Functions:
    decode(q, k_cache, v_cache, seq_lens, ...)  attention of one query token per request
    plan(seq_lens, q_heads=..., ...)            the schedule, to inspect or reuse (Plan)
    reference(q, k_cache, v_cache, seq_lens)    the fp64 reference (NumPy)
    merge_states(out_a, lse_a, out_b, lse_b)    combine results over disjoint key sets
    quantize_kv(cache, kv_dtype)                a quantized cache and its scales (fp8, int8;
                                                ggml's q8_0, q4_0 blocks: scales inside)
    dequantize_kv(stored, scale, kv_dtype)      back to float32
    use_openmp()                                the CPU engine's workers on the process's
                                                OpenMP team (torch's, vLLM's) instead of its own

Classes:
    Plan                                        a schedule made by plan()
    DecodeStep(q, k_cache, v_cache, max_seq_len=...)
                                                a step of fixed bounds planned anew for each
                                                step's lengths (CUDA graphs: planning="device"
                                                reads them on the GPU, "host" copies a host plan)

Modules (imported on demand; they need PyTorch):
    leanattn.distributed                  context-parallel decode on torch.distributed
    leanattn.torch_ops                    torch.ops.leanattn.decode / decode_ (torch.compile)
    leanattn.integrations.transformers    attn_implementation="leanattn" for transformers
    leanattn.integrations.vllm            vLLM's attention backend on the CPU (LEANATTN_VLLM=1)

Command line: ``leanattn plan|bench|check|--version`` (also ``python -m leanattn``), the compiled
tool installed with the package.

Attributes:
    __version__   the library version (CMakeLists.txt's project version, as the C++ library's)
    backends      the executors built in, e.g. ("cpu",) or ("cpu", "cuda")
"""

import sys as _sys

from . import _leanattn as _ext
from ._decode import decode, reference
from ._merge import merge_states
from ._openmp import use_openmp
from ._plan import Plan, plan
from ._quantize import dequantize_kv, quantize_kv
from ._step import DecodeStep

# Public names: __all__ below. Helpers are imported under private names, so that dir(leanattn)
# lists the API (and the submodules a caller imported), not typing's names.
__version__: str = _ext.__version__
backends: "tuple[str, ...]" = tuple(_ext.backends)


def simd_targets() -> "list[str]":
    """SIMD targets of the CPU engine that this CPU supports, best first (the first is used)."""
    return list(_ext.simd_targets())


def default_workers() -> int:
    """Worker threads decode() and plan() use when ``workers`` is None (one per core)."""
    return int(_ext.default_cpu_workers())


# The torch custom ops (torch.ops.leanattn.decode, decode_) when torch is already imported: no
# cost without torch. Otherwise `import leanattn.torch_ops` registers them.
if "torch" in _sys.modules:
    from . import torch_ops  # noqa: F401

__all__ = [
    "DecodeStep",
    "Plan",
    "__version__",
    "backends",
    "decode",
    "default_workers",
    "dequantize_kv",
    "merge_states",
    "plan",
    "quantize_kv",
    "reference",
    "simd_targets",
    "use_openmp",
]
