"""What the llama-server benchmarks share (bench/llama_cpp_parallel.py, bench/llama_cpp_server_ttft.py):
commands run from the repository root, JSON posts to the server, the backend's build, the CPU's name."""

import json
import pathlib
import subprocess
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.loads(r.read())


def build_backend(llama: str) -> str:
    """Builds libggml-leanattn.so against `llama` (scripts/llama-cpp.sh's tree) in build/llama."""
    sh("cmake", "-S", ".", "-B", "build/llama", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
       "-DLEANATTN_CUDA=OFF", "-DLEANATTN_BUILD_CLI=OFF", f"-DLEANATTN_LLAMA_CPP={llama}")
    sh("cmake", "--build", "build/llama", "-j", "2", "--target", "ggml-leanattn")
    return str(ROOT / "build/llama/integrations/llama.cpp/libggml-leanattn.so")


def cpu_name() -> str:
    return sh("bash", "-c", "grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'")
