#!/usr/bin/env bash
# The command line as a newcomer meets it: each case runs the built `leanattn` with some
# arguments and checks its exit status, a pattern its output (stdout and stderr together) must
# match and, optionally, one it must not (for example, that a bad --simd is refused before the
# bandwidth probe runs). Registered with CTest as CliTest (tests/cli/CMakeLists.txt).
#   tests/cli/cli_cases.sh path/to/leanattn
# Prints each failure and "N passed, N failed"; exit status 1 on any failure.
set -u
tool=$1
passed=0
failed=0

# expect STATUS PATTERN ABSENT ARGS...: ABSENT "" checks nothing.
expect() {
  local want=$1 pattern=$2 absent=$3
  shift 3
  local out rc=0
  out=$("$tool" "$@" 2>&1) || rc=$?
  if [ "$rc" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out" &&
    { [ -z "$absent" ] || ! grep -qE -- "$absent" <<<"$out"; }; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: leanattn $* -> status $rc (want $want); want /$pattern/${absent:+, not /$absent/}:"
    head -6 <<<"$out" | sed 's/^/    /'
  fi
}

cores=$(nproc)
error="^leanattn (plan|bench|check): error: "

# --version and the help: defaults shown, the bench's columns explained.
expect 0 '^leanattn [0-9]+\.[0-9]+\.[0-9]+$' '' --version
expect 0 '--workers INT=0 .*0 = one per core' '' plan --help
expect 0 '--seq-len INT=4096' '' plan --help
expect 0 'of_probe +GB/s over the read-bandwidth probe' '' bench --help
expect 0 'vs_split +time of split over' '' bench --help

# plan: the CPU engine's plan (token-major), one worker per core for --workers 0.
expect 0 "^strategy lean \(token_major\), $cores workers?," '' plan --seq-lens 900,7 --kv-heads 2 \
  --workers 0
expect 0 '^strategy lean \(token_major\), 1 worker,' '' plan --seq-lens 900,7 --kv-heads 2 \
  --workers 1
expect 0 '^strategy lean \(head_major\), 3 workers,' '' plan --seq-lens 900,7 --kv-heads 2 \
  --workers 3 --order head_major
expect 0 '"order": "token_major"' '' plan --seq-lens 900,7 --kv-heads 2 --workers 3 \
  --strategy split --format json
expect 2 "${error}--workers: must be in \[0, 65536\] \(0 = one per core\) \(got -1\)" '' plan \
  --workers -1

# K and V of different widths: DeepSeek's K 192 / V 128, and --mla (one latent cache, K 576 / V
# 512, one KV head, 128 query heads); the shape flags --mla sets are refused beside it.
expect 0 'problem: 1 requests x 1 kv_heads, 128 query rows per kv_head, head_dim 576, head_dim_v 512' \
  '' plan --mla --seq-len 1000 --workers 2
expect 0 '"head_dim_v": 128' '' plan --head-dim 192 --head-dim-v 128 --format json
expect 2 "${error}--head-dim-v: must be 0 \(V as wide as K\) or a multiple of 16 in \[16, head_dim = 64\] \(got 80\)" \
  '' plan --head-dim 64 --head-dim-v 80
expect 2 '--mla excludes --kv-heads|--kv-heads excludes --mla' '' plan --mla --kv-heads 2
expect 2 "${error}--shared-kv: needs V of K's type" 'probe: reading' bench --shared-kv \
  --kv-dtype q8_0 --v-dtype f16 --head-dim 64 --seq-len 64

# Lengths: one flag names its own value; mixing the uniform and ragged forms is refused.
# A mixed batch: its counts shown; a bad count named by its flag.
expect 0 'seq_lens 900,7,40, query tokens 30,1,0' '' plan --seq-lens 900,7,40 --query-lens 30,1,0 \
  --workers 2
expect 0 'cost per worker .*most / least 1\.[0-9]+' '' plan --seq-lens 900,7,40 \
  --query-lens 30,1,0 --workers 2
expect 0 '"worker_cost": \[' '' plan --seq-lens 900,7,40 --query-lens 30,1,0 --workers 2 \
  --format json
expect 2 "${error}--query-lens: must be comma-separated whole numbers" '' plan --seq-lens 9,7 \
  --query-lens 3,x
expect 2 "${error}--seq-lens: must be 0 or >= request 1's query token count 8" '' plan \
  --seq-lens 9,7 --query-lens 3,8
expect 2 '--q-len excludes --query-lens|--query-lens excludes --q-len' '' plan --q-len 2 \
  --query-lens 1,1 --seq-lens 9,7
expect 2 "${error}--seq-len: must be in \[0, 2\^31\) tokens \(got 5000000000\)" '' plan \
  --seq-len 5000000000
expect 2 "${error}--seq-lens: must be in \[0, 2\^31\) tokens \(got 5000000000\)" '' plan \
  --seq-lens 7,5000000000
expect 2 "${error}--seq-lens: must be comma-separated whole numbers of tokens \(entry 2 of '5,,6' is empty\)" \
  '' plan --seq-lens 5,,6
expect 2 "entry 3 of '5,6,x' is 'x'" '' plan --seq-lens 5,6,x
expect 2 "entry 2 of '5,' is empty" '' plan --seq-lens 5,
expect 2 '--seq-lens excludes --seq-len|--seq-len excludes --seq-lens' '' plan --seq-len 100 \
  --seq-lens 5,6
expect 2 '--seq-lens excludes --batch|--batch excludes --seq-lens' '' plan --batch 2 --seq-lens 5,6

# A missing value names the option instead of converting the next flag.
expect 2 '--seq-len: missing value \(the next argument, --kv-heads, is a flag\)' 'Could not convert' \
  plan --seq-len --kv-heads 2
expect 2 '--json: missing value' '' bench --json --csv out.csv --seq-len 64

# bench: refused before the bandwidth probe allocates or runs anything.
expect 2 "${error}--seq-len: the case needs [0-9.]+ GiB for K and V and [0-9.]+ GiB for the read probe, more than the [0-9.]+ GiB of memory available" \
  'probe: reading|bad_alloc' bench --seq-len 100000000 --q-heads 64 --kv-heads 64
expect 2 "${error}--seq-lens: the case needs" 'probe: reading' bench --seq-lens 100000000,5 \
  --q-heads 64 --kv-heads 64
expect 2 "${error}--simd: " 'probe: reading' bench --simd avx512 --seq-len 64
expect 2 "${error}--workers: " 'probe: reading' bench --workers -2 --seq-len 64

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
