#!/usr/bin/env bash
# run_peers.sh: leanattn and its CPU peers side by side on the same decode shapes, same thread
# count, pinned, each checked against an fp64 reference. Installs what it needs (Debian's
# libdnnl-dev; a venv with numpy, matplotlib and torch from PyPI; the llama-cpp-python sdist for
# ggml's sources), builds leanattn and the harnesses in bench/peers, runs every shape, and writes
#   bench/results/cpu-peers-<cpu-slug>-<date>.csv   (+ .json: versions, machine, skipped runs)
# (--quick: small shapes, few repeats, written as ...-smoke.csv). Every shape runs in rounds:
# each round runs leanattn and every peer once (a share of the repeats each), so that a drift of
# the machine's bandwidth hits all of them alike; leanattn's probe passes sit between its runs.
# --mla: DeepSeek's absorbed MLA decode instead (one KV head, K 576 wide whose first 512 values
# are V, no V cache), written as bench/results/cpu-mla-peers-<cpu-slug>-<date>.csv.
# See bench/README.md.
#
#   bench/peers/run_peers.sh [--quick] [--mla] [--threads N] [--repeat N] [--rounds N]
#                            [--peers LIST] [--contexts LIST] [--out FILE] [--no-install]
#                            [--jobs N] [--leanattn BIN]
set -euo pipefail

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  cat <<'EOF'
options:
  --quick        small contexts (1k, 4k), 5 repeats: a smoke test of the whole pipeline
  --mla          absorbed MLA decode: 128 query heads / 1 KV head, K 576 / V 512 in K's rows,
                 contexts 4096,16384,65536 (--quick 1024,4096) and a mixed batch with 16 query
                 heads; leanattn in bf16 and f16 (`leanattn bench --mla`), ggml f16 (V a view
                 of K), torch f32 and bf16 with V = K (flash backend; see TORCH_VARIANTS)
  --threads N    threads for every implementation (default: number of cores)
  --repeat N     timed runs per implementation and shape (default 20; --quick 6)
  --rounds N     rounds per shape, each running every implementation once with repeat / rounds
                 timed runs (rounded up; default 3, --quick 2)
  --peers LIST   comma-separated subset of leanattn,ggml,torch,onednn (default: all)
  --contexts L   comma-separated context lengths (default 4096,32768,131072; --quick 1024,4096)
  --out FILE     results CSV (default: bench/results/cpu-[mla-]peers-<cpu>-<date>[-smoke].csv)
  --no-install   skip apt/pip/sdist steps (use what build/peers* already holds)
  --jobs N       parallel compile jobs (default 2)
  --leanattn BIN use this leanattn binary instead of building the release preset
environment: LLAMA_CPP_PYTHON_VERSION (default 0.3.36), TORCH_SPEC (pip spec, default torch),
  TORCH_VARIANTS (torch_decode.py --variants; default f32 and f16, each with enable_gqa and
  with expanded K/V; --mla: f32 and bf16 with V = K, each with enable_gqa and with stride-0
  expanded K/V), LEANATTN_ARGS (extra `leanattn bench` flags,
  e.g. "--with-head-major --with-invariant"), PEERS_VENV (the Python venv, default
  build/peers-venv; with --no-install any venv with torch and numpy, such as
  ~/.cache/leanattn/venv-torch-*). ggml's sources: the sdist under build/peers, else the same
  llama.cpp release unpacked by scripts/llama-cpp.sh (~/.cache/leanattn/llama.cpp-<version>-*).
EOF
}

die() { echo "run_peers.sh: error: $*" >&2; exit 1; }
say() { echo "run_peers.sh: $*" >&2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
QUICK=0 MLA=0 THREADS=$(nproc) REPEAT="" ROUNDS="" PEERS="leanattn,ggml,torch,onednn" OUT="" INSTALL=1 JOBS=2
LEANATTN="" CONTEXTS_ARG=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --mla) MLA=1 ;;
    --threads) THREADS=${2:?--threads needs a value}; shift ;;
    --repeat) REPEAT=${2:?--repeat needs a value}; shift ;;
    --rounds) ROUNDS=${2:?--rounds needs a value}; shift ;;
    --peers) PEERS=${2:?--peers needs a value}; shift ;;
    --contexts) CONTEXTS_ARG=${2:?--contexts needs a value}; shift ;;
    --out) OUT=${2:?--out needs a value}; shift ;;
    --no-install) INSTALL=0 ;;
    --jobs) JOBS=${2:?--jobs needs a value}; shift ;;
    --leanattn) LEANATTN=${2:?--leanattn needs a value}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive integer (got '$THREADS')"
[ -z "$REPEAT" ] && { [ "$QUICK" = 1 ] && REPEAT=6 || REPEAT=20; }
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer (got '$REPEAT')"
[ -z "$ROUNDS" ] && { [ "$QUICK" = 1 ] && ROUNDS=2 || ROUNDS=3; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer (got '$ROUNDS')"
PER_ROUND=$(((REPEAT + ROUNDS - 1) / ROUNDS))
for p in ${PEERS//,/ }; do
  case "$p" in leanattn|ggml|torch|onednn) ;; *) die "--peers: unknown '$p' (leanattn,ggml,torch,onednn)" ;; esac
done
has() { [[ ",$PEERS," == *",$1,"* ]]; }

LCP_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
VENV=${PEERS_VENV:-build/peers-venv}
PY=$VENV/bin/python
SDIST_DIR=build/peers
GGML_SRC=$ROOT/$SDIST_DIR/llama_cpp_python-$LCP_VERSION/vendor/llama.cpp/ggml
if [ ! -f "$GGML_SRC/CMakeLists.txt" ]; then  # the same release, unpacked by scripts/llama-cpp.sh
  for cached in "${LEANATTN_CACHE:-$HOME/.cache/leanattn}"/llama.cpp-"$LCP_VERSION"-*/src/ggml; do
    [ -f "$cached/CMakeLists.txt" ] && GGML_SRC=$cached
  done
fi
HARNESS=build/peers/harness

# ---- install ------------------------------------------------------------------------------------
if [ "$INSTALL" = 1 ]; then
  say "installing Debian packages (build, python, libdnnl-dev) where missing"
  scripts/install-deps.sh python peers
  if [ ! -x "$PY" ]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip
  fi
  if ! "$PY" -c "import numpy, matplotlib, torch, scikit_build_core" 2>/dev/null; then
    say "pip: numpy matplotlib ${TORCH_SPEC:-torch} scikit-build-core (torch is large)"
    "$PY" -m pip install -q numpy matplotlib "${TORCH_SPEC:-torch}" scikit-build-core
  fi
  if has ggml && [ ! -f "$GGML_SRC/CMakeLists.txt" ]; then
    say "pip download: llama-cpp-python $LCP_VERSION source distribution (ggml's sources)"
    mkdir -p "$SDIST_DIR"
    # --no-build-isolation: pip reads the sdist's metadata with the venv's scikit-build-core
    # instead of building its build dependencies from source.
    "$PY" -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
      "llama-cpp-python==$LCP_VERSION" -d "$SDIST_DIR"
    tar -xzf "$SDIST_DIR/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$SDIST_DIR"
  fi
fi
has ggml && { [ -f "$GGML_SRC/CMakeLists.txt" ] || die "no ggml sources at $GGML_SRC (run without --no-install)"; }
if has torch; then "$PY" -c "import torch, numpy" 2>/dev/null || die "$PY lacks torch/numpy (run without --no-install)"; fi
[ -x "$PY" ] || die "$PY missing (run without --no-install)"

# ---- build --------------------------------------------------------------------------------------
if has leanattn && [ -z "$LEANATTN" ]; then
  say "building leanattn (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release -j"$JOBS" --target leanattn_cli >/dev/null
  LEANATTN=build/release/apps/leanattn/leanattn
fi
has leanattn && { [ -x "$LEANATTN" ] || die "no leanattn binary at '$LEANATTN'"; }
if has ggml || has onednn; then
  say "building the peer harnesses in $HARNESS"
  ggml_flag=""
  has ggml && ggml_flag=$GGML_SRC
  cmake -S bench/peers -B "$HARNESS" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_SOURCE_DIR="$ggml_flag" >"$HARNESS.configure.log" 2>&1 ||
    die "configuring bench/peers failed (see $HARNESS.configure.log)"
  targets=()
  has ggml && targets+=(ggml_decode)
  has onednn && targets+=(onednn_decode)
  cmake --build "$HARNESS" -j"$JOBS" --target "${targets[@]}" >"$HARNESS.build.log" 2>&1 ||
    die "building the harnesses failed (see $HARNESS.build.log)"
fi

# ---- shapes -------------------------------------------------------------------------------------
# label q_heads kv_heads head_dim head_dim_v v_in_k seq_lens (comma-separated: more than one = a
# ragged batch); v_in_k 1: V is the first head_dim_v values of K's rows (no V cache)
if [ "$QUICK" = 1 ]; then
  CONTEXTS=(1024 4096)
  MIXED=4096,256,512,128,1024,64,2048,32
  MIXED_MLA=4096,256,512,128
elif [ "$MLA" = 1 ]; then
  CONTEXTS=(4096 16384 65536)
  MIXED_MLA=16384,1024,2048,512
else
  CONTEXTS=(4096 32768 131072)
  MIXED=65536,1024,2048,512,8192,300,4096,100
fi
if [ -n "$CONTEXTS_ARG" ]; then
  [[ "$CONTEXTS_ARG" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--contexts: comma-separated token counts (got '$CONTEXTS_ARG')"
  IFS=, read -r -a CONTEXTS <<<"$CONTEXTS_ARG"
fi
SHAPES=()
if [ "$MLA" = 1 ]; then
  # DeepSeek-V3's absorbed decode (128 heads), and a ragged batch at 16 heads per rank.
  for ctx in "${CONTEXTS[@]}"; do SHAPES+=("mla-deepseek 128 1 576 512 1 $ctx"); done
  SHAPES+=("mixed-mla 16 1 576 512 1 $MIXED_MLA")
  LEAN_DTYPES=(bf16 f16)
  DEFAULT_TORCH_VARIANTS=f32:enable_gqa:k,f32:broadcast:k,bf16:enable_gqa:k,bf16:broadcast:k
else
  for ctx in "${CONTEXTS[@]}"; do
    SHAPES+=("gqa-llama3-8b 32 8 128 128 0 $ctx" "mha 32 32 128 128 0 $ctx" "mqa 8 1 128 128 0 $ctx")
  done
  SHAPES+=("mixed-gqa 32 8 128 128 0 $MIXED")
  LEAN_DTYPES=(f16)
  DEFAULT_TORCH_VARIANTS=f32:enable_gqa,f32:expand,f16:enable_gqa,f16:expand
fi

# ---- run ----------------------------------------------------------------------------------------
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
SLUG=$(echo "$CPU" | tr 'A-Z' 'a-z' | sed -E 's/\((r|tm)\)//g; s/[^a-z0-9]+/-/g; s/^-|-$//g')
DATE=$(date -u +%Y-%m-%d)
suffix=""
[ "$QUICK" = 1 ] && suffix=-smoke
mla_tag=""
[ "$MLA" = 1 ] && mla_tag=mla-
[ -z "$OUT" ] && OUT=bench/results/cpu-${mla_tag}peers-$SLUG-$DATE$suffix.csv
RUN=build/peers/run-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RUN"
: >"$RUN/shapes.tsv"
: >"$RUN/peers.jsonl"
: >"$RUN/skipped.txt"
PIN=()
[ "$THREADS" -le "$(nproc)" ] && PIN=(taskset -c "0-$((THREADS - 1))")
OMP_ENV=(env OMP_NUM_THREADS="$THREADS" OMP_PROC_BIND=close OMP_PLACES=cores)
MEM_AVAIL=$(($(awk '/MemAvailable/ {print $2}' /proc/meminfo) * 1024))
say "$CPU, $THREADS threads, $ROUNDS rounds of $PER_ROUND repeats, ${#SHAPES[@]} shapes; logs in $RUN"

# Runs a peer harness; its JSON line goes to peers.jsonl. Exit code 3 = shape not supported.
run_peer() {
  local name=$1 label=$2 lens=$3; shift 3
  local rc=0
  "$@" >>"$RUN/peers.jsonl" 2>>"$RUN/$name.log" || rc=$?
  if [ "$rc" = 3 ]; then
    echo "$name $label $lens: not supported ($(tail -1 "$RUN/$name.log"))" >>"$RUN/skipped.txt"
  elif [ "$rc" != 0 ]; then
    die "$name failed on $label $lens (exit $rc; see $RUN/$name.log)"
  fi
}

i=0
for shape in "${SHAPES[@]}"; do
  read -r label qh kvh d dv vink lens <<<"$shape"
  i=$((i + 1))
  tokens=$(echo "$lens" | tr ',' '\n' | awk '{s += $1} END {print s}')
  longest=$(echo "$lens" | tr ',' '\n' | sort -n | tail -1)
  batch=$(echo "$lens" | tr ',' '\n' | wc -l)
  row=$((d + (vink ? 0 : dv)))  # K+V values per token and KV head
  kv_bytes=$((tokens * kvh * row * 2))
  # The largest footprint (torch pads a ragged batch) plus a probe buffer must fit in half of RAM.
  need=$((3 * batch * longest * kvh * row * 2))
  if [ "$need" -gt $((MEM_AVAIL / 2)) ]; then
    echo "all $label $lens: skipped, needs $((need >> 20)) MiB" >>"$RUN/skipped.txt"
    say "[$i/${#SHAPES[@]}] $label $lens: skipped (memory)"
    continue
  fi
  dims="d $d"
  [ "$dv" = "$d" ] || dims="d $d/$dv"
  [ "$vink" = 1 ] && dims="$dims (V in K's rows)"
  say "[$i/${#SHAPES[@]}] $label: $qh/$kvh heads, $dims, seq_lens $lens ($((kv_bytes >> 20)) MiB KV)"
  args=(--q-heads "$qh" --kv-heads "$kvh" --head-dim "$d" --seq-lens "$lens")
  lean_args=("${args[@]}")
  [ "$MLA" = 1 ] && lean_args=(--mla --q-heads "$qh" --seq-lens "$lens")  # 1 KV head, 576/512
  [ "$dv" = "$d" ] || args+=(--head-dim-v "$dv")
  [ "$vink" = 1 ] && args+=(--v-in-k)
  for round in $(seq "$ROUNDS"); do
    lean_csvs=("")
    if has leanattn; then
      lean_csvs=()
      for dtype in "${LEAN_DTYPES[@]}"; do
        lean_csv=$RUN/leanattn-$i-$round-$dtype.csv
        lean_csvs+=("$lean_csv")
        # leanattn pins its own workers; exit 1 = some strategy failed its check (in the CSV).
        rc=0
        "$LEANATTN" bench "${lean_args[@]}" --dtype "$dtype" --workers "$THREADS" \
          --repeat "$PER_ROUND" --csv "$lean_csv" ${LEANATTN_ARGS:-} >>"$RUN/leanattn.log" 2>&1 || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 1 -a -f "$lean_csv" ] || die "leanattn bench failed (exit $rc; see $RUN/leanattn.log)"
      done
    fi
    for lean_csv in "${lean_csvs[@]}"; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$qh" "$kvh" "$d" "$lens" "$lean_csv" >>"$RUN/shapes.tsv"
    done
    peer_args=("${args[@]}" --label "$label" --threads "$THREADS" --repeat "$PER_ROUND")
    has ggml && run_peer ggml "$label" "$lens" "${PIN[@]}" "$HARNESS/ggml_decode" "${peer_args[@]}"
    has torch && run_peer torch "$label" "$lens" "${OMP_ENV[@]}" "${PIN[@]}" "$PY" \
      bench/peers/torch_decode.py "${peer_args[@]}" \
      --variants "${TORCH_VARIANTS:-$DEFAULT_TORCH_VARIANTS}"
    has onednn && run_peer onednn "$label" "$lens" "${OMP_ENV[@]}" "${PIN[@]}" \
      "$HARNESS/onednn_decode" "${peer_args[@]}"
  done
done

# ---- results ------------------------------------------------------------------------------------
"$PY" - "$RUN" "$THREADS" "$REPEAT" "$LCP_VERSION" "$QUICK" "$ROUNDS" "$MLA" <<'EOF'
import json, platform, subprocess, sys
from pathlib import Path
run, threads, repeat, lcp, quick, rounds, mla = sys.argv[1:]
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception:
        return ""
versions = {}
for line in (Path(run) / "peers.jsonl").read_text().splitlines():
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    versions[r["impl"]] = r["version"]
versions["llama-cpp-python (ggml sources)"] = lcp
versions["numpy"] = sh(f"{sys.executable} -c 'import numpy; print(numpy.__version__)'")
versions["compiler"] = sh("c++ --version | head -1")
versions["libdnnl-dev"] = sh("dpkg-query -W -f='${Version}' libdnnl-dev")
meta = {
    "date": sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
    "commit": sh("git rev-parse --short HEAD") + ("-dirty" if sh("git status --porcelain --untracked-files=no") else ""),
    "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'"),
    "cores": int(sh("nproc") or 0), "threads": int(threads), "repeat": int(repeat),
    "rounds": int(rounds), "quick": quick == "1", "mla": mla == "1", "kernel": platform.release(), "versions": versions,
    "skipped": (Path(run) / "skipped.txt").read_text().splitlines(),
    "run_dir": run,
}
(Path(run) / "meta.json").write_text(json.dumps(meta, indent=2))
EOF
"$PY" bench/peers/combine.py "$RUN" "$OUT"
say "done: $OUT (and ${OUT%.csv}.json)"
