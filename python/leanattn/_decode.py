"""leanattn.decode and leanattn.reference: one decode step of attention over a KV cache, with
the flash_attn_with_kvcache argument conventions. Thin wrappers over the compiled module: they
check the Python-level arguments, allocate the outputs in q's framework and pass zero-copy views.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from . import _arrays
from . import _blocks
from . import _leanattn as _ext
from ._plan import Plan
from ._variant import is_plain, variant_args

_STRATEGIES = ("lean", "split", "head")


# The keywords of decode() that describe a problem beyond q, k_cache, v_cache and seq_lens, with
# their types in torch's schema language and their defaults: the one list that describe(),
# reference(), DecodeStep and the torch ops (their schemas, in this order) take.
PROBLEM_FIELDS: Dict[str, Tuple[str, Any]] = {
    "block_table": ("Tensor?", None),
    "scale": ("float?", None),
    "sinks": ("Tensor?", None),
    "alibi_slopes": ("Tensor?", None),
    "k_scale": ("Tensor?", None),
    "v_scale": ("Tensor?", None),
    "kv_dtype": ("str?", None),
    "softcap": ("float?", None),
    "window_left": ("int?", None),
    "v_dtype": ("str?", None),
    "head_dim_v": ("int?", None),
    "causal": ("bool", True),
    "query_start_loc": ("Tensor?", None),
}
# Those that are arrays: a DecodeStep takes them at every call (it fixes the others when made).
ARRAY_FIELDS = ("block_table", "sinks", "alibi_slopes", "k_scale", "v_scale")
# Those a plan is made for: decode's fast path takes them beside a plan (_plan.plan_for).
PLANNED_FIELDS = ("causal", "window_left", "softcap", "head_dim_v")


def describe(q: Any, k_cache: Any, v_cache: Any, seq_lens: Any, problem: Dict[str, Any]) -> Any:
    """The compiled module's description of a call (``_leanattn.Problem``) from decode()'s
    arguments, those of ``problem`` named in PROBLEM_FIELDS (TypeError for any other), each
    checked in Python as :func:`decode` documents: q and the caches as views in q's framework
    with their dtype hints (NumPy bfloat16 and float8 as integer views), sinks, slopes and scales
    on q's device, seq_lens on the host, or None (a plan's; a step's bound). The compiled module
    checks the rest when it reads the arrays."""
    unknown = problem.keys() - PROBLEM_FIELDS.keys()
    if unknown:
        raise TypeError(f"{min(unknown)}: not one of the keywords of leanattn.decode that "
                        f"describe the problem ({', '.join(PROBLEM_FIELDS)})")
    f = problem.get
    q = _arrays.as_array(q)
    qv, q_hint = _arrays.tensor_view(q, "q")
    kv, k_hint = _arrays.kv_view(k_cache, "k_cache", f("kv_dtype"))
    v_dtype = f("v_dtype")
    if v_cache is None:
        if v_dtype is not None:
            raise ValueError(
                f"v_dtype: V read from K's rows (v_cache None) has K's type: pass v_dtype=None "
                f"(got {v_dtype!r})"
            )
        vv, v_hint = None, ""
    elif v_dtype is not None:
        # V's own type; whether it mixes with K's is the compiled module's check (v_dtype).
        vv, v_hint = _arrays.value_view(v_cache, v_dtype)
    else:
        vv, v_hint = _arrays.kv_view(v_cache, "v_cache", f("kv_dtype"))
        if k_hint != v_hint:
            raise TypeError(
                f"v_cache: dtype must match k_cache's ({_arrays.dtype_name(k_hint)}), "
                f"got {_arrays.dtype_name(v_hint)}; for V of another type than K's, pass v_dtype"
            )
        v_hint = ""
    lens = None
    if seq_lens is not None:
        lens = _arrays.host_index_array(seq_lens, "seq_lens", 1, "[batch]")
    starts = f("query_start_loc")
    if starts is not None:
        starts = _arrays.host_index_array(starts, "query_start_loc", 1, "[batch + 1]")
    table = f("block_table")
    if table is not None and _arrays.on_cuda(q):
        table = _arrays.device_index_array(table, "block_table", 2, "[batch, max_pages]", q)
    elif table is not None:
        table = _arrays.host_index_array(table, "block_table", 2, "[batch, max_pages]")
    causal, window, cap, sinks, slopes = variant_args(
        f("causal", True), f("window_left"), f("softcap"), f("sinks"), f("alibi_slopes"),
        q_heads=_q_rows(q)[-1], like=q)
    return _ext.Problem(
        qv, kv, vv, lens, table, _arrays.optional_scale(f("scale")), causal, window, cap,
        _arrays.optional_positive_int(f("head_dim_v"), "head_dim_v"), sinks, slopes,
        _arrays.scale_array(f("k_scale"), "k_scale", q),
        _arrays.scale_array(f("v_scale"), "v_scale", q), k_hint, v_hint, q_hint, starts)


def decode(
    q: Any,
    k_cache: Any,
    v_cache: Any = None,
    seq_lens: Any = None,
    *,
    block_table: Any = None,
    scale: Optional[float] = None,
    strategy: str = "lean",
    workers: Optional[int] = None,
    tile: Optional[int] = None,
    return_lse: bool = False,
    plan: Optional[Plan] = None,
    out: Any = None,
    lse_out: Any = None,
    causal: bool = True,
    window_left: Optional[int] = None,
    softcap: Optional[float] = None,
    sinks: Any = None,
    alibi_slopes: Any = None,
    kv_dtype: Optional[str] = None,
    k_scale: Any = None,
    v_scale: Any = None,
    v_dtype: Optional[str] = None,
    head_dim_v: Optional[int] = None,
    query_start_loc: Any = None,
) -> Union[Any, Tuple[Any, Any]]:
    """Attention of the new query tokens of each request over its KV cache (the decode phase).

    For request ``b`` and query head ``h`` (KV head ``h // (q_heads // kv_heads)``, so GQA and
    MQA are the same call), with scores ``s_j = scale * q[b, h] . K_j`` over the first
    ``seq_lens[b]`` tokens of the request's cache::

        out[b, h] = sum_j softmax(s)_j * V_j        lse[b, h] = log(sum_j exp(s_j))

    Args:
        q: ``[batch, q_heads, head_dim]`` (one new token per request) or
            ``[batch, q_len, q_heads, head_dim]`` (q_len new tokens per request, the last q_len
            positions of its cache: speculative decoding, multi-token prediction; every
            non-empty request needs ``seq_len >= q_len``) float32, float16 or bfloat16: a NumPy
            array (bfloat16 through ml_dtypes) or a PyTorch CPU tensor; with the CUDA backend
            (``"cuda" in leanattn.backends``) also a PyTorch CUDA tensor or a CuPy array.
            head_dim (Q's and K's width) is a multiple of 16, at most 576 (absorbed MLA's 512
            latent + 64 rope values).
        k_cache: the keys, same framework and device as q (dtype may differ from q's), either
            contiguous ``[batch, capacity, kv_heads, head_dim]`` (request b's token t at
            ``[b, t]``) or, with ``block_table``, paged ``[num_pages, page_size, kv_heads,
            head_dim]``.
        v_cache: the values: k_cache's shape and dtype but for the last dimension, V's width
            ``head_dim_v`` (at most head_dim: DeepSeek's K 192 / V 128); with ``v_dtype``, of
            V's own type. None: V is the first ``head_dim_v`` values of each of K's rows, read
            in place (DeepSeek's absorbed MLA: one latent cache ``[..., 1, 576]``, K all 576
            values, V its first 512: ``decode(q, latent, None, lens, head_dim_v=512)``); an
            8-bit cache then takes ``k_scale`` for V too (``v_scale`` must be None).
        seq_lens: ``[batch]`` integer tokens per request (0 allowed: the output row is zeros and
            the lse ``-inf``); at most capacity, or what the block table maps. May be None when
            ``plan`` is given: the plan's lengths are used.
        block_table: ``[batch, max_pages]`` int32: request b's token t is in page
            ``block_table[b, t // page_size]``, row ``t % page_size``. Only the entries a
            request uses are read; they must be in ``[0, num_pages)``.
        scale: softmax scale; None (the default) or 0 means ``1 / sqrt(head_dim)``, as in C++.
        strategy: ``"lean"`` (stream-K: equal work per worker), ``"split"`` (FlashDecoding
            split-KV) or ``"head"`` (one worker per request and KV head).
        workers: persistent worker threads (default: one per core; on CUDA, thread blocks,
            default: the kernel's occupancy). One engine is kept per worker count, so threads
            are created once, not per call.
        tile: tokens per lean tile, the planner's granularity (default: by head_dim).
        return_lse: also return the log-sum-exp.
        plan: a plan from :func:`leanattn.plan` for these seq_lens and head counts; its
            strategy and tile are used. Saves planning when the same batch shape repeats
            (without one, the engine reuses the plan of its previous call when the shapes and
            seq_lens are the same).
        out: ``[batch, q_heads, head_dim_v]`` in q's dtype, framework and device: the output is
            written there (head_dim contiguous; other strides allowed) and nothing is allocated.
            It must not overlap q, k_cache, v_cache or lse_out.
        lse_out: ``[batch, q_heads]`` float32 on q's device: the lse is written there (implies
            ``return_lse``).
        causal: with q_len > 1, query i sees keys up to position ``seq_len - q_len + i``
            (default); ``False``: every query sees every key.
        window_left: sliding window: a query sees only the keys at most ``window_left``
            positions before it (flash-attn's ``window_size=(window_left, -1)``); None or -1:
            no window. Only the tiles some query sees are planned and read.
        softcap: logits soft-cap, ``s = softcap * tanh(s / softcap)`` after scaling; None or 0:
            off.
        sinks: ``[q_heads]`` float32: a sink logit per query head, with no value, joining the
            softmax denominator (gpt-oss).
        alibi_slopes: ``[q_heads]`` float32: ALiBi, ``s += -slope * |key_pos - query_pos|``.
        Variants combine freely; with 4-D q, out is ``[batch, q_len, q_heads, head_dim_v]`` and
        lse ``[batch, q_len, q_heads]``. Every engine computes them (CPU and CUDA). With CUDA
        arrays, sinks and alibi_slopes are used on q's device: a float32 tensor already there
        is read in place, anything else is copied there (never read on the host).
        Semantics: docs/numerics.md, "Variants".
        kv_dtype: an 8-bit cache (quantized KV, read at 8 bits, never widened in memory):
            ``"fp8_e4m3"`` or ``"fp8_e5m2"`` for uint8 caches holding fp8 bytes, ``"int8"``
            (optional for int8 caches). torch.float8_e4m3fn / float8_e5m2 tensors and
            ml_dtypes float8 arrays need none. Or ggml's block formats (llama.cpp's
            ``--cache-type-k q8_0``), ``"q8_0"`` or ``"q4_0"``, for uint8 caches holding ggml's
            bytes: each row of head_dim values (head_dim a multiple of 32) is head_dim / 32
            blocks of 32 values, 34 bytes (q8_0: an f16 scale d, 32 int8 codes; value d x q) or
            18 bytes (q4_0: an f16 d, 16 bytes of nibbles, value j in the low nibble of byte j,
            value j + 16 in its high nibble; value d x (nibble - 8)). The cache's last
            dimension is then the row's bytes, head_dim / 32 x 34 (or x 18):
            ``[batch, capacity, kv_heads, row_bytes]`` or paged ``[num_pages, page_size,
            kv_heads, row_bytes]`` (row_bytes contiguous, other strides any, in bytes); head_dim
            is q's. No k_scale / v_scale (the scales are in the blocks). CPU engine and
            reference only (the CUDA engine refuses them). :func:`leanattn.quantize_kv` makes
            such caches; llama.cpp's K/V tensors are the same bytes.
            Q and out stay float32/float16/bfloat16.
        k_scale, v_scale: the 8-bit cache's float32 scales (value = stored x scale, as vLLM's
            and FlashInfer's k_scale / v_scale): a scalar (per tensor), ``[kv_heads]`` (per KV
            head), or the cache's shape without head_dim, ``[batch, capacity, kv_heads]`` /
            paged ``[num_pages, page_size, kv_heads]`` (per token and KV head). Both required
            for an 8-bit cache (refused for q8_0 / q4_0), same shape, finite and > 0.
            :func:`leanattn.quantize_kv` makes
            them. Every engine reads them. With CUDA arrays they are used on q's device: float32
            contiguous tensors there are read in place, anything else (a Python float, host
            arrays, another dtype) is converted there by q's framework; their values are not
            checked then (a device's memory is not read on the host: keeping them finite and
            > 0 is the caller's). docs/numerics.md, "Quantized KV caches".
        v_dtype: V's type where it differs from K's (llama.cpp's ``-ctk`` / ``-ctv``, e.g. a
            q8_0 K with an f16 V): ``"f16"`` (v_cache float16), ``"q8_0"`` or ``"q4_0"``
            (v_cache uint8, ggml's bytes, its last dimension V's row bytes); None (the default):
            V's type is K's (``kv_dtype``, or k_cache's own dtype). ``kv_dtype`` then names K's
            type only (None for a float16 k_cache). Only f16, q8_0 and q4_0 mix: K's type must
            be one of them too (a float32 or bfloat16 K, an 8-bit K: ValueError naming
            v_dtype). E.g. ``decode(q, k_q8, v_f16, lens, kv_dtype="q8_0", v_dtype="f16")`` or
            ``decode(q, k_f16, v_q4, lens, v_dtype="q4_0")``. CPU engine and reference only
            (with CUDA arrays: ValueError naming v_dtype). Not with ``v_cache`` None (V is then
            of K's type).
        head_dim_v: V's and the output's width, a multiple of 16 (of 32 for q8_0 / q4_0),
            at most head_dim. None (the default): v_cache's last dimension (its row bytes'
            values for q8_0 / q4_0); without v_cache, the plan's head_dim_v when ``plan`` is
            given, else head_dim (V = K's whole rows). Given with v_cache, it must equal
            v_cache's width (ValueError naming head_dim_v). K and V of any different widths run
            on the CPU engine and the reference; the CUDA engine runs DeepSeek's K 192 / V 128
            and absorbed MLA's K 576 / V 512 with v_cache None (a V cache of its own there:
            ValueError naming v_cache) and refuses other pairs (ValueError naming head_dim_v).
            V in K's rows at K's whole width (v_cache None, head_dim_v None) runs on every
            engine.
        query_start_loc: a mixed batch (prefill chunks beside decode rows: vLLM's
            ``query_start_loc``, FlashAttention's ``cu_seqlens_q``): ``[batch + 1]`` integer
            prefix sums from 0 of the requests' query token counts, read on the host. q is then
            ``[total query tokens, q_heads, head_dim]``, request b's tokens its rows
            ``query_start_loc[b]:query_start_loc[b + 1]``, the last that many positions of its
            cache (causal among them unless ``causal=False``; a count of 0 computes nothing;
            at most 8192 per request), and out / lse are ``[total query tokens, q_heads, ...]``.
            Every variant, cache type and layout as for decode. The CUDA engine takes counts
            up to 256 (ValueError naming query_start_loc past them); a DecodeStep made with
            it is a mixed step (on the CPU; :class:`DecodeStep`); with ``plan``, one made with
            the same query_start_loc.

    Returns:
        ``out`` ``[batch, q_heads, head_dim_v]`` in q's dtype and framework (the ``out`` argument
        itself when given); with ``return_lse`` or ``lse_out`` the pair ``(out, lse)``, lse
        ``[batch, q_heads]`` float32 (natural log).

    Inputs are read in place through DLPack (no copies). Strided views are accepted when the
    last (head_dim) dimension is contiguous and no stride is negative. On the CPU the call
    returns when the result is written; on CUDA it is launched asynchronously on the
    framework's current stream (seq_lens are read on the host; a host block_table is copied
    to the device). There is no autograd: PyTorch inputs are read through detached views.

    With ``plan``, ``out`` and PyTorch tensors or NumPy float32/float16 arrays (and seq_lens
    None, no block_table, no sinks, ALiBi, kv_dtype, v_dtype or scales, head_dim_v None or V's
    own width; causal, window_left and softcap allowed), the call takes a fast path: PyTorch
    tensors are read through the DLPack C exchange API, with no Python work per tensor and no
    allocation (docs/integration.md, "Per-call overhead").

    Raises:
        ValueError: a shape or value breaks a rule (the message starts with the argument name).
        TypeError: an unsupported dtype.
    """
    width = _arrays.optional_positive_int(head_dim_v, "head_dim_v")
    if (
        sinks is None
        and alibi_slopes is None
        and kv_dtype is None
        and k_scale is None
        and v_scale is None
        and v_dtype is None
        and query_start_loc is None
        and out is not None
        and type(plan) is Plan
        and seq_lens is None
        and block_table is None
        and tile is None
        and strategy == "lean"
        and (width == 0 or width == _plain_width(v_cache, plan))
    ):
        scale_f = 0.0 if scale is None else _arrays.optional_scale(scale)
        workers_n = 0 if workers is None else _arrays.optional_positive_int(
            workers, "workers", _ext.MAX_WORKERS)
        # The variants without arrays ride along (the plan must have been made for them).
        causal_b, window, cap = (True, -1, 0.0) if is_plain(
            causal, window_left, softcap, None, None) else variant_args(
                causal, window_left, softcap, None, None, q_heads=0)[:3]
        stream = _arrays.current_stream(q) if getattr(q, "is_cuda", False) else 0
        # PyTorch tensors, or host float32/float16 arrays (NumPy): no Python-level checks.
        if _ext._decode_planned(q, k_cache, v_cache, out, lse_out, plan._impl, scale_f,
                                workers_n, stream, causal_b, window, cap):
            return (out, lse_out) if (return_lse or lse_out is not None) else out
    return _decode_general(
        q, k_cache, v_cache, seq_lens, strategy, workers, tile, return_lse, plan, out, lse_out,
        dict(block_table=block_table, scale=scale, causal=causal, window_left=window_left,
             softcap=softcap, sinks=sinks, alibi_slopes=alibi_slopes, kv_dtype=kv_dtype,
             k_scale=k_scale, v_scale=v_scale, v_dtype=v_dtype, head_dim_v=head_dim_v,
             query_start_loc=query_start_loc))


def _plain_width(v_cache: Any, plan: Plan) -> int:
    """V's width as the fast path reads it (no v_dtype, so no ggml blocks): the plan's without
    v_cache, else v_cache's last dimension (0 for what has none)."""
    if v_cache is None:
        return int(plan._impl.head_dim_v)
    shape = getattr(v_cache, "shape", ())
    return int(shape[-1]) if len(shape) else 0


def _decode_general(
    q: Any, k_cache: Any, v_cache: Any, seq_lens: Any, strategy: str, workers: Optional[int],
    tile: Optional[int], return_lse: bool, plan: Optional[Plan], out: Any, lse_out: Any,
    problem: Dict[str, Any],
) -> Union[Any, Tuple[Any, Any]]:
    """decode() with every argument checked in Python (any framework, any option); ``problem``:
    the keywords of PROBLEM_FIELDS."""
    strategy = _arrays.require_str(strategy, "strategy")
    workers_n = _arrays.optional_positive_int(workers, "workers", _ext.MAX_WORKERS)
    tile_n = _arrays.optional_positive_int(tile, "tile")
    width = _arrays.optional_positive_int(problem["head_dim_v"], "head_dim_v")
    plan_impl = None
    if plan is not None:
        if not isinstance(plan, Plan):
            raise TypeError(f"plan: must be a leanattn.Plan (got {type(plan).__name__})")
        if strategy != "lean" and strategy != plan.strategy:
            raise ValueError(
                f"strategy: the plan was made for '{plan.strategy}' (got '{strategy}')"
            )
        if tile_n and tile_n != plan.tile:
            raise ValueError(f"tile: the plan was made for tile {plan.tile} (got {tile_n})")
        plan_impl = plan._impl
        if v_cache is None and width == 0:
            width = plan_impl.head_dim_v  # V in K's rows at the plan's width
    elif strategy not in _STRATEGIES:
        raise ValueError(f"strategy: must be one of lean, split, head (got '{strategy}')")
    elif seq_lens is None:
        raise ValueError("seq_lens: required unless plan is given")

    q = _arrays.as_array(q)
    described = describe(q, k_cache, v_cache, seq_lens, problem)
    rows = _q_rows(q)  # (batch, q_heads) or (batch, q_len, q_heads)
    if out is None:
        v_type = described.v_dtype or described.kv_dtype
        out, out_view = _arrays.empty_like(
            q, rows + (_value_width(int(q.shape[-1]), described.v_cache, v_type, width),))
    else:
        out_view = _arrays.output_view(out, "out", q)
    want_lse = return_lse or lse_out is not None
    lse, lse_view = lse_out, None
    if lse_out is not None:
        lse_view = _arrays.output_view(lse_out, "lse_out", q)
    elif return_lse:
        lse, lse_view = _arrays.empty_like(q, rows, float32=True)
    _ext._decode(described, out_view, lse_view, strategy, workers_n, tile_n, plan_impl,
                 _arrays.current_stream(q))
    return (out, lse) if want_lse else out


def _value_width(head_dim: int, v_view: Any, v_type: str, head_dim_v: int) -> int:
    """The output's last dimension, V's width, as the compiled module reads it (which checks it,
    naming the argument): head_dim_v when given; else v_cache's last dimension, for ggml's blocks
    the values of its row bytes (head_dim for a row of K's bytes); else (v_cache None) head_dim.
    """
    if head_dim_v:
        return head_dim_v
    shape = tuple(getattr(v_view, "shape", ()))
    if len(shape) != 4:
        return head_dim  # no V of its own, or a wrong one the compiled module names
    last = int(shape[-1])
    block = _blocks.BYTES.get(v_type)
    if block is None:
        return last
    if last == _blocks.row_bytes(v_type, head_dim) or last == 0 or last % block:
        return head_dim
    return last // block * _blocks.VALUES


def output_width(q: Any, v_cache: Any, problem: Dict[str, Any]) -> int:
    """V's and the output's width for q and v_cache (arrays or fake tensors: shapes only) and
    decode's keywords ``problem`` (those of V's width and type), as decode reads it."""
    v_type = problem.get("v_dtype") or problem.get("kv_dtype") or ""
    return _value_width(int(q.shape[-1]), v_cache, v_type, problem.get("head_dim_v") or 0)


def _q_rows(q: Any) -> Tuple[int, ...]:
    """q's row shape: (batch, q_heads) for 3-D q, (batch, q_len, q_heads) for 4-D q."""
    shape = tuple(int(n) for n in q.shape)
    if len(shape) not in (3, 4):
        raise ValueError(
            "q: must be [batch, q_heads, head_dim] or [batch, q_len, q_heads, head_dim] "
            f"(3 or 4 dimensions), got {len(shape)} dimensions"
        )
    return shape[:-1]


def reference(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    seq_lens: Any,
    block_table: Any = None,
    scale: Optional[float] = None,
    return_lse: bool = False,
    **problem: Any,
) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """The library's fp64 reference of :func:`decode`: two-pass softmax attention straight from
    the definition (C++ ``reference::naive_attention``), sharing no code with the engines.

    Same arguments and rules as :func:`decode`; ``problem``: its keywords that describe the
    problem (causal, window_left, softcap, sinks, alibi_slopes, kv_dtype, k_scale, v_scale,
    v_dtype, head_dim_v, query_start_loc). Variants are written out literally; an 8-bit cache dequantized
    literally, stored x scale, in fp64; a q8_0 / q4_0 cache's blocks as d x q; K and V each read
    as its own type with ``v_dtype``; V of its own width, or v_cache None with ``head_dim_v``: V
    the first head_dim_v values of K's rows. Device arrays are copied to the host first. Slow (a
    scalar loop): meant for tests and small problems.

    Returns:
        ``out`` ``[batch, (q_len,) q_heads, head_dim_v]`` float64 NumPy array; with ``return_lse``
        also ``lse`` ``[batch, (q_len,) q_heads]`` float64 (``-inf`` for an empty sequence);
        with ``query_start_loc``, ``[total query tokens, q_heads, ...]``.
    """
    q, k_cache = _arrays.to_host(q), _arrays.to_host(k_cache)
    v_cache = None if v_cache is None else _arrays.to_host(v_cache)
    lens = _arrays.host_index_array(seq_lens, "seq_lens", 1, "[batch]")
    problem = dict(problem, block_table=block_table, scale=scale)
    out, lse = _ext._reference(describe(q, k_cache, v_cache, lens, problem))
    return (out, lse) if return_lse else out
