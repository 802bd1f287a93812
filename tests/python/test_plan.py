"""leanattn.plan / leanattn.Plan: properties, segments that cover every pair's tiles exactly
once, reductions consistent with the segments, and the strategies' shapes of schedule."""

from __future__ import annotations

from collections import defaultdict

import pytest

import leanattn

LENS = [5000, 300, 17, 0]


def tiles_of(length, tile):
    return (length + tile - 1) // tile


@pytest.mark.parametrize("strategy", ["lean", "split", "head"])
@pytest.mark.parametrize("workers", [1, 5, 64])
def test_segments_cover_every_tile_once(strategy, workers):
    p = leanattn.plan(LENS, q_heads=8, kv_heads=2, head_dim=64, strategy=strategy,
                      workers=workers, tile=128)
    assert (p.strategy, p.workers, p.tile) == (strategy, workers, 128)
    assert (p.batch, p.q_heads, p.kv_heads, p.head_dim) == (4, 8, 2, 64)
    assert p.seq_lens == LENS
    covered = defaultdict(list)
    for s in p.segments():
        assert 0 <= s["worker"] < workers
        covered[(s["request"], s["kv_head"])].append((s["tile_begin"], s["tile_end"]))
        assert s["token_begin"] == min(s["tile_begin"] * 128, LENS[s["request"]])
        assert s["token_end"] == min(s["tile_end"] * 128, LENS[s["request"]])
    assert sorted(covered) == [(b, h) for b in range(4) for h in range(2)]
    for (b, _), ranges in covered.items():
        ranges.sort()
        assert ranges[0][0] == 0 and ranges[-1][1] == tiles_of(LENS[b], 128)
        assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    assert sum(p.worker_tiles()) == p.total_tiles == 2 * sum(tiles_of(n, 128) for n in LENS)
    assert sum(len(p.segments(w)) for w in range(workers)) == len(p.segments())


def test_reductions_match_split_pairs():
    p = leanattn.plan(LENS, q_heads=8, kv_heads=2, head_dim=64, workers=7, tile=64)
    by_pair = defaultdict(list)
    for s in p.segments():
        by_pair[(s["request"], s["kv_head"])].append(s)
    reductions = p.reductions
    assert reductions, "a 5000-token request over 7 workers must be split"
    slots = []
    for i, r in enumerate(reductions):
        segs = sorted(by_pair[(r["request"], r["kv_head"])], key=lambda s: s["tile_begin"])
        assert len(segs) == r["num_slots"] > 1
        assert segs[0]["kind"] == "finalise" and segs[0]["worker"] == r["finaliser"]
        assert all(s["kind"] == "partial" for s in segs[1:])
        assert [s["slot"] for s in segs] == list(range(r["slot_begin"],
                                                       r["slot_begin"] + r["num_slots"]))
        assert all(s["reduction"] == i for s in segs)
        slots += [s["slot"] for s in segs]
    assert sorted(slots) == list(range(p.num_slots))
    direct = [s for s in p.segments() if s["kind"] == "direct"]
    assert all(s["slot"] == -1 and s["reduction"] == -1 for s in direct)
    assert p.workspace_bytes > 0


def test_lean_balances_work():
    p = leanattn.plan([4096, 64, 64, 64], q_heads=4, kv_heads=4, head_dim=128, workers=6,
                      tile=64)
    loads = p.worker_tiles()
    assert max(loads) - min(loads) <= 4  # cut within one row of kv_heads tiles (token_major)
    head = leanattn.plan([4096, 64, 64, 64], q_heads=4, kv_heads=4, head_dim=128,
                         strategy="head", workers=6, tile=64)
    # head keeps each (request, KV head) pair whole: a 64-tile pair (and whatever short pairs the
    # contiguous dealing puts beside it) on one worker, far above lean's share of 268 / 6 tiles.
    assert max(head.worker_tiles()) >= 64
    assert max(loads) < 64


def test_orders_splits_and_batch_invariance():
    kw = dict(q_heads=4, kv_heads=2, head_dim=64, workers=4, tile=32)
    assert leanattn.plan(LENS, **kw).order == "token_major"
    assert leanattn.plan(LENS, order="head_major", **kw).order == "head_major"
    split = leanattn.plan(LENS, strategy="split", splits=3, **kw)
    assert split.splits == 3 and split.strategy == "split"
    assert leanattn.plan(LENS, strategy="split", **kw).splits >= 1
    inv = leanattn.plan(LENS, batch_invariant=True, chunk_tiles=4, **kw)
    assert inv.batch_invariant
    assert leanattn.plan(LENS, **kw).splits == 0


def test_backend_resolves_auto_for_its_executor():
    kw = dict(q_heads=4, kv_heads=2, head_dim=64, workers=4, tile=32)
    cpu = leanattn.plan(LENS, backend="cpu", **kw)
    assert cpu.order == "token_major"
    assert cpu.segments() == leanattn.plan(LENS, **kw).segments()
    if "cuda" in leanattn.backends:
        assert leanattn.plan(LENS, backend="cuda", **kw).order == "head_major"
    else:
        with pytest.raises(ValueError, match="backend"):
            leanattn.plan(LENS, backend="cuda", **kw)
    with pytest.raises(ValueError, match="backend.*cpu"):
        leanattn.plan(LENS, backend="tpu", **kw)


def test_default_workers_and_text():
    p = leanattn.plan([100, 20], q_heads=2, kv_heads=1, head_dim=64)
    assert p.workers == leanattn.default_workers() >= 1
    assert "strategy lean" in str(p) and "worker 0" in str(p)
    assert "leanattn.Plan(strategy='lean'" in repr(p)
    assert "w0" in p.picture(32)
