#!/usr/bin/env bash
# libsession-mpi's benchmark with 1, 2 and 4 ranks on this machine (oversubscribed when it has
# fewer cores): the AllReduce op vs a raw MPI_Allreduce of the same bytes, and the step time of
# data-parallel training of the 784-256-10 network at a global batch of 64.
#
#   bench/mpi_bench.sh [BUILD_DIR]      (default: build)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
case "$build" in /*) ;; *) build=$PWD/$build ;; esac
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null || exit 2
ninja -C "$build" bench/mpi-bench plugins/cpu/ses_cpu.so >/dev/null || exit 2
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
export SESSION_DRIVER_CPU_THREADS=1 OPENBLAS_NUM_THREADS=1
for n in 1 2 4; do
  mpirun --allow-run-as-root --oversubscribe -np "$n" "$build/bench/mpi-bench" || exit 1
done | tee /dev/stderr | grep '^bench: ' >/tmp/mpi-bench.$$
awk '$1 == "bench:" { v[$2] = $3 }
  END {
    if (v["train_step_1r:"] != "" && v["train_step_2r:"] != "")
      printf "bench: train_step_2r_vs_1r: %.3f x (time)\n", v["train_step_2r:"] / v["train_step_1r:"]
    if (v["train_step_1r:"] != "" && v["train_step_4r:"] != "")
      printf "bench: train_step_4r_vs_1r: %.3f x (time)\n", v["train_step_4r:"] / v["train_step_1r:"]
  }' /tmp/mpi-bench.$$
rm -f /tmp/mpi-bench.$$
