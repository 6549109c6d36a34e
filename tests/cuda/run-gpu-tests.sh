#!/usr/bin/env bash
# The CUDA driver's GPU tests in one command, for a machine with an NVIDIA GPU:
#
#   tests/cuda/run-gpu-tests.sh [BUILD_DIR]          (default: build-gpu, in the repository)
#
# 1. builds BUILD_DIR with meson when it is missing (needs the project's dependencies:
#    cjson, ltdl, openblas, cmocka); otherwise uses it as it is, e.g. a folder built on another
#    machine and carried here (see --collect);
# 2. session-info with the CUDA driver: it must be "ready" with a cuda:N device;
# 3. session-driver-test cuda: the ABI checks and every kernel compared with the CPU driver;
# 4. session-train-example --device gpu:0 --epochs 5 (Fashion-MNIST): its final accuracy,
#    next to the CPU's figure (≈0.83 with SGD after 5 epochs);
# and prints one PASS/FAIL line per step and a summary. Exit status 0 when all passed.
#
#   tests/cuda/run-gpu-tests.sh --collect [BUILD_DIR]
# run on the machine that built BUILD_DIR: copies into BUILD_DIR/carried/ the shared libraries
# the build outputs need that a bare GPU machine lacks (cjson, ltdl, openblas and its
# gfortran/quadmath, oneDNN and libOpenCL, zlib; never the CUDA ones) and the Fashion-MNIST idx
# files, so that the folder alone can be carried to a GPU machine with only the CUDA toolkit.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

collect=0
if [ "${1:-}" = "--collect" ]; then collect=1; shift; fi
build=${1:-${BUILD_DIR:-build-gpu}}
case "$build" in /*) ;; *) build=$root/$build ;; esac
data_src=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

if [ "$collect" = 1 ]; then
  [ -f "$build/build.ninja" ] || { echo "no build in $build"; exit 2; }
  mkdir -p "$build/carried/lib" "$build/carried/fashion-mnist"
  # Every library the build's programs and modules resolve outside the system's core set and
  # outside the CUDA toolkit.
  find "$build" -path "$build/carried" -prune -o -type f \( -name '*.so*' -o -perm -u+x \) -print |
    while read -r f; do ldd "$f" 2>/dev/null; done |
    awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/usr/local/cuda|/tmp/|'"$build" |
    while read -r lib; do cp -L "$lib" "$build/carried/lib/"; done
  # The CPU driver loads OpenBLAS and oneDNN itself (dlopen, after choosing kernels): no ldd of
  # the build shows them, so they are copied by name with what they need (libOpenCL for oneDNN).
  for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libdnnl.so.2 libOpenCL.so.1; do
    path=$(/sbin/ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
    [ -n "$path" ] && cp -L "$path" "$build/carried/lib/"
  done
  cp "$data_src"/*.gz "$build/carried/fashion-mnist/" 2>/dev/null || echo "note: no Fashion-MNIST in $data_src"
  du -sh "$build/carried"
  ls "$build/carried/lib"
  exit 0
fi

if [ ! -f "$build/build.ninja" ] && [ ! -x "$build/tools/session-info" ]; then
  echo "=== building $build"
  meson setup "$build" "$root" -Dcuda=enabled --buildtype=release || exit 2
fi
if [ -f "$build/build.ninja" ] && command -v ninja >/dev/null; then
  ninja -C "$build" || echo "note: ninja failed; running what is built"
fi
if [ -d "$build/carried/lib" ]; then
  export LD_LIBRARY_PATH="$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
data=$data_src
[ -d "$data" ] || data=$build/carried/fashion-mnist

export SESSION_DRIVER_FILES="$build/plugins/cpu/cpu.json"
export SESSION_ADD_DRIVER_FILES="$build/plugins/cuda/cuda.json"
unset SESSION_LOADER_DEBUG
# cuDNN where PyTorch's packages put it (or the toolkit's), unless the caller chose.
if [ -z "${SESSION_DRIVER_CUDA_CUDNN:-}" ]; then
  SESSION_DRIVER_CUDA_CUDNN=$("$root/tests/cuda/find-cudnn.sh") || SESSION_DRIVER_CUDA_CUDNN=
fi
export SESSION_DRIVER_CUDA_CUDNN
# cuDNN loads its sub-libraries (libcudnn_ops.so.9, ...) by name from the loader's path.
case "$SESSION_DRIVER_CUDA_CUDNN" in
  /*) export LD_LIBRARY_PATH="$SESSION_DRIVER_CUDA_CUDNN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
esac
echo "cudnn: ${SESSION_DRIVER_CUDA_CUDNN:-not found (Conv by im2col + cuBLAS)}"
pass=0; fail=0
result() { if [ "$1" = 0 ]; then echo "PASS  $2"; pass=$((pass + 1)); else echo "FAIL  $2"; fail=$((fail + 1)); fi; }

nvidia-smi -L 2>/dev/null || echo "note: nvidia-smi not found"

echo "=== session-info"
info=$("$build/tools/session-info" 2>&1); echo "$info"
echo "$info" | grep -Eq '^  cuda +ready' && echo "$info" | grep -q 'cuda:0'
result $? "session-info: the cuda driver is ready with cuda:0"

echo "=== session-driver-test cuda"
"$build/tools/session-driver-test" cuda 2>&1 | tee "$build/gpu-driver-test.log"
st=${PIPESTATUS[0]}
grep -q 'SKIP  device  open' "$build/gpu-driver-test.log" && st=1  # a GPU machine must open it
result "$st" "session-driver-test cuda (every kernel against the CPU driver)"

echo "=== session-train-example --device gpu:0 --epochs 5"
start=$(date +%s)
"$build/examples/session-train-example" --device gpu:0 --epochs 5 --data "$data" 2>&1 |
  tee "$build/gpu-train.log"
st=${PIPESTATUS[0]}
echo "train: $(( $(date +%s) - start )) s wall"
result "$st" "session-train-example --device gpu:0 --epochs 5 (CPU reaches ≈0.83 with SGD)"

echo "=== graphs: the training plan is captured once and replayed (session counters)"
grep -E 'graph' "$build/gpu-train.log" | tail -2
grep -Eq 'graphs: [1-9][0-9]* captured, [1-9][0-9]* launches' "$build/gpu-train.log"
result $? "session-train-example on gpu:0 captured its plans as CUDA Graphs"

if [ -x "$build/tools/session-onnx-test" ] && [ -d /usr/include/onnx/backend/test/data/node ]; then
  echo "=== ONNX node tests on gpu:0 (fallback denied)"
  "$build/tools/session-onnx-test" --device gpu:0 2>&1 | tail -3
  result "${PIPESTATUS[0]}" "session-onnx-test --device gpu:0 ran (its failures are listed above)"
fi

echo "=== summary: $pass passed, $fail failed"
[ "$fail" = 0 ]
