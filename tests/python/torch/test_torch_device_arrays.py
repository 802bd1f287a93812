"""sinks, alibi_slopes and an 8-bit cache's k_scale / v_scale where q lives: on the host for host
q, and on q's CUDA device, converted in q's framework, for CUDA q (never host copies, never read
on the host). On the CPU: the conversion helper (_arrays.device_float32: in place when already
there, else moved to like's device, here the meta device), the choice of device vs host arrays
(with on_cuda pretended for CPU tensors, so the module receives torch tensors and runs them), the
custom op's sinks / scales arguments. With a GPU and the CUDA backend: sinks, ALiBi and each
8-bit scale layout with CUDA tensors (and CuPy arrays) against the fp64 reference on fresh random
data, outputs poisoned first, worker counts swept (scripts/device-check.sh runs this file)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case
from leanattn import _arrays

torch = import_torch()
import leanattn.torch_ops  # noqa: E402,F401  (registers torch.ops.leanattn)

decode_module = sys.modules["leanattn._decode"]
cuda = pytest.mark.skipif(
    not torch.cuda.is_available() or "cuda" not in leanattn.backends,
    reason="needs a CUDA device and the CUDA backend")
# 8-bit caches on the GPU (f16 Q): int8 and fp8 values are exact in f16 and the scales are applied
# in float32, so the rounding is that of a plain f16 cache (P and the output in f16). A missing or
# misplaced scale errs by O(1) (scales are ~ amax / 127).
KV8_TOLERANCE = "float16"


def head_values(rng, q_heads):
    """Sinks around the scores' scale and ALiBi slopes like a model's, fresh per call."""
    sinks = (rng.standard_normal(q_heads) * 3).astype(np.float32)
    slopes = rng.uniform(0.01, 0.5, q_heads).astype(np.float32)
    return sinks, slopes


# --- the conversion helper and the choice, on the CPU -------------------------------------------

def test_device_float32_passes_an_array_already_there_in_place():
    like = torch.zeros(2, 4, 16)
    x = torch.nn.Parameter(torch.randn(4))  # requires grad, as gpt-oss's sinks
    got = _arrays.device_float32(x, "sinks", like, any_real=False)
    assert got.data_ptr() == x.data_ptr() and not got.requires_grad


@pytest.mark.parametrize("source", ["float16 tensor", "strided tensor", "numpy float64",
                                    "python float"])
def test_device_float32_converts_scales_onto_likes_device(source):
    like = torch.empty(2, 4, 16, device="meta")  # stands for a device q: data never read
    values = {
        "float16 tensor": torch.tensor([0.5, 2.0], dtype=torch.float16),
        "strided tensor": torch.arange(4, dtype=torch.float32)[::2],
        "numpy float64": np.array([0.25, 4.0]),
        "python float": 0.125,
    }[source]
    got = _arrays.device_float32(values, "k_scale", like, any_real=True)
    assert got.device.type == "meta" and got.dtype == torch.float32 and got.is_contiguous()
    assert tuple(got.shape) == (tuple(np.shape(values)) or (1,))  # a float: one element
    on_cpu = _arrays.device_float32(values, "k_scale", torch.empty(1), any_real=True)
    np.testing.assert_array_equal(on_cpu.numpy(), np.asarray(values, dtype=np.float32))


@pytest.mark.parametrize("name,value,any_real", [
    ("sinks", torch.zeros(4, dtype=torch.float64), False),
    ("alibi_slopes", np.zeros(4, np.float16), False),
    ("k_scale", torch.tensor([True]), True),
    ("v_scale", np.array([1 + 1j]), True),
])
def test_device_float32_refuses_other_dtypes_naming_the_argument(name, value, any_real):
    like = torch.empty(2, 4, 16, device="meta")
    with pytest.raises(TypeError, match=f"^{name}: "):
        _arrays.device_float32(value, name, like, any_real)


def spy_module(monkeypatch):
    """Records the sinks, slopes and scales that decode hands to the compiled module."""
    seen = {}
    real = decode_module._ext._decode

    def spy(problem, *args):
        seen["arrays"] = (problem.sinks, problem.alibi_slopes, problem.k_scale, problem.v_scale)
        return real(problem, *args)

    monkeypatch.setattr(decode_module._ext, "_decode", spy)
    return seen


def test_host_q_hands_numpy_arrays_to_the_module(rng, monkeypatch):
    seen = spy_module(monkeypatch)
    case = make_case(rng, [40, 0, 9], q_heads=4, kv_heads=2, head_dim=32)
    q, k, v = (torch.from_numpy(x) for x in (case.q, case.k, case.v))
    sinks, slopes = (torch.from_numpy(a) for a in head_values(rng, 4))
    kq, ks = leanattn.quantize_kv(k, "int8", "per_kv_head")
    vq, vs = leanattn.quantize_kv(v, "int8", "per_kv_head")
    leanattn.decode(q, kq, vq, case.seq_lens, sinks=torch.nn.Parameter(sinks),
                    alibi_slopes=slopes, k_scale=ks, v_scale=vs)
    assert all(type(a) is np.ndarray for a in seen["arrays"])


@pytest.mark.parametrize("page_size", [None, 8])
@pytest.mark.parametrize("workers", [1, 3, 7])
@pytest.mark.parametrize("granularity", ["per_tensor", "per_token_head"])
def test_device_q_hands_qs_framework_arrays_to_the_module(rng, monkeypatch, page_size, workers,
                                                         granularity):
    """With on_cuda pretended for CPU tensors, decode takes the device path: the module receives
    torch tensors (converted from NumPy, a float, float16) and computes with them."""
    seen = spy_module(monkeypatch)
    monkeypatch.setattr(_arrays, "on_cuda", lambda x: _arrays.framework(x) == "torch")
    case = make_case(rng, [61, 0, 17, 1], q_heads=8, kv_heads=2, head_dim=32,
                     page_size=page_size)
    sinks, slopes = head_values(rng, 8)
    kq, ks = leanattn.quantize_kv(case.k, "int8", granularity)
    vq, vs = leanattn.quantize_kv(case.v, "int8", granularity)
    ks = torch.from_numpy(ks).half().float().numpy()  # passed as float16 below
    if granularity == "per_tensor":
        k_scale, v_scale = float(ks), vs  # a Python float and a 0-d NumPy array
    else:
        k_scale, v_scale = torch.from_numpy(ks).half(), vs  # float16 tensor and NumPy
    q = torch.from_numpy(case.q)
    table = None if page_size is None else torch.from_numpy(case.block_table)
    out = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:2], float("nan"))
    leanattn.decode(q, torch.from_numpy(kq), torch.from_numpy(vq), case.seq_lens,
                    block_table=table, sinks=sinks, alibi_slopes=torch.from_numpy(slopes),
                    k_scale=k_scale, v_scale=v_scale, out=out, lse_out=lse, workers=workers,
                    tile=16)
    assert all(type(a) is torch.Tensor for a in seen["arrays"])
    assert all(a.dtype == torch.float32 for a in seen["arrays"])
    ref, ref_lse = leanattn.reference(case.q, kq, vq, case.seq_lens, block_table=case.block_table,
                                      sinks=sinks, alibi_slopes=slopes, k_scale=ks, v_scale=vs,
                                      return_lse=True)
    assert_close(out, ref, "float32", lse, ref_lse)


def test_op_takes_sinks_slopes_and_scales(rng):
    case = make_case(rng, [70, 0, 23], q_heads=4, kv_heads=1, head_dim=32)
    sinks, slopes = head_values(rng, 4)
    kq, ks = leanattn.quantize_kv(case.k, "int8", "per_token_head")
    vq, vs = leanattn.quantize_kv(case.v, "int8", "per_token_head")
    t = torch.from_numpy
    lens = t(case.seq_lens)
    out, lse = torch.ops.leanattn.decode(t(case.q), t(kq), t(vq), lens, None, None, t(sinks),
                                         t(slopes), t(ks), t(vs))
    ref, ref_lse = leanattn.reference(case.q, kq, vq, case.seq_lens, sinks=sinks,
                                      alibi_slopes=slopes, k_scale=ks, v_scale=vs,
                                      return_lse=True)
    assert_close(out, ref, "float32", lse, ref_lse)
    buf = torch.full_like(t(case.q), float("nan"))
    torch.ops.leanattn.decode_(t(case.q), t(kq), t(vq), lens, buf, sinks=t(sinks),
                               k_scale=t(ks), v_scale=t(vs))
    assert_close(buf, leanattn.reference(case.q, kq, vq, case.seq_lens, sinks=sinks,
                                         k_scale=ks, v_scale=vs), "float32")


def test_op_fake_with_extras():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q, k = torch.empty(3, 8, 64, dtype=torch.float16), torch.empty(3, 99, 2, 64,
                                                                       dtype=torch.int8)
        s = torch.empty(8)
        out, lse = torch.ops.leanattn.decode(q, k, k, torch.empty(3, dtype=torch.int32), None,
                                             None, s, s, torch.empty(2), torch.empty(2))
        assert out.shape == q.shape and out.dtype == q.dtype and lse.shape == (3, 8)


# --- CUDA tensors -------------------------------------------------------------------------------

def cuda_case(rng, page_size, lens=(300, 0, 17, 1029, 5), q_heads=8, kv_heads=2):
    case = make_case(rng, list(lens), q_heads=q_heads, kv_heads=kv_heads, head_dim=64,
                     dtype="float16", page_size=page_size)
    table = None if page_size is None else torch.from_numpy(case.block_table).cuda()
    return case, table


def poisoned(q, rows):
    out = torch.full_like(q, float("nan"))
    return out, torch.full(rows, float("nan"), device=q.device)


@cuda
@pytest.mark.parametrize("variant", [
    {"sinks": True}, {"alibi": True}, {"sinks": True, "alibi": True, "window_left": 100},
    {"sinks": True, "alibi": True, "q_len": 3, "softcap": 20.0},
], ids=lambda v: ",".join(f"{k}" for k in v))
@pytest.mark.parametrize("page_size", [None, 16])
@pytest.mark.parametrize("workers", [None, 7])
def test_cuda_sinks_and_alibi(rng, variant, page_size, workers):
    case, table = cuda_case(rng, page_size)
    variant = dict(variant)
    q_len = variant.pop("q_len", 1)
    q_np = case.q
    if q_len > 1:  # [batch, q_len, q_heads, head_dim]
        q_np = rng.standard_normal((len(case.seq_lens), q_len, 8, 64)).astype(np.float16)
    sinks, slopes = head_values(rng, 8)
    extra = {k: v for k, v in variant.items() if k in ("window_left", "softcap")}
    if variant.get("sinks"):
        extra["sinks"] = torch.from_numpy(sinks).cuda()
    if variant.get("alibi"):
        extra["alibi_slopes"] = torch.from_numpy(slopes).cuda()
    q = torch.from_numpy(q_np).cuda()
    k, v = (torch.from_numpy(x).cuda() for x in (case.k, case.v))
    out, lse = poisoned(q, q.shape[:-1])
    leanattn.decode(q, k, v, case.seq_lens, block_table=table, out=out, lse_out=lse,
                    workers=workers, **extra)
    host = {n: (a.cpu() if isinstance(a, torch.Tensor) else a) for n, a in extra.items()}
    ref, ref_lse = leanattn.reference(q_np, case.k, case.v, case.seq_lens,
                                      block_table=case.block_table, return_lse=True, **host)
    assert_close(out.cpu(), ref, "float16", lse.cpu(), ref_lse)


@cuda
@pytest.mark.parametrize("kv_dtype", ["int8", "fp8_e4m3"])
@pytest.mark.parametrize("granularity", ["per_tensor", "per_kv_head", "per_token_head"])
@pytest.mark.parametrize("page_size", [None, 16])
@pytest.mark.parametrize("workers", [None, 7])
def test_cuda_8bit_cache_with_device_scales(rng, kv_dtype, granularity, page_size, workers):
    case, table = cuda_case(rng, page_size)
    kq, ks = leanattn.quantize_kv(case.k.astype(np.float32), kv_dtype, granularity)
    vq, vs = leanattn.quantize_kv(case.v.astype(np.float32), kv_dtype, granularity)
    q = torch.from_numpy(case.q).cuda()
    dev = {n: torch.from_numpy(np.ascontiguousarray(a)).cuda()
           for n, a in (("k", kq), ("v", vq), ("k_scale", ks), ("v_scale", vs))}
    out, lse = poisoned(q, q.shape[:-1])
    leanattn.decode(q, dev["k"], dev["v"], case.seq_lens, block_table=table, kv_dtype=kv_dtype,
                    k_scale=dev["k_scale"], v_scale=dev["v_scale"], out=out, lse_out=lse,
                    workers=workers)
    ref, ref_lse = leanattn.reference(case.q, kq, vq, case.seq_lens, block_table=case.block_table,
                                      kv_dtype=kv_dtype, k_scale=ks, v_scale=vs, return_lse=True)
    assert_close(out.cpu(), ref, KV8_TOLERANCE, lse.cpu(), ref_lse)


@cuda
@pytest.mark.parametrize("granularity", ["per_tensor", "per_kv_head"])
def test_cuda_scales_from_the_host_and_python_floats(rng, granularity):
    """Host scales with CUDA q (per tensor: k_scale a Python float, v_scale a 0-d NumPy array; per
    KV head: NumPy and a CPU tensor): copied to q's device by torch."""
    case, _ = cuda_case(rng, None)
    kq, ks = leanattn.quantize_kv(case.k.astype(np.float32), "int8", granularity)
    vq, vs = leanattn.quantize_kv(case.v.astype(np.float32), "int8", granularity)
    q, k, v = (torch.from_numpy(x).cuda() for x in (case.q, kq, vq))
    k_scale = float(ks) if granularity == "per_tensor" else ks
    v_scale = vs if granularity == "per_tensor" else torch.from_numpy(vs)
    out = leanattn.decode(q, k, v, case.seq_lens, k_scale=k_scale, v_scale=v_scale)
    ref = leanattn.reference(case.q, kq, vq, case.seq_lens, k_scale=ks, v_scale=vs)
    assert_close(out.cpu(), ref, KV8_TOLERANCE)


@cuda
def test_cuda_arrays_already_on_the_device_are_not_copied():
    q = torch.zeros(2, 8, 64, dtype=torch.float16, device="cuda")
    sinks = torch.randn(8, device="cuda")
    assert _arrays.device_float32(sinks, "sinks", q, False).data_ptr() == sinks.data_ptr()
    moved = _arrays.device_float32(np.ones(2), "k_scale", q, True)
    assert moved.is_cuda and moved.device == q.device and moved.dtype == torch.float32


@cuda
def test_cuda_bad_device_arrays_are_named(rng):
    case, _ = cuda_case(rng, None, lens=(40, 3))
    q, k, v = (torch.from_numpy(x).cuda() for x in (case.q, case.k, case.v))
    with pytest.raises(TypeError, match="^sinks: dtype must be float32"):
        leanattn.decode(q, k, v, case.seq_lens, sinks=torch.zeros(8, device="cuda").double())
    with pytest.raises(ValueError, match="^alibi_slopes: must hold one value per query head"):
        leanattn.decode(q, k, v, case.seq_lens, alibi_slopes=torch.zeros(4, device="cuda"))
    kq, ks = leanattn.quantize_kv(case.k.astype(np.float32), "int8", "per_kv_head")
    with pytest.raises(ValueError, match="^k_scale: must be a scalar"):
        leanattn.decode(q, torch.from_numpy(kq).cuda(), torch.from_numpy(kq).cuda(),
                        case.seq_lens, k_scale=torch.ones(3, device="cuda"),
                        v_scale=torch.ones(3, device="cuda"))


@cuda
def test_cuda_op_with_device_sinks_and_scales(rng):
    case, _ = cuda_case(rng, None)
    sinks, _ = head_values(rng, 8)
    kq, ks = leanattn.quantize_kv(case.k.astype(np.float32), "int8", "per_token_head")
    vq, vs = leanattn.quantize_kv(case.v.astype(np.float32), "int8", "per_token_head")
    c = [torch.from_numpy(x).cuda() for x in (case.q, kq, vq, sinks, ks, vs)]
    out, lse = torch.ops.leanattn.decode(c[0], c[1], c[2], torch.from_numpy(case.seq_lens), None,
                                         None, c[3], None, c[4], c[5])
    ref, ref_lse = leanattn.reference(case.q, kq, vq, case.seq_lens, sinks=sinks, k_scale=ks,
                                      v_scale=vs, return_lse=True)
    assert_close(out.cpu(), ref, KV8_TOLERANCE, lse.cpu(), ref_lse)


@cuda
def test_cupy_arrays(rng):
    cupy = pytest.importorskip("cupy")
    case, _ = cuda_case(rng, 16)
    sinks, slopes = head_values(rng, 8)
    kq, ks = leanattn.quantize_kv(case.k.astype(np.float32), "int8", "per_token_head")
    vq, vs = leanattn.quantize_kv(case.v.astype(np.float32), "int8", "per_token_head")
    q = cupy.asarray(case.q)
    out = leanattn.decode(q, cupy.asarray(kq), cupy.asarray(vq), case.seq_lens,
                          block_table=cupy.asarray(case.block_table), sinks=cupy.asarray(sinks),
                          alibi_slopes=slopes, k_scale=cupy.asarray(ks), v_scale=vs)
    ref = leanattn.reference(case.q, kq, vq, case.seq_lens, block_table=case.block_table,
                             sinks=sinks, alibi_slopes=slopes, k_scale=ks, v_scale=vs)
    assert_close(cupy.asnumpy(out), ref, KV8_TOLERANCE)
