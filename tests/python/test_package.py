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


def test_dir_lists_the_api_only():
    # Submodules appear once imported (by the caller, or torch_ops when torch is loaded).
    submodules = {"distributed", "integrations", "torch_ops"}
    public = {n for n in dir(leanattn) if not n.startswith("_")} - submodules
    assert public == set(leanattn.__all__) - {"__version__"}


def test_leanattn_command_is_installed_with_the_package():
    import shutil
    import subprocess
    import sys

    want = f"leanattn {leanattn.__version__}"
    command = shutil.which("leanattn", path=str(pathlib.Path(sys.executable).parent))
    assert command is not None, "pip install did not install the `leanattn` console script"
    for argv in ([command, "--version"], [sys.executable, "-m", "leanattn", "--version"]):
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == want
    out = subprocess.run([command, "plan", "--seq-lens", "300,0,17", "--kv-heads", "2",
                          "--workers", "2", "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert '"order": "token_major"' in out.stdout
