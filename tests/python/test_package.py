"""The installed package: version from CMakeLists.txt, the backends built, the typing marker,
the README's Python example run as a new user would, and an import that loads no torch."""

from __future__ import annotations

import pathlib
import re

import leanattn

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_matches_the_cmake_project():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    want = re.search(r"project\(leanattn VERSION ([0-9.]+)", cmake).group(1)
    assert leanattn.__version__ == want


def test_backends_and_info():
    assert leanattn.backends[0] == "cpu"
    assert set(leanattn.backends) <= {"cpu", "cuda"}
    assert leanattn.simd_targets()
    assert leanattn.default_workers() >= 1
    assert set(leanattn.__all__) <= set(dir(leanattn))


def test_typing_marker_and_stubs_are_installed():
    package = pathlib.Path(leanattn.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_leanattn.pyi").exists()


def test_readme_python_example_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_import_does_not_load_torch_or_transformers():
    import subprocess
    import sys

    code = ("import sys, leanattn; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
