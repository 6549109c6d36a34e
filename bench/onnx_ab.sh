#!/usr/bin/env bash
# A/B of libsession's own settings on the ONNX bench's models, in one run: for choosing a
# default (a driver option, a spin time) on a machine, e.g. a lent 16-core host.
#
#   bench/onnx_ab.sh [BUILD_DIR] SETTING SETTING...
#
# A SETTING is a comma-separated list of environment assignments (or "-" for none), e.g.
#   bench/onnx_ab.sh build-rel SESSION_DRIVER_CPU_SPIN_US=auto SESSION_DRIVER_CPU_SPIN_US=50
#   THREADS="16" bench/onnx_ab.sh build-gpu - SESSION_DRIVER_CPU_CONV_SLICES=images
# For each model and thread count, each round runs `session-run MODEL --repeat N` once under
# every setting, the order turned by one each round; a figure is the median over the rounds of
# each process's median of runs 2..N, and its ratio is the first setting's time / its own (above
# 1: faster than the first). Prints one line per figure:
#   ab: MODEL tT SETTING: X ms (ratio R)
# Environment: THREADS (default "2"), ROUNDS (default 3), MODELS (default
# squeezenet_b1,resnet50_b1,cnn_b64,mlp_b64: bench/onnx_models.py's names; exported into
# BUILD_DIR/onnx-bench/models when missing, as bench/onnx_bench.sh does), REPEAT (one N for every
# model), PYTHON (for the export), BENCH_DEADLINE_S (default 300: no process starts later).
# Never run by the tests.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

build=build
if [ $# -gt 0 ] && [[ "$1" != *=* ]] && [ "$1" != - ]; then build=$1; shift; fi
[ $# -ge 2 ] || { echo "usage: bench/onnx_ab.sh [BUILD_DIR] SETTING SETTING... (see the file)" >&2; exit 2; }
case "$build" in /*) ;; *) build=$root/$build ;; esac
[ -x "$build/tools/session-run" ] || { echo "no $build/tools/session-run: build it first" >&2; exit 2; }
settings=("$@")
threads_list=${THREADS:-2}
rounds=${ROUNDS:-3}
python=${PYTHON:-/usr/bin/python3}
deadline=$((SECONDS + ${BENCH_DEADLINE_S:-300}))
models=$(echo "${MODELS:-squeezenet_b1,resnet50_b1,cnn_b64,mlp_b64}" | tr ',' ' ')
declare -A runs=([mlp_b1]=1000 [mlp_b64]=300 [bigmlp_b128]=30 [cnn_b64]=60 [squeezenet_b1]=40
                 [resnet50_b1]=15)

if [ -d "$build/carried/lib" ]; then
  export LD_LIBRARY_PATH="$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
unset SESSION_LOADER_DEBUG
dir=$build/onnx-bench/models
mkdir -p "$dir"
for m in $models; do
  if [ ! -f "$dir/$m.onnx" ]; then
    timeout 300 "$python" "$root/bench/onnx_models.py" "$dir" --models "$m" >/dev/null 2>&1 ||
      echo "note: $m could not be exported with $python"
  fi
done
echo "=== bench/onnx_ab.sh: $build; threads: $threads_list; rounds: $rounds;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for m in $models; do
  [ -f "$dir/$m.onnx" ] || { echo "note: no $m.onnx: skipped"; continue; }
  n=${REPEAT:-${runs[$m]:-20}}
  for t in $threads_list; do
    for r in $(seq "$rounds"); do
      for k in $(seq 0 $((${#settings[@]} - 1))); do
        i=$(((k + r) % ${#settings[@]}))
        [ "$SECONDS" -lt "$deadline" ] || { echo "note: BENCH_DEADLINE_S reached"; break 3; }
        env_args=()
        [ "${settings[$i]}" = - ] || IFS=, read -r -a env_args <<<"${settings[$i]}"
        ms=$(env "${env_args[@]}" SESSION_DRIVER_CPU_THREADS="$t" OPENBLAS_NUM_THREADS="$t" \
          timeout -k 5 120 "$build/tools/session-run" "$dir/$m.onnx" --device cpu \
          --input "x=$dir/${m}_input.npy" --repeat "$n" 2>&1 |
          awk '/^runs 2 to / { for (j = 1; j < NF; j++) if ($j == "median") print $(j + 1) }')
        [ -n "$ms" ] && echo "$m $t $i $ms" >>"$log"
      done
    done
  done
done

# The median over the rounds of each (model, threads, setting), then the ratio to setting 0.
sort -k1,1 -k2,2n -k3,3n -k4,4g "$log" | awk -v names="$(printf '%s\n' "${settings[@]}")" '
  BEGIN { n = split(names, setting, "\n") }
  { key = $1 " " $2 " " $3; v[key, ++c[key]] = $4; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
  END {
    for (i = 1; i <= k; i++) {
      key = order[i]; m = c[key]
      med[key] = m % 2 ? v[key, (m + 1) / 2] : (v[key, m / 2] + v[key, m / 2 + 1]) / 2
    }
    for (i = 1; i <= k; i++) {
      split(order[i], f, " "); base = f[1] " " f[2] " 0"
      ratio = (base in med) && med[order[i]] > 0 ? sprintf("%.2f", med[base] / med[order[i]]) : "?"
      printf "ab: %s t%s %s: %.3f ms (ratio %s)\n", f[1], f[2], setting[f[3] + 1], med[order[i]], ratio
    }
  }'
