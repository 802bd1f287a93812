"""leanattn's ggml backend in llama-cpp-python, in two lines (docs/llama-cpp.md)::

    import leanattn.integrations.llama_cpp as lc
    lc.enable()                                   # before the first llama_cpp.Llama
    llm = llama_cpp.Llama(model_path="model.gguf", flash_attn=True)

``flash_attn=True`` is needed: without it llama.cpp builds no FLASH_ATTN_EXT node for the backend
to take (and with its default, "auto", it may turn flash attention off). Every context created
after ``enable()`` adds the backend as an ACCEL device, as llama.cpp's own tools do; it computes
each decode step's attention and leaves every other node to ggml's CPU backend.

What it loads: ``libggml-leanattn.so``, from the first of

1. ``enable(backend="/path/libggml-leanattn.so")``;
2. the environment variable ``LEANATTN_LLAMA_CPP_BACKEND``;
3. the one shipped in this package (``leanattn/lib/libggml-leanattn.so``), in wheels built with
   ``-Ccmake.define.LEANATTN_LLAMA_CPP=<llama.cpp>`` (docs/llama-cpp.md says why shipped, not
   built on demand);

into the ggml that the installed llama-cpp-python loaded (``ggml_backend_load`` of its
``libggml.so.0``, by soname: the package's lib folder holds copies, and a path would load a
second ggml that llama never asks). The backend's version policy decides whether it may: the
ggml version it was built against and the package's are the same, or both tested together
(``TESTED``); any other pair raises :class:`BackendError` naming the installed llama-cpp-python
and both ggml versions, with what to do (a tested llama-cpp-python, a backend rebuilt against
this one, or ``LEANATTN_GGML_ANY_VERSION=1`` at one's own risk).

Functions: :func:`enable`, :func:`nodes_computed` (attention nodes the backend computed so far
in this process: a way to see that it took them).
"""

from __future__ import annotations

import ctypes
import os
import pathlib
from dataclasses import dataclass
from typing import Optional, Union

__all__ = ["BackendError", "Enabled", "TESTED", "enable", "nodes_computed"]

# llama-cpp-python releases whose llama.cpp the backend was tested in, with their ggml versions
# (scripts/llama-cpp-compat.sh, bench/results/llama-cpp-compat-amd-epyc-2c-2026-12-06.md; the
# backend's kTestedGgmlVersions): a backend built against any of them loads into all three.
TESTED = {"0.3.30": "0.15.1", "0.3.35": "0.20.0", "0.3.36": "0.25.3"}

ENV_BACKEND = "LEANATTN_LLAMA_CPP_BACKEND"
_REBUILD = ("build one against it: scripts/llama-cpp.sh's recipe with that version, or "
            "cmake -S <leanattn> -B build/llama -DLEANATTN_LLAMA_CPP=<its llama.cpp build> && "
            "cmake --build build/llama --target ggml-leanattn, then enable(backend=...) or "
            f"{ENV_BACKEND}=<path> (docs/llama-cpp.md)")


class BackendError(RuntimeError):
    """enable() could not load leanattn's backend into llama-cpp-python's ggml (says why)."""


@dataclass(frozen=True)
class Enabled:
    """What enable() loaded, and where."""

    backend: str               # the libggml-leanattn.so loaded
    llama_cpp_python: str      # the installed llama-cpp-python's version
    ggml_version: str          # the ggml it runs in (llama-cpp-python's)
    built_ggml_version: str    # the ggml the backend was built against
    note: str                  # the version policy's line ("" for the build's own version)


_enabled: Optional[Enabled] = None
_lib: Optional[ctypes.CDLL] = None


def _installed_version() -> str:
    try:
        from importlib.metadata import version

        return version("llama_cpp_python")
    except Exception:  # an unusual install: the module's own attribute
        import llama_cpp

        return str(getattr(llama_cpp, "__version__", "unknown"))


def _packaged() -> pathlib.Path:
    return pathlib.Path(os.path.abspath(__file__)).parent.parent / "lib" / "libggml-leanattn.so"


def _find(backend: Union[str, os.PathLike, None], installed: str) -> pathlib.Path:
    tried = []
    if backend is not None:
        path = pathlib.Path(backend)
        if not path.is_file():
            raise BackendError(f"leanattn: enable(backend={str(backend)!r}): no such file")
        return path
    env = os.environ.get(ENV_BACKEND)
    if env:
        path = pathlib.Path(env)
        if not path.is_file():
            raise BackendError(f"leanattn: {ENV_BACKEND}={env}: no such file")
        return path
    tried.append(f"{ENV_BACKEND} (not set)")
    path = _packaged()
    if path.is_file():
        return path
    tried.append(f"{path} (this leanattn was built without the backend)")
    tested = ", ".join(TESTED)
    raise BackendError(
        f"leanattn: no ggml backend for llama-cpp-python {installed}: tried "
        f"{'; '.join(tried)}. A leanattn wheel built with the backend "
        f"(-Ccmake.define.LEANATTN_LLAMA_CPP=...) ships one that loads into llama-cpp-python "
        f"{tested}; or {_REBUILD}")


def enable(backend: Union[str, os.PathLike, None] = None) -> Enabled:
    """Loads leanattn's ggml backend into the installed llama-cpp-python's ggml.

    Call it before the first ``llama_cpp.Llama``, and create that with ``flash_attn=True``. A
    second call returns what the first loaded. Raises :class:`BackendError` when llama-cpp-python
    is missing, no backend is found, or the version policy refuses the pair (the message names
    the installed llama-cpp-python, both ggml versions and what to do).
    """
    global _enabled, _lib
    if _enabled is not None:
        return _enabled
    try:
        import llama_cpp  # loads the package's libllama and, with it, its libggml
    except ImportError as e:
        raise BackendError(f"leanattn: llama-cpp-python is not importable ({e}); pip install "
                           f"llama-cpp-python=={next(reversed(TESTED))}") from e
    installed = _installed_version()
    path = _find(backend, installed).resolve()
    try:
        # Resolves ggml's symbols from the libggml-base that llama_cpp loaded (by soname).
        lib = ctypes.CDLL(str(path))
        lib.leanattn_ggml_check.restype = ctypes.c_int
        lib.leanattn_ggml_check.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.leanattn_ggml_built_version.restype = ctypes.c_char_p
        lib.leanattn_ggml_running_version.restype = ctypes.c_char_p
        lib.leanattn_ggml_nodes_computed.restype = ctypes.c_longlong
    except (OSError, AttributeError) as e:
        raise BackendError(f"leanattn: {path} is not a loadable leanattn backend for "
                           f"llama-cpp-python {installed} ({e}); {_REBUILD}") from e
    built = lib.leanattn_ggml_built_version().decode()
    running = lib.leanattn_ggml_running_version().decode()
    message = ctypes.create_string_buffer(4096)
    if not lib.leanattn_ggml_check(message, len(message)):
        tested = ", ".join(f"{p} (ggml {g})" for p, g in TESTED.items())
        raise BackendError(
            f"leanattn: the backend {path} does not load into llama-cpp-python {installed} "
            f"(ggml {running}; the backend's ggml {built}): {message.value.decode()}. Install a "
            f"tested llama-cpp-python ({tested}), or use a backend rebuilt against this one: "
            f"enable(backend=...) or {ENV_BACKEND}=<path>")
    try:
        libggml = ctypes.CDLL("libggml.so.0")  # by soname: the copy libllama loaded
    except OSError as e:
        raise BackendError(f"leanattn: llama-cpp-python {installed}'s libggml.so.0 is not "
                           f"loaded ({e})") from e
    libggml.ggml_backend_load.restype = ctypes.c_void_p
    libggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
    libggml.ggml_backend_reg_by_name.restype = ctypes.c_void_p
    libggml.ggml_backend_reg_by_name.argtypes = [ctypes.c_char_p]
    if not libggml.ggml_backend_reg_by_name(b"LEANATTN"):
        if os.environ.get("LEANATTN_GGML", "1") in ("0", "off"):
            raise BackendError("leanattn: LEANATTN_GGML is set to "
                               f"{os.environ['LEANATTN_GGML']}: the backend is switched off")
        if not libggml.ggml_backend_load(str(path).encode()):
            raise BackendError(f"leanattn: ggml_backend_load({path}) failed in llama-cpp-python "
                               f"{installed} (ggml {running}); llama.cpp's log says why")
    if not libggml.ggml_backend_reg_by_name(b"LEANATTN"):
        raise BackendError(f"leanattn: {path} loaded but registered no LEANATTN backend")
    _lib = lib
    _enabled = Enabled(str(path), installed, running, built, message.value.decode())
    return _enabled


def nodes_computed() -> int:
    """FLASH_ATTN_EXT nodes the backend computed in this process so far (0 before enable())."""
    return 0 if _lib is None else int(_lib.leanattn_ggml_nodes_computed())
