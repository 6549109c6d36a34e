#!/bin/bash
# On a GPU machine: the CUDA driver's cuDNN path and its im2col + cuBLAS fallback, each compared
# with the CPU driver by `session-driver-test cuda`, plus the debug lines saying which path each
# Conv/ConvGrad/pool node took.
#   tests/cuda/run-cudnn-check.sh [BUILD_DIR] [CUDNN]
# BUILD_DIR defaults to build-gpu (built as tests/cuda/run-gpu-tests.sh says; its carried/lib is
# put on LD_LIBRARY_PATH). CUDNN is libcudnn.so.9 or its folder; by default PyTorch's
# (tests/cuda/find-cudnn.sh), else the loader's search. Exit 1 if a run fails.
set -u
build=$(cd "${1:-build-gpu}" && pwd) || exit 1
cudnn=${2:-}
if [ -z "$cudnn" ]; then
  cudnn=$("$(dirname "$0")/find-cudnn.sh")
fi
export LD_LIBRARY_PATH=$build/carried/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
export SESSION_ADD_DRIVER_FILES=$build/plugins/cuda/cuda.json
status=0
echo "== session-info, driver.cuda.cudnn=${cudnn:-<search>}"
SESSION_DRIVER_CUDA_CUDNN=$cudnn "$build/tools/session-info" | grep -E '^  cuda|cuda:0'
for mode in cudnn off; do
  value=$cudnn
  [ "$mode" = off ] && value=off
  log=$(mktemp)
  echo "== session-driver-test cuda, driver.cuda.cudnn=${value:-<search>}"
  SESSION_DRIVER_CUDA_CUDNN=$value SESSION_LOADER_DEBUG=debug \
    "$build/tools/session-driver-test" cuda >"$log" 2>&1 || status=1
  grep -E 'descriptor|kernel  (Conv|MaxPool|AveragePool)|kernels:|^FAIL' "$log"
  echo "-- paths taken (node count, path):"
  grep -oE 'cuda:0: (Conv|ConvGrad|MaxPool|AveragePool) "[^"]*": [^(]*' "$log" |
    sed 's/"[^"]*"//' | sort | uniq -c
  grep -E 'warn:' "$log" | sort | uniq -c | head -5
  rm -f "$log"
done
exit $status
