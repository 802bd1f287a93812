"""Array handling shared by the public functions: which framework an array belongs to, the
zero-copy view handed to the compiled module (with its dtype), index arrays, and outputs
allocated in the caller's framework. Used by _decode.py, _plan.py and _merge.py.

Frameworks: NumPy (float32, float16, and bfloat16 through ml_dtypes), PyTorch and CuPy are
recognised by the module of their type, so none of them is imported here; any other object
with ``__dlpack__`` can be an input (the compiled module reads its dtype from DLPack), but
outputs are allocated in q's framework, so q must be one of the three.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

# dtype names of the frameworks -> the hint the compiled module takes ("" = read from DLPack).
_DTYPE_HINTS = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "torch.float32": "f32",
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
}

_DTYPE_NAMES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "int8": "int8",
    "q8_0": "uint8 (q8_0 blocks)",
    "q4_0": "uint8 (q4_0 blocks)",
}

# KV cache types (kv_dtype=): the 8-bit types, read with k_scale / v_scale, and ggml's block
# formats (uint8 caches of 34- or 18-byte blocks of 32 values, their scales inside); and the
# float8 dtypes of PyTorch and ml_dtypes that name one.
SCALED_KV_DTYPES = ("fp8_e4m3", "fp8_e5m2", "int8")
BLOCK_KV_DTYPES = ("q8_0", "q4_0")
KV_DTYPES = SCALED_KV_DTYPES + BLOCK_KV_DTYPES
# V's type where it differs from K's (v_dtype=): the types llama.cpp's -ctk / -ctv mix, a float16
# cache or ggml's blocks (uint8); K must be one of them too.
V_DTYPES = ("f16",) + BLOCK_KV_DTYPES
_FP8_HINTS = {
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "torch.float8_e4m3fn": "fp8_e4m3",
    "torch.float8_e5m2": "fp8_e5m2",
}


def framework(x: Any) -> str:
    """``"numpy"``, ``"torch"``, ``"cupy"`` or ``"other"``, from the module of x's type."""
    if isinstance(x, np.ndarray):
        return "numpy"
    root = type(x).__module__.split(".", 1)[0]
    return root if root in ("torch", "cupy") else "other"


def _dtype_error(name: str, dtype: Any) -> TypeError:
    return TypeError(f"{name}: dtype must be float32, float16 or bfloat16 (got {dtype})")


def as_array(x: Any) -> Any:
    """x itself when it is an array of a known framework or a DLPack producer; otherwise
    numpy.asarray(x) (nested lists, scalars)."""
    if framework(x) != "other" or hasattr(x, "__dlpack__"):
        return x
    return np.asarray(x)


def tensor_view(x: Any, name: str) -> Tuple[Any, str]:
    """The object to hand to the compiled module for tensor argument ``name``, and its dtype
    hint ("f32", "f16", "bf16", or "" to read it from DLPack). No data is copied.

    NumPy bfloat16 arrays (ml_dtypes) have no DLPack type: they are passed as a uint16 view with
    the hint "bf16". Sequences that are not arrays are converted with numpy.asarray.
    """
    x = as_array(x)
    kind = framework(x)
    if kind == "other":
        return x, ""
    if kind == "torch":
        x = x.detach()  # a view: DLPack cannot export tensors that require grad
    hint = _DTYPE_HINTS.get(str(x.dtype))
    if hint is None:
        raise _dtype_error(name, x.dtype)
    if kind == "numpy" and hint == "bf16":
        return x.view(np.uint16), hint
    return x, hint


def _cache_array(x: Any) -> Tuple[Any, str, str]:
    """A cache as an array (torch detached), its framework and its dtype's name."""
    x = as_array(x)
    kind = framework(x)
    if kind == "torch":
        x = x.detach()
    return x, kind, str(getattr(x, "dtype", ""))


def kv_view(x: Any, name: str, kv_dtype: Optional[str]) -> Tuple[Any, str]:
    """tensor_view for k_cache and v_cache, which may also be 8-bit: int8 (``kv_dtype`` None or
    "int8"), torch.float8_e4m3fn / float8_e5m2 and ml_dtypes' float8 arrays (passed as their
    uint8 view), or uint8 bytes with an explicit ``kv_dtype`` "fp8_e4m3" / "fp8_e5m2"; or uint8
    bytes of ggml's blocks with ``kv_dtype`` "q8_0" / "q4_0" (the last dimension the row's bytes:
    the compiled module checks it against q's head_dim). No copy.
    """
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise ValueError(
            f"kv_dtype: must be one of {', '.join(KV_DTYPES)} or None (got {kv_dtype!r})"
        )
    x, kind, dt = _cache_array(x)
    fp8 = _FP8_HINTS.get(dt)
    if fp8 is not None:
        if kv_dtype not in (None, fp8):
            raise TypeError(f"{name}: dtype {dt} does not match kv_dtype={kv_dtype!r}")
        byte = sys.modules["torch"].uint8 if kind == "torch" else np.uint8
        return x.view(byte), fp8
    # For v_cache: how to give V a type of its own (value_view).
    own = "; for V of another type than K's, pass v_dtype" if name == "v_cache" else ""
    if dt in ("uint8", "torch.uint8"):
        if kv_dtype not in ("fp8_e4m3", "fp8_e5m2") + BLOCK_KV_DTYPES:
            raise TypeError(
                f"{name}: a uint8 cache holds fp8 bytes: pass kv_dtype='fp8_e4m3' or "
                f"'fp8_e5m2' (or, for ggml's blocks, 'q8_0' or 'q4_0') "
                f"(got kv_dtype={kv_dtype!r}){own}"
            )
        return x, kv_dtype
    if kv_dtype in BLOCK_KV_DTYPES:
        raise TypeError(
            f"{name}: kv_dtype={kv_dtype!r} needs a uint8 cache of ggml's {kv_dtype} blocks "
            f"(leanattn.quantize_kv makes one), got {dt or type(x).__name__}{own}"
        )
    if dt in ("int8", "torch.int8"):
        if kv_dtype not in (None, "int8"):
            raise TypeError(f"{name}: dtype int8 does not match kv_dtype={kv_dtype!r}")
        return x, "int8"
    if kv_dtype is not None:
        raise TypeError(
            f"{name}: kv_dtype={kv_dtype!r} needs an 8-bit cache (int8, uint8 or float8), "
            f"got {dt}"
        )
    return tensor_view(x, name)


def value_view(x: Any, v_dtype: str) -> Tuple[Any, str]:
    """The view of v_cache for a V of its own type ``v_dtype`` (one of V_DTYPES, else
    ValueError naming v_dtype): "f16", a float16 cache; "q8_0" / "q4_0", uint8 bytes of ggml's
    blocks (TypeError naming v_cache otherwise). No copy. Whether K's type mixes with it, and
    V's row, are checked by the compiled module (ValueError naming v_dtype / v_cache)."""
    if v_dtype not in V_DTYPES:
        raise ValueError(
            f"v_dtype: must be one of {', '.join(V_DTYPES)} (V's type where it differs from "
            f"K's, as llama.cpp's -ctv) or None (V of K's type) (got {v_dtype!r})"
        )
    x, kind, dt = _cache_array(x)
    if v_dtype == "f16":
        if kind != "other" and dt not in ("float16", "torch.float16"):
            raise TypeError(f"v_cache: v_dtype='f16' needs a float16 cache, got {dt}")
        return x, "f16"
    if kind != "other" and dt not in ("uint8", "torch.uint8"):
        raise TypeError(
            f"v_cache: v_dtype={v_dtype!r} needs a uint8 cache of ggml's {v_dtype} blocks "
            f"(leanattn.quantize_kv makes one), got {dt}"
        )
    return x, v_dtype


def scale_array(x: Any, name: str, like: Any = None) -> Any:
    """A quantized cache's scales (None stays None): a Python float, a NumPy array or a PyTorch /
    CuPy array of any real dtype, as a C-contiguous float32 array where the call runs: on the
    host (NumPy) unless ``like`` (q) is on a CUDA device, then on that device in like's
    framework (device_float32)."""
    if x is None:
        return None
    if like is not None and on_cuda(like):
        return device_float32(x, name, like, any_real=True)
    kind = framework(x)
    if kind == "torch":
        x = x.detach().cpu().float().numpy()
    elif kind == "cupy":
        x = x.get()
    return _host_float32(x, name, any_real=True)


def _float_dtype_error(name: str, dtype: Any, any_real: bool) -> TypeError:
    if any_real:
        return TypeError(f"{name}: must be a float or an array of floats (got {dtype})")
    return TypeError(f"{name}: dtype must be float32 (got {dtype})")


def _host_float32(x: Any, name: str, any_real: bool) -> np.ndarray:
    """x as a C-contiguous float32 NumPy array: any real dtype converted (``any_real``), or
    float32 only (TypeError naming ``name``)."""
    a = np.asarray(x)
    real = a.dtype.kind in "fiu" and a.dtype != np.bool_
    if not (real if any_real else a.dtype == np.float32):
        raise _float_dtype_error(name, a.dtype, any_real)
    return np.ascontiguousarray(a, dtype=np.float32)


def device_float32(x: Any, name: str, like: Any, any_real: bool) -> Any:
    """x for a call whose q (``like``) is on a CUDA device: a C-contiguous float32 array in like's
    framework, on like's device, for sinks, alibi_slopes (float32 only) and k_scale / v_scale
    (``any_real``: any real dtype, converted). An array already there (float32, contiguous) is
    passed as it is; one elsewhere, of another dtype or strided is copied by the framework on
    the device; host data (a Python float, a NumPy array, a CPU tensor) is copied to the device,
    an ordinary host-to-device copy that waits for the stream: pass device arrays in a model's
    step loop and under CUDA-graph capture. Device values are never read on the host. Raises
    TypeError naming ``name`` for another dtype."""
    kind = framework(x)
    if framework(like) == "torch":
        torch = sys.modules["torch"]
        if kind == "torch":
            x = x.detach()
        elif kind == "cupy":
            x = torch.from_dlpack(x)
        else:
            x = torch.from_numpy(_host_float32(x, name, any_real))
        dt = x.dtype
        real = not (dt.is_complex or dt == torch.bool)
        if not (real if any_real else dt == torch.float32):
            raise _float_dtype_error(name, dt, any_real)
        return x.to(device=like.device, dtype=torch.float32).contiguous()
    cupy = sys.modules["cupy"]
    if kind == "torch":
        x = x.detach()
        if x.device.type == "cuda":
            x = cupy.from_dlpack(x)
        else:  # checked here: NumPy has no bfloat16 to check it as
            torch = sys.modules["torch"]
            if (x.dtype.is_complex or x.dtype == torch.bool
                    or (not any_real and x.dtype != torch.float32)):
                raise _float_dtype_error(name, x.dtype, any_real)
            x = x.float().numpy()
    if framework(x) != "cupy":
        x = _host_float32(x, name, any_real)
    real = x.dtype.kind in "fiu" and x.dtype != np.bool_
    if not (real if any_real else x.dtype == np.float32):
        raise _float_dtype_error(name, x.dtype, any_real)
    with like.device:
        if framework(x) == "cupy" and x.device.id != like.device.id:
            x = cupy.array(x, copy=True)  # a peer copy onto like's device
        return cupy.ascontiguousarray(cupy.asarray(x), dtype=cupy.float32)


def dtype_name(hint: str) -> str:
    return _DTYPE_NAMES.get(hint, "its dtype")


def require_shape(x: Any, ndim: int, name: str, layout: str) -> Tuple[int, ...]:
    """x's shape, after checking its number of dimensions (ValueError naming ``name``)."""
    shape = tuple(int(n) for n in x.shape)
    if len(shape) != ndim:
        raise ValueError(
            f"{name}: must be {layout} ({ndim} dimensions), got {len(shape)} dimensions"
        )
    return shape


def _index_dtype_error(name: str, dtype: Any) -> TypeError:
    return TypeError(f"{name}: dtype must be an integer type, int32 preferred (got {dtype})")


def _index_ndim_error(name: str, layout: str, ndim: int, got: int) -> ValueError:
    return ValueError(f"{name}: must be {layout} ({ndim} dimensions), got {got} dimensions")


def host_index_array(x: Any, name: str, ndim: int, layout: str) -> np.ndarray:
    """x as a C-contiguous int32 NumPy array of ``ndim`` dimensions, for seq_lens and
    block_table. Any integer dtype is accepted (values must fit in int32); int32 arrays that
    are already contiguous are not copied. PyTorch and CuPy arrays are read on the host.
    """
    kind = framework(x)
    if kind == "torch":
        x = x.detach().cpu().numpy()
    elif kind == "cupy":
        x = x.get()
    a = np.asarray(x)
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):
        raise _index_dtype_error(name, a.dtype)
    if a.ndim != ndim:
        raise _index_ndim_error(name, layout, ndim, a.ndim)
    if a.dtype != np.int32:
        info = np.iinfo(np.int32)
        if a.size and (a.min() < info.min or a.max() > info.max):
            raise ValueError(f"{name}: values must fit in int32")
        a = a.astype(np.int32)
    return np.ascontiguousarray(a)


def empty_like(ref: Any, shape: Sequence[int], float32: bool = False) -> Tuple[Any, Any]:
    """A new uninitialised array of ``shape`` in ref's framework, device and dtype (float32
    when ``float32``), and the view to hand to the compiled module (see tensor_view)."""
    kind = framework(ref)
    if kind == "torch":
        torch = sys.modules["torch"]
        dtype = torch.float32 if float32 else ref.dtype
        out = torch.empty(tuple(shape), dtype=dtype, device=ref.device)
        return out, out
    if kind == "cupy":
        cupy = sys.modules["cupy"]
        out = cupy.empty(tuple(shape), dtype=np.float32 if float32 else ref.dtype)
        return out, out
    if kind == "numpy":
        out = np.empty(tuple(shape), dtype=np.float32 if float32 else ref.dtype)
        view = out.view(np.uint16) if out.dtype.name == "bfloat16" else out
        return out, view
    # Another DLPack producer: outputs in NumPy, in the dtype the compiled module reads from q.
    raise TypeError(
        "q: outputs are allocated in q's framework, which must be NumPy, PyTorch or CuPy "
        f"(got {type(ref).__module__}.{type(ref).__name__}); convert q first, e.g. "
        "numpy.from_dlpack(q)"
    )


def output_view(x: Any, name: str, like: Any) -> Any:
    """The view to hand to the compiled module for a caller-owned output ``name`` (out=,
    lse_out=): in q's framework (TypeError otherwise), NumPy bfloat16 as its uint16 view. Shape,
    dtype, device, strides and overlap are checked by the compiled module."""
    kind = framework(x)
    if kind != framework(like):
        raise TypeError(
            f"{name}: must be in q's framework ({type(like).__module__}.{type(like).__name__}), "
            f"got {type(x).__module__}.{type(x).__name__}"
        )
    if kind == "numpy":
        if not x.flags.writeable:
            raise ValueError(f"{name}: must be writeable")
        return x.view(np.uint16) if x.dtype.name == "bfloat16" else x
    if kind == "torch":
        if x.requires_grad:
            raise ValueError(f"{name}: must not require grad (it is written in place)")
    return x


def on_cuda(x: Any) -> bool:
    """Whether x is a PyTorch CUDA tensor or a CuPy array."""
    kind = framework(x)
    return (kind == "torch" and x.device.type == "cuda") or kind == "cupy"


def current_stream(x: Any) -> int:
    """The stream x's framework works on now, as a cudaStream_t integer (0 for host arrays):
    kernels launched there are ordered after the work that produced x, as in PyTorch."""
    return stream_source(x)()


def stream_source(x: Any) -> Callable[[], int]:
    """A function returning what current_stream(x) would, later, without holding x (for objects
    that outlive the arrays they were made from)."""
    kind = framework(x)
    if kind == "torch" and x.device.type == "cuda":
        torch, device = sys.modules["torch"], x.device
        return lambda: int(torch.cuda.current_stream(device).cuda_stream)
    if kind == "cupy":
        cupy = sys.modules["cupy"]
        return lambda: int(cupy.cuda.get_current_stream().ptr)
    return lambda: 0


def device_index_array(x: Any, name: str, ndim: int, layout: str, like: Any) -> Any:
    """block_table for arrays on a CUDA device: int32 in like's framework and on its device
    (copied only when it is elsewhere or of another integer type)."""
    if framework(like) == "torch":
        torch = sys.modules["torch"]
        if framework(x) != "torch":
            x = torch.from_numpy(host_index_array(x, name, ndim, layout))
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise _index_dtype_error(name, x.dtype)
        if x.dim() != ndim:
            raise _index_ndim_error(name, layout, ndim, x.dim())
        return x.to(device=like.device, dtype=torch.int32)
    cupy = sys.modules["cupy"]
    if framework(x) != "cupy":
        x = host_index_array(x, name, ndim, layout)
    if x.dtype.kind not in "iu":
        raise _index_dtype_error(name, x.dtype)
    if x.ndim != ndim:
        raise _index_ndim_error(name, layout, ndim, x.ndim)
    return cupy.ascontiguousarray(cupy.asarray(x, dtype=cupy.int32))


def to_host(x: Any) -> Any:
    """x on the host (a no-op for NumPy; a detached view of a CPU tensor, so that a parameter
    that requires grad can be read): PyTorch .cpu(), CuPy .get()."""
    kind = framework(x)
    if kind == "torch":
        return x.detach().cpu()
    if kind == "cupy":
        return x.get()
    return x


def optional_positive_int(value: Optional[int], name: str, maximum: int = 2**31 - 1) -> int:
    """None -> 0 (the default); otherwise an int in [1, maximum] (TypeError / ValueError naming
    it)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: must be an int or None (got {type(value).__name__})")
    if not 1 <= value <= maximum:
        raise ValueError(
            f"{name}: must be in [1, {maximum}], or None for the default (got {value})"
        )
    return int(value)



def optional_scale(scale: Optional[float]) -> float:
    """None or 0 -> 0.0, which the library reads as 1/sqrt(head_dim) (DecodeProblem::scale's
    rule); otherwise a finite float > 0 that float32 represents."""
    if scale is None:
        return 0.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating, np.integer)):
        raise TypeError(f"scale: must be a float or None (got {type(scale).__name__})")
    value = float(scale)
    if not np.isfinite(value) or value < 0.0:
        raise ValueError(
            f"scale: must be finite and >= 0; None or 0 means 1/sqrt(head_dim) (got {value})"
        )
    if value > float(np.finfo(np.float32).max) or (value > 0.0 and np.float32(value) == 0.0):
        raise ValueError(f"scale: must be representable as a float32 (got {value})")
    return value


def require_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: must be a str (got {type(value).__name__})")
    return value
