"""A mixed leanattn.DecodeStep on the CPU (made with query_start_loc: q [max_query_tokens, ...]):
consecutive steps of their own lengths and counts (decode rows, chunks, requests of no query
token, empty requests, fewer requests than the capacity) planned at the call ("device") or by
plan() ("host"), each against the NumPy fp64 attention, rows past the step's query tokens left
as they were; the counts' rules and misuse refused naming query_start_loc."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, make_case
from test_mixed_batch import numpy_mixed, starts_of

BATCH, BOUND, MAX_TOKENS = 5, 200, 40
SHAPE_STARTS = starts_of([16, 16, 8, 0, 0])  # up to 16 query tokens a request, 40 in all
STEPS = [
    ([50, 60, 200, 0, 3], [1, 1, 1, 0, 1]),
    ([30, 0, 120, 16, 9], [16, 0, 5, 1, 9]),
    ([0, 0, 0, 0, 0], [0, 0, 0, 0, 0]),
    ([200, 7, 0, 0, 0], [16, 7, 0, 0, 0]),
    ([70, 130, 16, 1, 0], [0, 16, 16, 0, 0]),
    ([199, 200, 48, 33, 101], [8, 8, 8, 8, 8]),
]


def mixed_step_case(rng, planning, page_size=None):
    case = make_case(rng, [BOUND] * BATCH, q_heads=8, kv_heads=2, head_dim=64,
                     page_size=page_size)
    q = rng.standard_normal((MAX_TOKENS, 8, 64)).astype(np.float32)
    step = leanattn.DecodeStep(q, case.k, case.v, max_seq_len=BOUND, planning=planning,
                               block_table=case.block_table, workers=3, tile=16,
                               query_start_loc=SHAPE_STARTS)
    return case, q, step


@pytest.mark.parametrize("planning", ["device", "host"])
@pytest.mark.parametrize("page_size", [None, 16])
def test_consecutive_steps_of_their_own_counts(rng, planning, page_size):
    case, q, step = mixed_step_case(rng, planning, page_size)
    k, v, table = case.k, case.v, case.block_table
    assert (step.batch, step.max_query_tokens) == (BATCH, MAX_TOKENS)
    out = np.empty(q.shape, np.float32)
    lse = np.empty(q.shape[:2], np.float32)
    for lens, counts in STEPS:
        lens, starts = np.array(lens, np.int32), starts_of(counts)
        out.fill(np.nan)
        lse.fill(np.nan)
        if planning == "host":
            used = int(np.flatnonzero(lens)[-1]) + 1 if lens.any() else 0
            step.plan(lens[:used], query_start_loc=starts[:used + 1])
            step(q, k, v, block_table=table, out=out, lse_out=lse)
        else:
            step(q, k, v, lens, block_table=table, out=out, lse_out=lse, query_start_loc=starts)
        used = int(starts[-1])
        ref, ref_lse = numpy_mixed(q[:used], k, v, lens, starts, table)
        assert_close(out[:used], ref, "float32", lse[:used], ref_lse)
        assert np.isnan(out[used:]).all() and np.isnan(lse[used:]).all(), (lens, counts)


def test_counts_and_misuse_refused_by_name(rng):
    case, q, step = mixed_step_case(rng, "device")
    k, v = case.k, case.v
    lens = np.array([50, 60, 200, 0, 3], np.int32)
    with pytest.raises(ValueError, match=r"^query_start_loc: required by a mixed step"):
        step(q, k, v, lens)
    with pytest.raises(ValueError, match=r"^query_start_loc: request 1 has 17 query tokens"):
        step(q, k, v, lens, query_start_loc=starts_of([1, 17, 1, 0, 1]))
    with pytest.raises(ValueError, match=r"^query_start_loc: ends at 41 query tokens, past the "
                                         r"step's max_query_tokens 40"):
        step(q, k, v, np.full(5, 200, np.int32), query_start_loc=starts_of([16, 16, 1, 0, 8]))
    with pytest.raises(ValueError, match=r"^query_start_loc: must be a contiguous int32 array "
                                         r"of the step's batch \+ 1, \[6\]"):
        step(q, k, v, lens, query_start_loc=np.zeros(5, np.int32))
    with pytest.raises(ValueError, match=r"^seq_lens: request 4 has length 3: must be 0 or in "
                                         r"\[its query tokens 9"):
        step(q, k, v, lens, query_start_loc=starts_of([1, 1, 1, 0, 9]))
    with pytest.raises(ValueError, match=r"^q: query tokens \(q.shape\[0\]\) must be the step's "
                                         r"max_query_tokens 40 \(got 39\)"):
        step(q[:39], k, v, lens, query_start_loc=starts_of([1, 1, 1, 0, 1]))
    _, _, host = mixed_step_case(rng, "host")
    with pytest.raises(ValueError, match=r"^query_start_loc: must be given each step"):
        host.plan(lens)
    with pytest.raises(ValueError, match=r"^query_start_loc: a host-planned step takes its "
                                         r"counts from plan\(\)"):
        host(q, k, v, query_start_loc=starts_of([1, 1, 1, 0, 1]))
    uniform = leanattn.DecodeStep(case.q, k, v, max_seq_len=BOUND)
    with pytest.raises(ValueError, match=r"^query_start_loc: the step has one q_len"):
        uniform(case.q, k, v, lens, query_start_loc=starts_of([1, 1, 1, 0, 1]))
