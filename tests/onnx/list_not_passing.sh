#!/usr/bin/env bash
# Writes tests/onnx/not_passing.txt: every ONNX backend node test (libonnx-testdata) that
# cpu:0 or opencl:0 does not pass, with session-onnx-test's reason, and a count per reason
# first. Issue #22 asks for this list beside expected_pass.txt; regenerate both after adding ops:
#
#   tests/onnx/list_not_passing.sh [BUILD_DIR]     (default: build-test-plain, already built)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build-test-plain}
out=tests/onnx/not_passing.txt
log=$(mktemp)
trap 'rm -f "$log"' EXIT

env POCL_CACHE_DIR="$PWD/$build/pocl-cache" SESSION_DRIVER_OPENCL_CACHE_DIR="$PWD/$build/opencl-cache" \
  SESSION_LOADER_DEBUG=error SESSION_DRIVER_FILES="$build/plugins/cpu/cpu.json" \
  SESSION_ADD_DRIVER_FILES="$PWD/$build/plugins/opencl/opencl.json" \
  "$build/tools/session-onnx-test" --device cpu:0 --device opencl:0 --verbose >"$log" 2>&1
data=/usr/include/onnx/backend/test/data/node/
{
  echo "# ONNX backend node tests that a device does not pass, and why (session-onnx-test"
  echo "# --verbose); regenerate with tests/onnx/list_not_passing.sh. Summary lines count the"
  echo "# tests per device and reason (the text before the first colon of the reason, or the op"
  echo "# a model lacks); then one line per test: RESULT DEVICE TEST: REASON."
  grep '^onnx node tests on' "$log" | sed 's/^/# /'
  grep -E '^(UNSUPPORTED|FAIL) ' "$log" | sed "s|$data||g" |
    awk '{ dev = $2; r = $0; sub(/^[A-Z]+ +[^ ]+ +[^ ]+: /, "", r)
           if (match(r, /does not have: [^,]*/)) key = substr(r, RSTART + 15, RLENGTH - 15)
           else if (match(r, /has no [A-Za-z]+ /)) key = "no " substr(r, RSTART + 7, RLENGTH - 8) " kernel"
           else { key = r; sub(/:.*/, "", key) }
           n[dev " | " key]++ }
         END { for (k in n) printf "# %4d  %s\n", n[k], k }' | sort -k3,3 -k2,2nr
  grep -E '^(UNSUPPORTED|FAIL) ' "$log" | sed "s|$data||g" | sed -E 's/ +/ /' | sort -k2,2 -k3,3
} >"$out"
echo "wrote $out: $(grep -vc '^#' "$out") lines"
