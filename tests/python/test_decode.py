"""leanattn.decode against leanattn.reference and the independent NumPy fp64 attention of
conftest.py: every dtype, strategy and layout, GQA ratios, head dims, worker counts and tile
sizes, empty sequences, strided and broadcast inputs, plan reuse and concurrent calls."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import leanattn
from conftest import DTYPES, assert_close, make_case, np_dtype, numpy_attention

STRATEGIES = ["lean", "split", "head"]
# 0, 1, tile - 1, tile, tile + 1 for the default tile of head_dim 64 (256 tokens), and longer.
MIXED_LENS = [97, 0, 1, 255, 256, 257, 1000, 5]


def check(case, dtype, out, lse=None, scale=None):
    """out (and lse) against both references; the two references against each other."""
    ref, ref_lse = leanattn.reference(*case.args(), block_table=case.block_table, scale=scale,
                                      return_lse=True)
    mine, mine_lse = numpy_attention(*case.args(), block_table=case.block_table, scale=scale)
    np.testing.assert_allclose(ref, mine, atol=1e-12, rtol=1e-12)
    assert_close(out, ref, dtype, lse, ref_lse)
    assert_close(out, mine, dtype, lse, mine_lse)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("page_size", [None, 16, 3])
def test_dtypes_strategies_layouts(rng, dtype, strategy, page_size):
    case = make_case(rng, MIXED_LENS, q_heads=8, kv_heads=2, head_dim=64, dtype=dtype,
                     page_size=page_size)
    out, lse = leanattn.decode(*case.args(), block_table=case.block_table, strategy=strategy,
                               workers=3, return_lse=True)
    assert out.dtype == np_dtype(dtype) and out.shape == case.q.shape
    assert lse.dtype == np.float32 and lse.shape == case.q.shape[:2]
    assert isinstance(out, np.ndarray) and isinstance(lse, np.ndarray)
    check(case, dtype, out, lse)


@pytest.mark.parametrize("kv_heads,group", [(1, 1), (1, 8), (2, 3), (4, 4), (8, 1), (2, 16)])
@pytest.mark.parametrize("head_dim", [16, 128, 256])
def test_gqa_ratios_and_head_dims(rng, kv_heads, group, head_dim):
    case = make_case(rng, [130, 33, 0], q_heads=kv_heads * group, kv_heads=kv_heads,
                     head_dim=head_dim, dtype="float16")
    for strategy in STRATEGIES:
        out, lse = leanattn.decode(*case.args(), strategy=strategy, workers=2, tile=32,
                                   return_lse=True)
        check(case, "float16", out, lse)


@pytest.mark.parametrize("workers", [1, 2, 3, 7, 16])
@pytest.mark.parametrize("tile", [1, 16, None])
def test_workers_and_tiles(rng, workers, tile):
    case = make_case(rng, [300, 17, 0, 64, 65], q_heads=4, kv_heads=2, head_dim=32,
                     dtype="float32", page_size=8)
    for strategy in STRATEGIES:
        out, lse = leanattn.decode(*case.args(), block_table=case.block_table, strategy=strategy,
                                   workers=workers, tile=tile, return_lse=True)
        check(case, "float32", out, lse)


def test_empty_sequences_give_zeros_and_minus_inf(rng):
    for page_size in (None, 4):
        case = make_case(rng, [0, 0, 0], page_size=page_size)
        for strategy in STRATEGIES:
            out, lse = leanattn.decode(*case.args(), block_table=case.block_table,
                                       strategy=strategy, return_lse=True)
            assert np.all(out == 0) and np.all(np.isneginf(lse))


def test_single_request_long_sequence(rng):
    case = make_case(rng, [5000], q_heads=4, kv_heads=1, head_dim=128, dtype="bfloat16",
                     page_size=128)
    out, lse = leanattn.decode(*case.args(), block_table=case.block_table, workers=4,
                               return_lse=True)
    check(case, "bfloat16", out, lse)


def test_default_outputs_without_lse(rng):
    case = make_case(rng, [10, 20])
    out = leanattn.decode(*case.args())
    assert isinstance(out, np.ndarray) and out.shape == case.q.shape
    check(case, "float32", out)


def test_scale(rng):
    case = make_case(rng, [50, 7])
    out, lse = leanattn.decode(*case.args(), scale=0.3, return_lse=True)
    check(case, "float32", out, lse, scale=0.3)


def test_scale_zero_means_the_default_as_in_cpp(rng):
    # DecodeProblem::scale's rule: 0 is 1/sqrt(head_dim), so scale=0 is scale=None.
    case = make_case(rng, [50, 0, 7])
    out, lse = leanattn.decode(*case.args(), scale=0.0, return_lse=True)
    check(case, "float32", out, lse)
    default, default_lse = leanattn.decode(*case.args(), return_lse=True)
    assert np.array_equal(out, default) and np.array_equal(lse, default_lse)
    p = leanattn.plan(case.seq_lens, q_heads=case.q.shape[1], kv_heads=case.k.shape[2],
                      head_dim=case.q.shape[2])
    assert np.array_equal(leanattn.decode(*case.args(), plan=p, scale=0), out)
    assert np.array_equal(leanattn.reference(*case.args(), scale=0),
                          leanattn.reference(*case.args()))


def test_q_and_cache_dtypes_may_differ(rng):
    case = make_case(rng, [40, 0, 9], dtype="float32", kv_dtype="float16")
    out, lse = leanattn.decode(*case.args(), return_lse=True)
    assert out.dtype == np.float32
    check(case, "float32", out, lse)


def test_index_arguments_accept_lists_and_other_integer_types(rng):
    case = make_case(rng, [20, 5], page_size=4)
    want = leanattn.decode(*case.args(), block_table=case.block_table)
    lens64 = case.seq_lens.astype(np.int64)
    got = leanattn.decode(case.q, case.k, case.v, list(map(int, case.seq_lens)),
                          block_table=case.block_table.tolist())
    np.testing.assert_array_equal(got, want)
    got = leanattn.decode(case.q, case.k, case.v, lens64,
                          block_table=case.block_table.astype(np.int64))
    np.testing.assert_array_equal(got, want)


def test_strided_inputs_are_read_in_place(rng):
    """q with a head stride, caches sliced from larger ones and stored heads-first."""
    base = make_case(rng, [70, 0, 33], q_heads=4, kv_heads=2, head_dim=32)
    q_big = np.zeros((3, 8, 32), np.float32)
    q_big[:, ::2] = base.q
    q = q_big[:, ::2]
    k_heads_first = np.ascontiguousarray(base.k.transpose(0, 2, 1, 3))  # [b, kv, cap, d]
    k = k_heads_first.transpose(0, 2, 1, 3)
    v_big = np.zeros((3, base.v.shape[1] + 9, 2, 32), np.float32)
    v_big[:, : base.v.shape[1]] = base.v
    v = v_big[:, : base.v.shape[1]]
    assert not (q.flags.c_contiguous or k.flags.c_contiguous or v.flags.c_contiguous)
    out, lse = leanattn.decode(q, k, v, base.seq_lens, workers=2, tile=8, return_lse=True)
    check(base, "float32", out, lse)


def test_broadcast_and_read_only_inputs(rng):
    base = make_case(rng, [30, 12], q_heads=4, kv_heads=1, head_dim=16)
    q = np.broadcast_to(base.q[:1], base.q.shape)  # stride 0 over the batch, read only
    k = base.k.copy()
    k.flags.writeable = False
    out = leanattn.decode(q, k, base.v, base.seq_lens)
    ref = leanattn.reference(np.ascontiguousarray(q), base.k, base.v, base.seq_lens)
    assert_close(out, ref, "float32")


def test_plan_reuse_matches_planning_per_call_bitwise(rng):
    case = make_case(rng, [700, 3, 129], q_heads=8, kv_heads=4, head_dim=64, dtype="float16")
    for strategy in STRATEGIES:
        p = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=4, head_dim=64, strategy=strategy,
                          workers=3, tile=32)
        direct = leanattn.decode(*case.args(), strategy=strategy, workers=3, tile=32)
        planned = leanattn.decode(*case.args(), plan=p)
        run = p.run(case.q, case.k, case.v)
        np.testing.assert_array_equal(planned.view(np.uint16), direct.view(np.uint16))
        np.testing.assert_array_equal(run.view(np.uint16), direct.view(np.uint16))


def test_plan_runs_with_any_thread_count(rng):
    case = make_case(rng, [500, 20, 301], page_size=16)
    p = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=2, head_dim=64, workers=5, tile=16)
    first = p.run(case.q, case.k, case.v, block_table=case.block_table)
    for workers in (1, 2, 5):
        out, lse = p.run(case.q, case.k, case.v, block_table=case.block_table, workers=workers,
                         return_lse=True)
        np.testing.assert_array_equal(out, first)
        check(case, "float32", out, lse)


def test_batch_invariant_plans(rng):
    case = make_case(rng, [900, 40], q_heads=4, kv_heads=2, head_dim=32)
    outs = []
    for workers in (1, 3, 8):
        p = leanattn.plan(case.seq_lens, q_heads=4, kv_heads=2, head_dim=32, workers=workers,
                          tile=16, batch_invariant=True)
        outs.append(p.run(case.q, case.k, case.v))
    for other in outs[1:]:
        np.testing.assert_array_equal(other, outs[0])
    check(case, "float32", outs[0])


def test_repeated_runs_are_bitwise_identical(rng):
    case = make_case(rng, [3000, 17, 900], q_heads=16, kv_heads=4, head_dim=128,
                     dtype="bfloat16")
    first = leanattn.decode(*case.args(), workers=7, tile=16)
    for _ in range(5):
        again = leanattn.decode(*case.args(), workers=7, tile=16)
        np.testing.assert_array_equal(again.view(np.uint16), first.view(np.uint16))


def test_concurrent_calls_from_python_threads(rng):
    cases = [make_case(np.random.default_rng(i), [200 + i, 3, 64]) for i in range(6)]
    refs = [leanattn.reference(*c.args()) for c in cases]
    errors = []

    def work(i):
        try:
            for _ in range(5):
                out = leanattn.decode(*cases[i].args(), workers=1 + i % 3, tile=16)
                assert_close(out, refs[i], "float32")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_many_worker_counts_keep_working(rng):
    """More worker counts than the engine cache holds: engines are evicted and recreated."""
    case = make_case(rng, [50, 9])
    ref = leanattn.reference(*case.args())
    for workers in (1, 2, 3, 4, 5, 6, 1, 2):
        assert_close(leanattn.decode(*case.args(), workers=workers), ref, "float32")


@pytest.mark.parametrize("seed", range(6))
def test_random_problems(seed):
    r = np.random.default_rng(1000 + seed)
    kv_heads = int(r.integers(1, 4))
    group = int(r.integers(1, 6))
    head_dim = 16 * int(r.integers(1, 9))
    batch = int(r.integers(1, 7))
    lens = r.integers(0, 400, size=batch)
    dtype = DTYPES[seed % 3]
    page_size = [None, 1, 7, 32][seed % 4]
    case = make_case(r, lens, q_heads=kv_heads * group, kv_heads=kv_heads, head_dim=head_dim,
                     dtype=dtype, page_size=page_size)
    out, lse = leanattn.decode(*case.args(), block_table=case.block_table,
                               strategy=STRATEGIES[seed % 3], workers=int(r.integers(1, 9)),
                               return_lse=True)
    check(case, dtype, out, lse)


def test_inputs_are_not_copied(rng):
    """A 23 MiB cache must not be copied: the call allocates only the small outputs (NumPy
    reports its allocations to tracemalloc)."""
    import tracemalloc

    case = make_case(rng, [3000, 2000], q_heads=8, kv_heads=8, head_dim=128, dtype="float16",
                     spare=0)
    k_strided = np.zeros((2, 3000, 8, 256), np.float16)[..., :128]  # strided too
    k_strided[...] = case.k
    assert case.k.nbytes + case.v.nbytes >= 23 << 20
    leanattn.decode(*case.args(), workers=2)  # engine and planning caches warm
    tracemalloc.start()
    try:
        leanattn.decode(case.q, k_strided, case.v, case.seq_lens, workers=2, return_lse=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


class DLPackOnly:
    """An array of an unknown framework: only the DLPack protocol (wrapping a NumPy array)."""

    def __init__(self, a):
        self._a = a
        self.shape = a.shape

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_any_dlpack_producer_as_cache_but_q_needs_a_known_framework(rng):
    case = make_case(rng, [40, 3], dtype="float16")
    out = leanattn.decode(case.q, DLPackOnly(case.k), DLPackOnly(case.v), case.seq_lens)
    assert_close(out, leanattn.reference(*case.args()), "float16")
    with pytest.raises(TypeError, match="^q: "):
        leanattn.decode(DLPackOnly(case.q), case.k, case.v, case.seq_lens)
    with pytest.raises(TypeError, match="^k_cache: "):
        leanattn.decode(case.q, DLPackOnly(case.k.astype(np.float64)),
                        DLPackOnly(case.v.astype(np.float64)), case.seq_lens)


def test_nested_lists_are_converted(rng):
    case = make_case(rng, [5], q_heads=1, kv_heads=1, head_dim=16)
    q = [[[np.float32(x) for x in case.q[0, 0]]]]
    out = leanattn.decode(q, case.k, case.v, [5])
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert_close(out, leanattn.reference(*case.args()), "float32")
