"""Bad input to leanattn.decode, leanattn.reference and leanattn.plan: ValueError for shapes and
values, TypeError for dtypes and argument types, each message starting with the name of the
Python argument at fault. Never a crash."""

from __future__ import annotations

import re

import numpy as np
import pytest

import leanattn
from conftest import make_case


def raises(kind, argument, fn, *args, **kwargs):
    with pytest.raises(kind, match=r"^" + re.escape(argument) + ": ") as info:
        fn(*args, **kwargs)
    return str(info.value)


@pytest.fixture
def case(rng):
    return make_case(rng, [20, 0, 7], q_heads=4, kv_heads=2, head_dim=32)


@pytest.fixture
def paged(rng):
    return make_case(rng, [20, 0, 7], q_heads=4, kv_heads=2, head_dim=32, page_size=4)


# --- values ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [leanattn.decode, leanattn.reference])
def test_length_over_capacity(case, fn):
    lens = case.seq_lens.copy()
    lens[2] = case.k.shape[1] + 1
    msg = raises(ValueError, "seq_lens", fn, case.q, case.k, case.v, lens)
    assert "capacity" in msg


@pytest.mark.parametrize("fn", [leanattn.decode, leanattn.reference])
def test_negative_length(case, fn):
    msg = raises(ValueError, "seq_lens", fn, case.q, case.k, case.v, [20, -1, 7])
    assert ">= 0" in msg


def test_length_needing_more_pages_than_the_block_table_has(paged):
    lens = paged.seq_lens.copy()
    lens[0] = paged.block_table.shape[1] * 4 + 1
    raises(ValueError, "seq_lens", leanattn.decode, paged.q, paged.k, paged.v, lens,
           block_table=paged.block_table)


@pytest.mark.parametrize("bad", [-1, "num_pages"])
@pytest.mark.parametrize("fn", [leanattn.decode, leanattn.reference])
def test_block_table_entry_out_of_range(paged, bad, fn):
    table = paged.block_table.copy()
    table[2, 1] = paged.k.shape[0] if bad == "num_pages" else bad
    msg = raises(ValueError, "block_table", fn, paged.q, paged.k, paged.v, paged.seq_lens,
                 block_table=table)
    assert "block_table[2][1]" in msg


def test_unused_block_table_entries_are_not_read(paged):
    table = paged.block_table.copy()
    table[1, :] = 10**6  # request 1 is empty
    leanattn.decode(paged.q, paged.k, paged.v, paged.seq_lens, block_table=table)


def test_q_heads_not_a_multiple_of_kv_heads(rng):
    c = make_case(rng, [5], q_heads=3, kv_heads=2, head_dim=32)
    msg = raises(ValueError, "q", leanattn.decode, *c.args())
    assert "multiple of kv_heads" in msg


def test_mismatched_head_dim(case):
    k = np.zeros(case.k.shape[:3] + (48,), np.float32)
    msg = raises(ValueError, "k_cache", leanattn.decode, case.q, k, k, case.seq_lens)
    assert "head_dim" in msg


def test_head_dim_not_a_multiple_of_16(rng):
    c = make_case(rng, [5, 6], q_heads=2, kv_heads=1, head_dim=24)
    msg = raises(ValueError, "q", leanattn.decode, *c.args())
    assert "head_dim" in msg and "multiple of 16" in msg


def test_wrong_numbers_of_dimensions(case):
    raises(ValueError, "q", leanattn.decode, case.q[0], case.k, case.v, case.seq_lens)
    raises(ValueError, "k_cache", leanattn.decode, case.q, case.k[0], case.v, case.seq_lens)
    raises(ValueError, "v_cache", leanattn.decode, case.q, case.k, case.v[0], case.seq_lens)
    raises(ValueError, "seq_lens", leanattn.decode, case.q, case.k, case.v, [[1, 2, 3]])
    raises(ValueError, "block_table", leanattn.decode, case.q, case.k, case.v, case.seq_lens,
           block_table=[0, 1, 2])


def test_mismatched_shapes(case, paged):
    raises(ValueError, "v_cache", leanattn.decode, case.q, case.k, case.v[:, :-1], case.seq_lens)
    raises(ValueError, "seq_lens", leanattn.decode, case.q, case.k, case.v, case.seq_lens[:2])
    raises(ValueError, "k_cache", leanattn.decode, case.q[:2], case.k, case.v, case.seq_lens[:2])
    raises(ValueError, "block_table", leanattn.decode, paged.q, paged.k, paged.v, paged.seq_lens,
           block_table=paged.block_table[:2])


def test_empty_batch(rng):
    q = np.zeros((0, 4, 32), np.float32)
    k = np.zeros((0, 8, 2, 32), np.float32)
    raises(ValueError, "seq_lens", leanattn.decode, q, k, k, np.zeros(0, np.int32))


def test_layouts_the_engine_cannot_read(case):
    msg = raises(ValueError, "q", leanattn.decode, np.asfortranarray(case.q), case.k, case.v,
                 case.seq_lens)
    assert "contiguous" in msg
    raises(ValueError, "q", leanattn.decode, case.q[:, :, ::-1], case.k, case.v, case.seq_lens)
    msg = raises(ValueError, "k_cache", leanattn.decode, case.q, case.k[:, ::-1], case.v,
                 case.seq_lens)
    assert "stride" in msg


# --- dtypes ------------------------------------------------------------------------------------

def test_unsupported_dtypes(case):
    raises(TypeError, "q", leanattn.decode, case.q.astype(np.float64), case.k, case.v,
           case.seq_lens)
    raises(TypeError, "k_cache", leanattn.decode, case.q, case.k.astype(np.int16),
           case.v.astype(np.int16), case.seq_lens)
    raises(TypeError, "v_cache", leanattn.decode, case.q, case.k, case.v.astype(np.float16),
           case.seq_lens)
    raises(TypeError, "q", leanattn.decode, case.q.view(np.uint32), case.k, case.v,
           case.seq_lens)
    raises(TypeError, "q", leanattn.decode, case.q.astype(np.float16).view(np.uint16), case.k,
           case.v, case.seq_lens)
    raises(TypeError, "q", leanattn.decode, [[[1.0] * 32] * 4] * 3, case.k, case.v,
           case.seq_lens)
    raises(TypeError, "seq_lens", leanattn.decode, case.q, case.k, case.v, [20.0, 0.0, 7.0])


def test_block_table_dtype(paged):
    raises(TypeError, "block_table", leanattn.decode, paged.q, paged.k, paged.v, paged.seq_lens,
           block_table=paged.block_table.astype(np.float32))


def test_index_values_must_fit_int32(case):
    raises(ValueError, "seq_lens", leanattn.decode, case.q, case.k, case.v,
           np.array([2**40, 0, 1], np.int64))


# --- options -----------------------------------------------------------------------------------

def test_options(case):
    args = case.args()
    msg = raises(ValueError, "strategy", leanattn.decode, *args, strategy="fastest")
    assert "lean, split, head" in msg
    raises(TypeError, "strategy", leanattn.decode, *args, strategy=1)
    raises(ValueError, "workers", leanattn.decode, *args, workers=0)
    raises(ValueError, "workers", leanattn.decode, *args, workers=-2)
    raises(ValueError, "workers", leanattn.decode, *args, workers=2**17)
    raises(TypeError, "workers", leanattn.decode, *args, workers=2.5)
    raises(ValueError, "tile", leanattn.decode, *args, tile=0)
    raises(ValueError, "tile", leanattn.decode, *args, tile=2**20)
    for bad in (-1.0, -0.5, float("nan"), float("inf"), 1e-50, 1e50):
        raises(ValueError, "scale", leanattn.decode, *args, scale=bad)
    raises(TypeError, "scale", leanattn.decode, *args, scale="big")


def test_plan_must_match_the_problem(case):
    p = leanattn.plan([20, 0, 8], q_heads=4, kv_heads=2, head_dim=32)
    msg = raises(ValueError, "plan", leanattn.decode, *case.args(), plan=p)
    assert "seq_lens" in msg
    p = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=2, head_dim=32)
    raises(ValueError, "plan", leanattn.decode, *case.args(), plan=p)
    p = leanattn.plan(case.seq_lens, q_heads=4, kv_heads=2, head_dim=32, strategy="split")
    raises(ValueError, "strategy", leanattn.decode, *case.args(), plan=p, strategy="head")
    raises(ValueError, "tile", leanattn.decode, *case.args(), plan=p, tile=p.tile + 1)
    raises(TypeError, "plan", leanattn.decode, *case.args(), plan="lean")


def test_plan_arguments():
    raises(ValueError, "kv_heads", leanattn.plan, [5], q_heads=4, kv_heads=0, head_dim=32)
    raises(ValueError, "q_heads", leanattn.plan, [5], q_heads=6, kv_heads=4, head_dim=32)
    raises(ValueError, "head_dim", leanattn.plan, [5], q_heads=4, kv_heads=4, head_dim=300)
    raises(ValueError, "seq_lens", leanattn.plan, [5, -1], q_heads=4, kv_heads=4, head_dim=32)
    raises(ValueError, "seq_lens", leanattn.plan, [], q_heads=4, kv_heads=4, head_dim=32)
    raises(ValueError, "strategy", leanattn.plan, [5], q_heads=4, kv_heads=4, head_dim=32,
           strategy="x")
    raises(ValueError, "order", leanattn.plan, [5], q_heads=4, kv_heads=4, head_dim=32,
           order="diagonal")
    raises(ValueError, "splits", leanattn.plan, [5], q_heads=4, kv_heads=4, head_dim=32,
           splits=2)
    raises(ValueError, "splits", leanattn.plan, [5], q_heads=4, kv_heads=4, head_dim=32,
           strategy="split", splits=1000)
    raises(ValueError, "batch_invariant", leanattn.plan, [5], q_heads=4, kv_heads=4,
           head_dim=32, strategy="split", batch_invariant=True)
    raises(TypeError, "q_heads", leanattn.plan, [5], q_heads=4.0, kv_heads=4, head_dim=32)
    p = leanattn.plan([5], q_heads=4, kv_heads=4, head_dim=32, workers=2)
    raises(ValueError, "worker", p.segments, 2)
    raises(ValueError, "worker", p.segments, -1)
    with pytest.raises(TypeError):
        leanattn.Plan(None)


def test_cache_geometry_errors_name_the_python_argument(paged):
    q, k = paged.q, paged.k
    empty_pages = np.zeros((k.shape[0], 0) + k.shape[2:], k.dtype)
    msg = raises(ValueError, "k_cache", leanattn.decode, q, empty_pages, empty_pages,
                 paged.seq_lens, block_table=paged.block_table)
    assert "page_size (k_cache.shape[1])" in msg
    no_pages = np.zeros((0,) + k.shape[1:], k.dtype)
    msg = raises(ValueError, "k_cache", leanattn.decode, q, no_pages, no_pages, [0, 0, 0],
                 block_table=paged.block_table)
    assert "num_pages (k_cache.shape[0])" in msg
    msg = raises(ValueError, "block_table", leanattn.decode, q, k, k, [0, 0, 0],
                 block_table=np.zeros((3, 0), np.int32))
    assert "max_pages (block_table.shape[1])" in msg


def test_misaligned_data(case):
    raw = np.zeros(case.q.size * 4 + 1, np.uint8)
    q = np.frombuffer(raw.data, np.float32, count=case.q.size, offset=1).reshape(case.q.shape)
    msg = raises(ValueError, "q", leanattn.decode, q, case.k, case.v, case.seq_lens)
    assert "aligned" in msg
