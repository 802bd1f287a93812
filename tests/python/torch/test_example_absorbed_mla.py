"""examples/absorbed_mla.py at small sizes, so that it cannot rot: its fp64 non-absorbed SDPA
attention against conftest's independent NumPy attention on K and V expanded from the same
weights, and both of its leanattn forms (absorbed over a contiguous or paged latent cache, V the
first kv_lora_rank values of its rows; non-absorbed with K 48 / V 32) against that; then the
example's own command line at its real sizes (K 576 / V 512, 16 heads)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from conftest import import_torch, numpy_attention

torch = import_torch()

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import absorbed_mla  # noqa: E402

TOLERANCE = {torch.float32: 2e-5, torch.bfloat16: 3e-2}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("page_size", [None, 16, 5])
def test_both_forms_equal_the_non_absorbed_attention(dtype, page_size):
    r = absorbed_mla.run(lens=(45, 0, 130, 1), heads=4, rank=64, nope=32, rope=16, v_dim=32,
                         dtype=dtype, page_size=page_size, seed=3)
    layer, scale = r["layer"], float(r["scale"])
    assert scale == pytest.approx(48 ** -0.5)
    # K and V of every head expanded from the latents, in NumPy: the example's reference.
    c, k_rope = layer["c"].numpy(), layer["k_rope"].numpy()
    k_nope = np.einsum("hdr,btr->bthd", layer["w_uk"].numpy(), c)
    k = np.concatenate([k_nope, np.broadcast_to(k_rope[:, :, None], k_nope.shape[:3] + (16,))],
                       -1)
    v = np.einsum("hdr,btr->bthd", layer["w_uv"].numpy(), c)
    q = np.concatenate([layer["q_nope"].numpy(), layer["q_rope"].numpy()], -1)
    want, _ = numpy_attention(q, k, v, layer["lens"].numpy(), scale=scale)
    # (numpy_attention rounds the scale to float32, as the library holds it.)
    np.testing.assert_allclose(r["want"].numpy(), want, rtol=1e-6, atol=1e-6)
    assert r["absorbed"].shape == (4, 4, 32) and np.abs(want).max() > 0.1
    for name in ("absorbed", "expanded"):
        np.testing.assert_allclose(r[name].numpy(), want, rtol=TOLERANCE[dtype],
                                   atol=TOLERANCE[dtype])


def test_the_command_line(capsys):
    assert absorbed_mla.main(["--page-size", "64"]) == 0
    out = capsys.readouterr().out
    assert "both forms within 0.0001 of the non-absorbed attention: True" in out
