#!/usr/bin/env bash
# The Python example's training step against the C one: python/examples/train_fashion_mnist.py's
# step (bench/python_train_step.py: one MonitoredSession.run of the loss and the SGD step) and
# session-train-bench's (bench/train_bench.c: a compiled plan of the same network), same batch and
# threads, alternating the two programs for ROUNDS rounds (default 5); then the medians over the
# rounds and their ratios:
#
#   bench: python_step_vs_c: <x> x          Python's step / C's, both on one batch fed again
#                                           and again (target <= 1.1)
#   bench: python_gather_step_vs_c: <x> x   the same with the example's batches gathered from a
#                                           training set each step (C's bench does not gather)
#
# Usage: bench/python_train_bench.sh [BUILD_DIR]   (default: build; configured if missing)
#   BATCH (default 64, the examples'), THREADS (default 1), ROUNDS (default 5)
# Never run by the tests: the machine is shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-${BUILD_DIR:-build}}
rounds=${ROUNDS:-5}
batch=${BATCH:-64}
threads=${THREADS:-1}
python=${PYTHON:-/usr/bin/python3}  # the interpreter the extension was built for

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release
fi
# The bench program, the extension and the CPU driver (the extension's name depends on the Python).
meson compile -C "$build" >/dev/null
bench_bin=$(cd "$build" && pwd)/bench/session-train-bench
step_script=$PWD/bench/python_train_step.py

log=$(mktemp)
trap 'rm -f "$log"' EXIT

for round in $(seq "$rounds"); do
  echo "=== round $round of $rounds ==="
  meson devenv -C "$build" env SESSION_DRIVER_CPU_THREADS="$threads" \
    OPENBLAS_NUM_THREADS="$threads" "$bench_bin" --batch "$batch" | grep _us: | tee -a "$log"
  meson devenv -C "$build" env SESSION_DRIVER_CPU_THREADS="$threads" \
    OPENBLAS_NUM_THREADS="$threads" "$python" "$step_script" --batch "$batch" | tee -a "$log"
done

echo "=== medians over $rounds rounds (batch $batch, $threads thread(s)) ==="
c_name="train_step_b${batch}_t${threads}_us"
py_name="python_train_step_b${batch}_t${threads}_us"
pg_name="python_train_step_gather_b${batch}_t${threads}_us"
grep '^bench: ' "$log" | awk -v c="$c_name" -v p="$py_name" -v pg="$pg_name" '
  {
    name = $2; sub(/:$/, "", name)
    n[name]++; v[name, n[name]] = $3
  }
  function median(name,    i, j, t, a, k) {
    k = n[name]
    for (i = 1; i <= k; i++) a[i] = v[name, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    if (!(c in n) || !(p in n)) { print "python_train_bench: a program printed no step time" > "/dev/stderr"; exit 1 }
    printf "bench: c_step: %.1f us\n", median(c)
    printf "bench: python_step: %.1f us\n", median(p)
    printf "bench: python_step_vs_c: %.3f x\n", median(p) / median(c)
    if (pg in n) {
      printf "bench: python_gather_step: %.1f us\n", median(pg)
      printf "bench: python_gather_step_vs_c: %.3f x\n", median(pg) / median(c)
    }
  }'
