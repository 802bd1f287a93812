"""leanattn.distributed in one process (the torch stage): the rank-order merge and its -inf/NaN
rules, the sharding layouts, and argument errors, on a 1-rank Gloo group (no spawn)."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest

import leanattn
from conftest import assert_close, import_torch, make_case

torch = import_torch()
dist = pytest.importorskip("torch.distributed")
ld = pytest.importorskip("leanattn.distributed")

INF = math.inf


def test_merge_partials_matches_merge_states():
    g = torch.Generator().manual_seed(1)
    outs, lses = torch.randn(3, 2, 4, 16, generator=g), torch.randn(3, 2, 4, generator=g) * 5
    out, lse = ld.merge_partials(outs, lses)
    ab, lab = leanattn.merge_states(outs[0], lses[0], outs[1], lses[1])
    want, want_lse = leanattn.merge_states(ab, lab, outs[2], lses[2])
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(lse, want_lse)


def test_merge_sums_in_a_fixed_pairwise_order():
    x = torch.randn(5, 3, 7, generator=torch.Generator().manual_seed(2)) * 1e4
    tree = ld._combine._tree_sum(x)
    assert torch.equal(tree, ((x[0] + x[1]) + (x[2] + x[3])) + x[4])
    outs, lses = torch.randn(5, 3, 8), torch.zeros(5, 3)
    out, lse = ld.merge_partials(outs, lses)  # equal weights: the tree sum of outs over 5
    assert torch.equal(out, ld._combine._tree_sum(outs) * (1.0 / torch.tensor(5.0)))
    assert torch.equal(lse, torch.full((3,), math.log(5.0), dtype=torch.float32))


def test_merge_partials_empty_parts_and_nan():
    outs = torch.tensor([[[1.0, 2.0], [0.0, 0.0], [0.0, 0.0], [5.0, 6.0]],
                         [[0.0, 0.0], [3.0, 4.0], [0.0, 0.0], [float("nan"), 1.0]]])
    lses = torch.tensor([[0.5, -INF, -INF, 0.0], [-INF, 2.0, -INF, 0.0]])
    out, lse = ld.merge_partials(outs, lses)
    assert torch.equal(out[0], outs[0, 0]) and lse[0] == 0.5  # an empty part is the identity
    assert torch.equal(out[1], outs[1, 1]) and lse[1] == 2.0
    assert torch.equal(out[2], torch.zeros(2)) and lse[2] == -INF  # all empty: zeros, -inf
    assert torch.isnan(out[3, 0]) and out[3, 1] == 3.5  # NaN stays in its dimension
    nan_lse = torch.tensor([[float("nan")], [1.0]])
    got, got_lse = ld.merge_partials(torch.ones(2, 1, 2), nan_lse)
    assert torch.isnan(got).all() and torch.isnan(got_lse).all()


@pytest.mark.parametrize("layout,interleave", [("contiguous", 1), ("interleaved", 1),
                                               ("interleaved", 16)])
@pytest.mark.parametrize("world", [1, 3, 4])
def test_layouts_partition_every_request(layout, interleave, world):
    lens = np.array([0, 1, 5, 16, 17, 1000])
    seen = [[] for _ in lens]
    for rank in range(world):
        local, pos = ld.shard_positions(lens, rank, world, layout, interleave)
        assert local.dtype == np.int32 and pos.shape == (len(lens), local.max(initial=0))
        for b, n in enumerate(local):
            assert (np.diff(pos[b, :n]) > 0).all() and (pos[b, n:] == -1).all()
            seen[b].extend(pos[b, :n])
    for b, n in enumerate(lens):
        assert sorted(seen[b]) == list(range(n))


def test_layout_errors():
    with pytest.raises(ValueError, match="^rank: "):
        ld.shard_positions([4], 2, 2)
    with pytest.raises(ValueError, match="^world_size: "):
        ld.shard_positions([4], 0, 0)
    with pytest.raises(ValueError, match="^layout: "):
        ld.shard_positions([4], 0, 2, "striped")
    with pytest.raises(ValueError, match="^interleave: "):
        ld.shard_positions([4], 0, 2, "interleaved", 0)
    with pytest.raises(ValueError, match="^seq_lens: "):
        ld.shard_positions([-1], 0, 2)


@pytest.fixture
def one_rank(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1, timeout=timedelta(seconds=10))
    yield
    dist.destroy_process_group()


def test_not_initialised():
    q = torch.zeros(1, 4, 16)
    with pytest.raises(RuntimeError, match="^group: "):
        ld.decode(q, torch.zeros(1, 1, 1, 16), torch.zeros(1, 1, 1, 16), [1])


@pytest.mark.parametrize("combine", ["all_gather", "all_reduce", "all_to_all"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_one_rank_group(rng, one_rank, combine, dtype):
    case = make_case(rng, [300, 0, 17], q_heads=8, kv_heads=2, head_dim=64)
    q, k, v = (torch.from_numpy(x).to(dtype) for x in (case.q, case.k, case.v))
    out, lse = ld.decode(q, k, v, case.seq_lens, combine=combine, workers=2, return_lse=True)
    assert out.dtype == dtype and lse.dtype == torch.float32
    ref, ref_lse = leanattn.reference(q, k, v, case.seq_lens, return_lse=True)
    assert_close(out, ref, str(dtype).replace("torch.", ""), lse, ref_lse)


def test_argument_errors(one_rank):
    q, k = torch.zeros(2, 4, 16), torch.zeros(2, 8, 1, 16)
    with pytest.raises(TypeError, match="^q: "):
        ld.decode(q.numpy(), k, k, [3, 8])
    with pytest.raises(ValueError, match="^q: "):
        ld.decode(q[0], k, k, [3, 8])
    with pytest.raises(ValueError, match="^combine: "):
        ld.decode(q, k, k, [3, 8], combine="ring")
    with pytest.raises(ValueError, match="^positions: "):
        ld.decode(q, k, k, [3, 8], positions=torch.zeros(2, 7, dtype=torch.int64))
    with pytest.raises(ValueError, match="^positions: "):
        ld.decode(q, k, k, [3, 8], positions=torch.zeros(2, 8))
    with pytest.raises(ValueError, match="^out: "):
        ld.decode(q, k, k, [3, 8], out=torch.empty(2, 4, 16, dtype=torch.float16))
    with pytest.raises(TypeError, match="^out: "):
        ld.decode(q, k, k, [3, 8], out=np.empty((2, 4, 16), np.float32))
    with pytest.raises(ValueError, match="^seq_lens: "):
        ld.decode(q, k, k, [3, 9])
