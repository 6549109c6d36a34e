#!/usr/bin/env bash
# One training step of the seeds' network (784-256-10, sigmoid, SGD) in libsession and in
# PyTorch, side by side: batch 64 and 256, at each thread count of THREADS (default "1 2"; "1 16"
# on a 16-core host), alternating the two programs for ROUNDS rounds (default 3); then the
# medians over the rounds and the ratios:
#
#   bench: train_step_b<B>_t<T>_vs_torch: <x> x   our steps/s / PyTorch's (target >= 1.15)
#   bench: train_step_b<B>_t<T>_vs_gemm5: <x> x   our step time / its 5 GEMMs alone (target <= 1.1)
#
# Usage: bench/train_bench.sh [BUILD_DIR]   (default: build; configured if missing; a folder
# carried from another machine, tests/cuda/run-gpu-tests.sh --collect, runs as it is)
# PyTorch is Debian's python3-torch, run with PYTHON (default /usr/bin/python3); without it our
# figures are still printed. Never run by the tests: the machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${BUILD_DIR:-build}}
rounds=${ROUNDS:-3}
threads_list=${THREADS:-1 2}
for t in $threads_list; do
  [[ "$t" =~ ^[1-9][0-9]*$ ]] ||
    { echo "bench/train_bench.sh: THREADS is \"$threads_list\"; expected thread counts of 1 or more, e.g. \"1 16\"" >&2; exit 2; }
done
python=${PYTHON:-/usr/bin/python3}  # Debian's python3-torch is only visible to this one

if [ -f "$build/build.ninja" ]; then
  meson compile -C "$build" session-train-bench ses_cpu >/dev/null
elif [ ! -x "$build/bench/session-train-bench" ]; then
  meson setup "$build" --buildtype=release
  meson compile -C "$build" session-train-bench ses_cpu >/dev/null
fi
build=$(cd "$build" && pwd)
bench_bin=$build/bench/session-train-bench
# The CPU driver of this build (what `meson devenv` would offer), and the libraries a carried
# folder brings.
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
if [ -d "$build/carried/lib" ]; then
  export LD_LIBRARY_PATH="$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
torch_script=$PWD/bench/torch_train_step.py

have_torch=1
if ! "$python" -c 'import torch' 2>/dev/null; then
  have_torch=0
  echo "note: PyTorch is not installed for $python, so only libsession's figures follow."
  echo "      Install it with: sudo apt-get install python3-torch"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

for round in $(seq "$rounds"); do
  echo "=== round $round of $rounds ==="
  for threads in $threads_list; do
    for batch in 64 256; do
      SESSION_DRIVER_CPU_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" \
        "$bench_bin" --batch "$batch" | tee -a "$log"
      if [ "$have_torch" = 1 ]; then
        OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads" \
          "$python" "$torch_script" --batch "$batch" --threads "$threads" | tee -a "$log"
      fi
    done
  done
done

echo "=== medians over $rounds rounds ==="
# Lines are "bench: <name>: <value> <unit>"; print each name's median, then the ratios.
grep '^bench: ' "$log" | awk -v threads_list="$threads_list" '
  {
    name = $2; sub(/:$/, "", name)
    n[name]++; v[name, n[name]] = $3; unit[name] = $4
  }
  function median(name,    i, j, t, a, k) {
    k = n[name]
    for (i = 1; i <= k; i++) a[i] = v[name, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (name in n) m[name] = median(name)
    n_threads = split(threads_list, threads, " ")
    for (t = 1; t <= n_threads; t++) for (b = 64; b <= 256; b *= 4) {
      cfg = "b" b "_t" threads[t]
      ours = "train_step_" cfg; torch = "torch_train_step_" cfg
      if (ours in m) printf "bench: %s: %.1f steps/s\n", ours, m[ours]
      if (torch in m) printf "bench: %s: %.1f steps/s\n", torch, m[torch]
      if ((ours in m) && (torch in m))
        printf "bench: %s_vs_torch: %.3f x\n", ours, m[ours] / m[torch]
      if ((ours "_vs_gemm5") in m) printf "bench: %s_vs_gemm5: %.3f x\n", ours, m[ours "_vs_gemm5"]
      if ((ours "_vs_gemm6") in m) printf "bench: %s_vs_gemm6: %.3f x\n", ours, m[ours "_vs_gemm6"]
    }
  }'
