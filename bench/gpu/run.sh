#!/usr/bin/env bash
# The CUDA driver's benchmarks in one command, on a machine with an NVIDIA GPU:
#
#   bench/gpu/run.sh [BUILD_DIR]          (default: build-gpu, in the repository)
#
# Builds BUILD_DIR with meson when missing (or uses a folder carried from another machine, see
# tests/cuda/run-gpu-tests.sh --collect), compiles bench/gpu/cuda_bench.cu with nvcc for this GPU,
# and prints `bench:` lines, side by side in one run:
#   gemm4096_{f32,bf16}_driver_vs_cublas      MatMul 4096^3 through the driver ABI / raw
#                                              cublasGemmEx (target >= 0.97)
#   add_chain256_{driver,driver_graph,raw_launch}_us_per_node
#                                              256 dependent tiny Adds: one driver compute each,
#                                              the same computes captured once into a CUDA Graph
#                                              and replayed, and raw kernel launches
#   plan_per_node_cost_gpu_0_{graphs,no_graphs}
#                                              the same chain of 256 scalar Adds as a session
#                                              plan on gpu:0 (session-bench --chain-only), its
#                                              kernels captured once as a CUDA Graph by libsession
#                                              and replayed, or launched one by one
#   train_step_gpu_b64_vs_torch               one step of the 784-256-10 network at batch 64,
#                                              libsession on gpu:0 / PyTorch on cuda:0 (target >= 2)
# TF32 stays off on both sides unless SESSION_DRIVER_CUDA_ALLOW_TF32=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-${BUILD_DIR:-build-gpu}}
case "$build" in /*) ;; *) build=$root/$build ;; esac
python=${PYTHON:-python3}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

if [ ! -f "$build/build.ninja" ] && [ ! -x "$build/tools/session-info" ]; then
  meson setup "$build" "$root" -Dcuda=enabled --buildtype=release || exit 2
fi
if [ -f "$build/build.ninja" ] && command -v ninja >/dev/null; then
  ninja -C "$build" >/dev/null || echo "note: ninja failed; running what is built"
fi
if [ -d "$build/carried/lib" ]; then
  export LD_LIBRARY_PATH="$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export SESSION_DRIVER_FILES="$build/plugins/cpu/cpu.json"
export SESSION_ADD_DRIVER_FILES="$build/plugins/cuda/cuda.json"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "=== GEMM and the Add chain (bench/gpu/cuda_bench.cu)"
mkdir -p "$build/bench-gpu"
arch=-arch=native
"$nvcc" $arch -O2 -std=c++17 -I"$root/sdk/include" "$root/bench/gpu/cuda_bench.cu" \
  -o "$build/bench-gpu/cuda-bench" -lcublas -ldl 2>/dev/null ||
  "$nvcc" -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 -O2 \
    -std=c++17 -I"$root/sdk/include" "$root/bench/gpu/cuda_bench.cu" \
    -o "$build/bench-gpu/cuda-bench" -lcublas -ldl || exit 2
"$build/bench-gpu/cuda-bench" "$build/plugins/cuda/ses_cuda.so" | tee -a "$log"

echo "=== the Add chain as a session plan on gpu:0, graphs on and off"
if [ -x "$build/bench/session-bench" ]; then
  "$build/bench/session-bench" --device gpu:0 --chain-only | tee -a "$log"
else
  echo "note: $build/bench/session-bench is missing: build it first (meson compile -C $build)"
fi

echo "=== one training step, batch 64"
bench_bin=$build/bench/session-train-bench
if [ -x "$bench_bin" ] && "$bench_bin" --help 2>&1 | grep -q -- '--device'; then
  "$bench_bin" --device gpu:0 --batch 64 | sed 's/^bench: train_step_b64_t[^_:]*_gpu_0/bench: train_step_gpu_b64/' |
    tee -a "$log"
else
  echo "note: $bench_bin is missing or lacks --device: build it first (meson compile -C $build)"
fi
"$python" "$root/bench/gpu/torch_train_step_gpu.py" --batch 64 | tee -a "$log" ||
  echo "note: PyTorch with CUDA is not available to $python; set PYTHON=..."

echo "=== summary"
grep '^bench: ' "$log"
awk '$1 == "bench:" { v[$2] = $3 }
  END {
    a = v["train_step_gpu_b64:"]; b = v["torch_gpu_train_step_b64:"]
    if (a != "" && b != "") printf "bench: train_step_gpu_b64_vs_torch: %.3f x\n", a / b
    a = v["add_chain256_driver_us_per_node:"]; b = v["add_chain256_raw_launch_us_per_node:"]
    if (a != "" && b != "") printf "bench: add_chain256_driver_vs_raw: %.3f x (time)\n", a / b
    a = v["add_chain256_driver_graph_us_per_node:"]
    if (a != "" && b != "") printf "bench: add_chain256_graph_vs_raw: %.3f x (time)\n", a / b
    a = v["plan_per_node_cost_gpu_0_graphs:"]; c = v["plan_per_node_cost_gpu_0_no_graphs:"]
    if (a != "" && b != "") printf "bench: session_chain_graphs_vs_raw: %.3f x (time)\n", a / 1000 / b
    if (c != "" && b != "") printf "bench: session_chain_no_graphs_vs_raw: %.3f x (time)\n", c / 1000 / b
  }' "$log"
