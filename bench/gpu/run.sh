#!/usr/bin/env bash
# The GPU benchmarks in one command, on a machine with an NVIDIA GPU: libsession on gpu:0 side by
# side with PyTorch on cuda:0 in one run, then the CUDA driver against raw CUDA.
#
#   bench/gpu/run.sh [BUILD_DIR]              (default: build-gpu, in the repository)
#   bench/gpu/run.sh --cpu-smoke [BUILD_DIR]  the same steps on cpu:0 and PyTorch's CPU, small
#                                             models, few runs, no nvcc: checks the script here
#
# Uses BUILD_DIR as it is when it holds a build (a folder carried from another machine, see
# tests/cuda/run-gpu-tests.sh --collect: its carried/lib goes on LD_LIBRARY_PATH for libsession's
# programs only, and ninja is not run in it); builds it with meson when missing. Python: $PYTHON
# (default python3) with torch and onnx. Every step runs under `timeout`; a step that fails or
# times out prints "FAIL <step>" and the others still run; the whole script stops starting steps
# after BENCH_DEADLINE_S seconds (default 420). About 2 minutes on an H100.
#
# Prints `bench: <name>: <value> <unit>` lines as each program writes them, and at the end a
# summary, one line per side-by-side figure:
#   bench: <figure>: libsession <x> <unit>, pytorch <y> <unit>, ratio <r> (goal <g>)
# where the ratio is PyTorch's time / ours (above 1: we are faster), for
#   onnx_mlp_b512_gpu       ONNX MLP 1024-4096-4096-1024 (Relu), batch 512: `session-run
#                           --device gpu:0 --repeat N` on the file vs the same nn.Module (weights
#                           from the file's initializers); median of runs 2..N, each run copying
#                           the input in and the output out (bench/gpu/make_models.py,
#                           bench/gpu/torch_onnx_bench.py)
#   onnx_cnn_b256_gpu       ONNX CNN on 1x28x28: 2x (Conv 3x3 pads 1 + Relu + MaxPool 2), 32 then
#                           64 channels, then Gemm to 10; batch 256; the same way
#   train_step_gpu_b<B>     one training step of the seeds' network (784-256-10, sigmoid, softmax
#                           cross-entropy, SGD), B = 64, 512, 4096: session-train-bench --device
#                           gpu:0 vs bench/gpu/torch_train_step_gpu.py, both feeding the batch
#                           from host memory each step and reading the loss back (steps/s)
# and, against the step's own floor (the batch copied in, its 5 GEMMs as raw cuBLAS calls on a
# stream of the CUDA driver, the loss copied out, one wait: cuda-bench --train-gemms):
#   train_step_gpu_b<B>_vs_floor  our step time / that floor (1 = no overhead)
# then the libsession output of each ONNX model checked against PyTorch's (1e-4 of the largest
# value), the transfers per run when session-run has --stats, and the CUDA driver's figures:
#   gemm4096_{f32,bf16}_driver_vs_cublas      MatMul 4096^3 through the driver ABI / raw
#                                              cublasGemmEx (target >= 0.97)
#   add_chain256_{driver,driver_graph,raw_launch}_us_per_node
#                                              256 dependent tiny Adds: one driver compute each,
#                                              the same computes captured once into a CUDA Graph
#                                              and replayed, and raw kernel launches
#   plan_per_node_cost_gpu_0_{graphs,no_graphs}
#                                              the same chain of 256 scalar Adds as a session
#                                              plan on gpu:0 (session-bench --chain-only), graphs
#                                              on and off
# fp32 throughout, TF32 off on both sides unless SESSION_DRIVER_CUDA_ALLOW_TF32=1 (then only
# libsession and cuda-bench use it). REPEAT (default 30) sets N for the ONNX figures.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$PWD

smoke=0
if [ "${1:-}" = "--cpu-smoke" ]; then smoke=1; shift; fi
build=${1:-${BUILD_DIR:-build-gpu}}
case "$build" in /*) ;; *) build=$root/$build ;; esac
python=${PYTHON:-python3}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
deadline=$((SECONDS + ${BENCH_DEADLINE_S:-420}))

# Goals of issue 19, in one place: ratio = PyTorch's time / ours, so ">= 1" is "as fast".
goal_onnx=">= 1"
goal_train_b64=">= 2"
goal_train=">= 1"
goal_floor="<= 1.1"

if [ "$smoke" = 1 ]; then
  dev=cpu:0 kind=cpu torch_dev=cpu repeat=${REPEAT:-3} batches="64 512" onnx_figs="mlp_b8 cnn_b8"
  small=--small train_steps=(--steps 10 --reps 3) torch_smoke=--cpu-smoke
else
  dev=gpu:0 kind=gpu torch_dev=cuda:0 repeat=${REPEAT:-30} batches="64 512 4096"
  onnx_figs="mlp_b512 cnn_b256" # make_models.py's batches
  small="" train_steps=() torch_smoke=""
fi

if [ ! -f "$build/build.ninja" ] && [ ! -x "$build/tools/session-run" ]; then
  meson setup "$build" "$root" -Dcuda=enabled --buildtype=release || exit 2
  meson compile -C "$build" || echo "note: the build failed; running what is built"
elif [ -f "$build/build.ninja" ] && [ ! -d "$build/carried" ] && command -v ninja >/dev/null; then
  timeout 300 ninja -C "$build" >/dev/null || echo "note: ninja failed; running what is built"
fi
export SESSION_DRIVER_FILES="$build/plugins/cpu/cpu.json"
[ "$smoke" = 1 ] || export SESSION_ADD_DRIVER_FILES="$build/plugins/cuda/cuda.json"
# cuDNN for Conv and the pools: PyTorch's copy on a GPU machine (tests/cuda/find-cudnn.sh),
# unless the caller chose one (SESSION_DRIVER_CUDA_CUDNN; "off" for the im2col path).
if [ -z "${SESSION_DRIVER_CUDA_CUDNN:-}" ]; then
  SESSION_DRIVER_CUDA_CUDNN=$("$root/tests/cuda/find-cudnn.sh" "$python") || SESSION_DRIVER_CUDA_CUDNN=
fi
export SESSION_DRIVER_CUDA_CUDNN
# cuDNN loads its sub-libraries (libcudnn_ops.so.9, ...) by name from the loader's path.
case "$SESSION_DRIVER_CUDA_CUDNN" in
  /*) export LD_LIBRARY_PATH="$SESSION_DRIVER_CUDA_CUDNN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
esac
echo "cudnn: ${SESSION_DRIVER_CUDA_CUDNN:-not found (Conv by im2col + cuBLAS)}"
# libsession's programs find the libraries carried with the build; Python keeps its own.
ses_env=(env)
if [ -d "$build/carried/lib" ]; then
  ses_env=(env "LD_LIBRARY_PATH=$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
unset SESSION_LOADER_DEBUG

work=$build/bench-gpu
models=$work/models${small:+-small}
mkdir -p "$work" "$models"
log=$(mktemp)
steplog=$(mktemp)
trap 'rm -f "$log" "$steplog"' EXIT
failed=()

# step NAME SECONDS COMMAND...: runs COMMAND under timeout (never past the deadline), its output
# shown, logged and left in $steplog; prints FAIL with the reason when it fails.
step() {
  local name=$1 limit=$2 left st
  shift 2
  left=$((deadline - SECONDS))
  echo "=== $name"
  if [ "$left" -lt 5 ]; then
    echo "FAIL  $name (not started: BENCH_DEADLINE_S reached)"
    failed+=("$name")
    return 1
  fi
  [ "$limit" -le "$left" ] || limit=$left
  timeout -k 5 "$limit" "$@" 2>&1 | tee "$steplog"
  st=${PIPESTATUS[0]}
  cat "$steplog" >>"$log"
  if [ "$st" != 0 ]; then
    if [ "$st" = 124 ] || [ "$st" = 137 ]; then
      echo "FAIL  $name (timed out after ${limit} s)"
    else
      echo "FAIL  $name (exit $st)"
    fi
    failed+=("$name")
  fi
  return "$st"
}

echo "=== bench/gpu/run.sh: $build, libsession on $dev, PyTorch on $torch_dev ($python)"
[ "$smoke" = 1 ] || nvidia-smi -L 2>/dev/null || echo "note: nvidia-smi not found"

# ---- 1, 2: the ONNX models ------------------------------------------------------------------
step "models: make_models.py" 120 "$python" "$root/bench/gpu/make_models.py" "$models" ${small:+"$small"}

run_bin=$build/tools/session-run
stats=()
if "${ses_env[@]}" "$run_bin" --help 2>&1 | grep -q -- '--stats'; then
  stats=(--stats)
else
  echo "note: session-run has no --stats here: no transfer counts"
fi
checks=()
for fig in $onnx_figs; do
  m=${fig%%_*}
  out=$work/$m.$kind.out.npy
  rm -f "$out"
  run_args=("$models/$m.onnx" --device "$dev" --fallback warn --input "x=$models/${m}_input.npy"
    --output "y=$out" --repeat "$repeat")
  step "session-run $m.onnx --device $dev" 120 "${ses_env[@]}" "$run_bin" "${run_args[@]}" \
    "${stats[@]}"
  st=$?
  if [ "$st" = 2 ] && [ "${#stats[@]}" != 0 ]; then # a usage error: run it without --stats
    unset 'failed[${#failed[@]}-1]'
    stats=()
    step "session-run $m.onnx --device $dev (no --stats)" 120 "${ses_env[@]}" "$run_bin" \
      "${run_args[@]}"
    st=$?
  fi
  if [ "$st" = 0 ]; then
    # "runs 2 to N: min A ms, median B ms, max C ms" -> bench: session_onnx_<m>_b<B>_ms
    awk -v m="$m" -v fig="$fig" '
      /^runs 2 to / { for (i = 1; i < NF; i++) if ($i == "median") v = $(i + 1) }
      /transfers per run/ { t = $0 }
      END {
        if (v != "") printf "bench: session_onnx_%s_ms: %s ms\n", fig, v
        if (t != "") printf "stats: onnx_%s %s\n", m, t
      }' "$steplog" | tee -a "$log"
    checks+=(--check "$m=$out")
  fi
done
step "pytorch: the same models on $torch_dev" 150 "$python" "$root/bench/gpu/torch_onnx_bench.py" \
  "$models" --device "$torch_dev" --repeat "$repeat" "${checks[@]}"

# ---- 3: training steps ---------------------------------------------------------------------
train_bin=$build/bench/session-train-bench
for b in $batches; do
  step "session-train-bench --device $dev --batch $b" 90 "${ses_env[@]}" "$train_bin" \
    --device "$dev" --batch "$b" "${train_steps[@]}"
done
# session-train-bench's tag "b64_tdefault_gpu_0" -> train_step_gpu_b64, as in the summary.
sed -n "s/^bench: train_step_b\([0-9]*\)_t[^_:]*_${dev/:/_}\(_us\)*:/bench: train_step_${kind}_b\1\2:/p" \
  "$log" >"$log.train" && cat "$log.train" >>"$log"
rm -f "$log.train"
step "pytorch: training steps on $torch_dev" 180 "$python" \
  "$root/bench/gpu/torch_train_step_gpu.py" --batch "$(echo "$batches" | tr ' ' ,)" \
  --device "$torch_dev" ${torch_smoke:+"$torch_smoke"}

# ---- 4: the step's floor on the GPU, and the CUDA driver against raw CUDA --------------------
if [ "$smoke" = 1 ]; then
  echo "=== cuda-bench, session-bench on gpu:0: skipped (--cpu-smoke)"
else
  # For this GPU (-arch=native), else for sm_80 and sm_90.
  rm -f "$work/cuda-bench"
  # shellcheck disable=SC2016 # expanded by the inner bash
  if step "nvcc bench/gpu/cuda_bench.cu" 180 bash -c '
    src=(-O2 -std=c++17 -I"$2/sdk/include" "$2/bench/gpu/cuda_bench.cu" -o "$3" -lcublas -ldl)
    "$1" -arch=native "${src[@]}" 2>/dev/null ||
      "$1" -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "${src[@]}"' \
    nvcc "$nvcc" "$root" "$work/cuda-bench"; then
    step "cuda-bench --train-gemms (the step's floor)" 60 "${ses_env[@]}" "$work/cuda-bench" \
      "$build/plugins/cuda/ses_cuda.so" --train-gemms "$(echo "$batches" | tr ' ' ,)"
    step "cuda-bench: GEMM 4096 and the Add chain" 90 "${ses_env[@]}" "$work/cuda-bench" \
      "$build/plugins/cuda/ses_cuda.so"
  fi
  step "session-bench --device gpu:0 --chain-only" 90 "${ses_env[@]}" \
    "$build/bench/session-bench" --device gpu:0 --chain-only
fi

# ---- summary -------------------------------------------------------------------------------
echo "=== summary: every figure ($SECONDS s)"
grep '^bench: ' "$log"
grep '^stats: ' "$log"
grep '^check: ' "$log"
awk -v kind="$kind" -v batches="$batches" -v onnx_figs="$onnx_figs" -v g_onnx="$goal_onnx" -v g_b64="$goal_train_b64" \
  -v g_train="$goal_train" -v g_floor="$goal_floor" '
  $1 == "bench:" {
    name = $2; sub(/:$/, "", name)
    if (!(name in v)) order[++n_order] = name
    v[name] = $3
  }
  function side(fig, ours, theirs, unit, goal, by_rate) {
    if (ours == "" || theirs == "") {
      printf "bench: %s: libsession %s, pytorch %s: no ratio (a side failed)\n", fig,
        ours == "" ? "-" : ours " " unit, theirs == "" ? "-" : theirs " " unit
      return
    }
    printf "bench: %s: libsession %s %s, pytorch %s %s, ratio %.3f (goal %s)\n", fig, ours, unit,
      theirs, unit, by_rate ? ours / theirs : theirs / ours, goal
  }
  END {
    print "=== side by side (ratio: PyTorch time / ours; above 1, libsession is faster)"
    n = split(onnx_figs, fs, " ")
    for (i = 1; i <= n; i++)
      side("onnx_" fs[i] "_" kind, v["session_onnx_" fs[i] "_ms"], v["torch_onnx_" fs[i] "_ms"],
           "ms", g_onnx, 0)
    n = split(batches, bs, " ")
    for (i = 1; i <= n; i++) {
      b = bs[i]
      side("train_step_" kind "_b" b, v["train_step_" kind "_b" b],
           v["torch_" kind "_train_step_b" b], "steps/s", b == 64 ? g_b64 : g_train, 1)
    }
    for (i = 1; i <= n; i++) {
      b = bs[i]; us = v["train_step_" kind "_b" b "_us"]; fl = v["train_floor_b" b "_gpu_0_us"]
      g5 = v["train_gemm5_b" b "_gpu_0_us"]
      if (us != "" && fl != "")
        printf "bench: train_step_%s_b%s_vs_floor: libsession %s us, floor %s us (5 GEMMs %s us), ratio %.3f (goal %s; our time / floor)\n",
          kind, b, us, fl, g5, us / fl, g_floor
    }
    a = v["add_chain256_driver_us_per_node"]; r = v["add_chain256_raw_launch_us_per_node"]
    if (a != "" && r != "") printf "bench: add_chain256_driver_vs_raw: %.3f x (time)\n", a / r
    a = v["add_chain256_driver_graph_us_per_node"]
    if (a != "" && r != "") printf "bench: add_chain256_graph_vs_raw: %.3f x (time)\n", a / r
    a = v["plan_per_node_cost_gpu_0_graphs"]; c = v["plan_per_node_cost_gpu_0_no_graphs"]
    if (a != "" && r != "") printf "bench: session_chain_graphs_vs_raw: %.3f x (time)\n", a / 1000 / r
    if (c != "" && r != "") printf "bench: session_chain_no_graphs_vs_raw: %.3f x (time)\n", c / 1000 / r
    for (j = 1; j <= n_order; j++)
      if (order[j] ~ /^gemm4096_.*_vs_cublas$/)
        printf "bench: %s: %s x (goal >= 0.97)\n", order[j], v[order[j]]
  }' "$log"
if [ "${#failed[@]}" = 0 ]; then
  echo "=== all steps ran ($SECONDS s)"
else
  echo "=== ${#failed[@]} step(s) failed ($SECONDS s):"
  printf 'FAIL  %s\n' "${failed[@]}"
fi
[ "${#failed[@]}" = 0 ]
