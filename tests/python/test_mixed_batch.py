"""Mixed batches through leanattn.decode (``query_start_loc``: prefill chunks beside decode rows,
q packed as [total query tokens, q_heads, head_dim]) against leanattn.reference and an
independent NumPy fp64 attention: every strategy, contiguous and paged caches, causal or not,
windows, plans made for the counts, and the rules naming query_start_loc (mixed DecodeSteps:
test_mixed_step.py)."""

from __future__ import annotations

import numpy as np
import pytest

import leanattn
from conftest import assert_close, make_case, to_f64

# A whole prompt, decode rows at depth, a chunk, a request of keys and no query token, an empty
# request (with rows: zeros, lse -inf) and one without.
LENS = [120, 700, 1, 0, 97, 50, 0]
COUNTS = [120, 1, 1, 2, 13, 0, 0]


def starts_of(counts):
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


def packed_case(rng, dtype="float32", page_size=None, head_dim=64):
    """make_case's caches with q packed: [sum(COUNTS), q_heads, head_dim]."""
    case = make_case(rng, LENS, q_heads=8, kv_heads=2, head_dim=head_dim, dtype=dtype,
                     page_size=page_size)
    q = rng.standard_normal((sum(COUNTS), 8, head_dim)).astype(case.q.dtype)
    return case, q, starts_of(COUNTS)


def numpy_mixed(q, k, v, lens, starts, block_table=None, causal=True, window_left=None):
    """fp64 from the definition, one query row at a time: request b's rows are
    q[starts[b]:starts[b + 1]], its last that many positions."""
    q64, k64, v64 = to_f64(q), to_f64(k), to_f64(v)
    heads = q64.shape[1]
    group = heads // k64.shape[2]
    scale = float(np.float32(1.0) / np.sqrt(np.float32(q64.shape[2])))
    out = np.zeros(q64.shape[:2] + v64.shape[-1:])
    lse = np.full(q64.shape[:2], -np.inf)
    for b, n in enumerate(int(x) for x in lens):
        count = int(starts[b + 1] - starts[b])
        if n == 0:
            continue
        t = np.arange(n)
        if block_table is None:
            keys, values = k64[b, :n], v64[b, :n]
        else:
            page_size = k64.shape[1]
            pages = np.asarray(block_table)[b, t // page_size]
            keys, values = k64[pages, t % page_size], v64[pages, t % page_size]
        for i in range(count):
            row = int(starts[b]) + i
            pos = n - count + i
            seen = (t <= pos) if causal else np.ones(n, bool)
            if window_left is not None:
                seen &= t >= pos - window_left
            for h in range(heads):
                s = keys[seen, h // group] @ q64[row, h] * scale
                m = s.max()
                p = np.exp(s - m)
                out[row, h] = p @ values[seen, h // group] / p.sum()
                lse[row, h] = m + np.log(p.sum())
    return out, lse


@pytest.mark.parametrize("strategy", ["lean", "split", "head"])
@pytest.mark.parametrize("page_size", [None, 16])
@pytest.mark.parametrize("variant", [{}, {"causal": False}, {"window_left": 40}])
def test_mixed_batch_against_fp64(rng, strategy, page_size, variant):
    case, q, starts = packed_case(rng, page_size=page_size)
    out, lse = leanattn.decode(q, case.k, case.v, case.seq_lens, block_table=case.block_table,
                               query_start_loc=starts, strategy=strategy, workers=3, tile=16,
                               return_lse=True, **variant)
    assert out.shape == q.shape and lse.shape == q.shape[:2]
    mine, mine_lse = numpy_mixed(q, case.k, case.v, case.seq_lens, starts, case.block_table,
                                 **variant)
    ref, ref_lse = leanattn.reference(q, case.k, case.v, case.seq_lens, case.block_table,
                                      return_lse=True, query_start_loc=starts, **variant)
    np.testing.assert_allclose(ref, mine, atol=1e-12, rtol=1e-12)
    assert_close(out, mine, "float32", lse, mine_lse)
    empty_rows = slice(int(starts[3]), int(starts[4]))  # the empty request's rows
    assert np.all(out[empty_rows] == 0) and np.all(np.isneginf(lse[empty_rows]))


def test_out_arrays_and_float16(rng):
    case, q, starts = packed_case(rng, dtype="float16")
    out = np.full(q.shape, np.nan, dtype=np.float16)
    lse = np.full(q.shape[:2], np.nan, dtype=np.float32)
    leanattn.decode(q, case.k, case.v, case.seq_lens, query_start_loc=starts, out=out,
                    lse_out=lse)
    mine, mine_lse = numpy_mixed(q, case.k, case.v, case.seq_lens, starts)
    assert_close(out, mine, "float16", lse, mine_lse)


def test_a_plan_for_the_counts(rng):
    case, q, starts = packed_case(rng)
    plan = leanattn.plan(case.seq_lens, q_heads=8, kv_heads=2, head_dim=64, workers=2, tile=16,
                         query_start_loc=starts)
    assert list(plan._impl.query_start_loc) == list(starts)
    out = leanattn.decode(q, case.k, case.v, plan=plan, query_start_loc=starts)
    mine, _ = numpy_mixed(q, case.k, case.v, case.seq_lens, starts)
    assert_close(out, mine, "float32")
    assert_close(plan.run(q, case.k, case.v), mine, "float32")  # the plan's own counts
    # The same tokens counted otherwise: 3 rows for the empty request, 12 for the chunk.
    other = starts_of([120, 1, 1, 3, 12, 0, 0])
    with pytest.raises(ValueError, match="^plan: was made for other query_start_loc"):
        leanattn.decode(q, case.k, case.v, plan=plan, query_start_loc=other)


@pytest.mark.parametrize("starts,rows,rule", [
    ([0, 1], 1, "^seq_lens: must hold one length per request: the batch is 1 \\(query_start_loc"),
    ([0], 0, "^query_start_loc: must hold batch \\+ 1 >= 2"),
    ([0, 120, 121, 122, 124, 136, 136, 136], None, "^query_start_loc: must end at"),
    ([0, 120, 121, 122, 124, 137, 137, 136], 136, "^query_start_loc: must not decrease"),
    ([1, 121, 122, 123, 125, 137, 137, 137], None, "^query_start_loc: must start at 0"),
])
def test_bad_query_start_loc_is_named(rng, starts, rows, rule):
    case, q, _ = packed_case(rng)
    with pytest.raises(ValueError, match=rule):
        leanattn.decode(q if rows is None else q[:rows], case.k, case.v, case.seq_lens,
                        query_start_loc=np.asarray(starts, np.int32))


def test_more_query_tokens_than_keys_names_seq_lens(rng):
    case, q, starts = packed_case(rng)
    lens = case.seq_lens.copy()
    lens[4] = 12  # 13 query tokens
    with pytest.raises(ValueError, match="^seq_lens: .*request 4's query token count 13"):
        leanattn.decode(q, case.k, case.v, lens, query_start_loc=starts)


def test_packed_q_is_three_dimensional(rng):
    case, q, starts = packed_case(rng)
    with pytest.raises(ValueError, match="^q: "):
        leanattn.decode(q[:, None], case.k, case.v, case.seq_lens, query_start_loc=starts)
