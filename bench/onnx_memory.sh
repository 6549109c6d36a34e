#!/usr/bin/env bash
# Peak memory of running a large ONNX model once, libsession beside ONNX Runtime (issue #22):
#
#   bench/onnx_memory.sh [BUILD_DIR]      (default: build; configured and built if missing)
#
# Exports torchvision's vgg19 (548 MB of weights) and convnext_tiny (109 MB) with random weights
# (weights=None, torch.manual_seed(0)) at opset 13 into BUILD_DIR/onnx-memory with Debian's
# PyTorch (/usr/bin/python3), then runs each once with `/usr/bin/time -v`:
#   libsession: session-run MODEL --device cpu --input x=INPUT
#   ONNX Runtime: bench/ort_run.js MODEL INPUT --threads 1 (onnxruntime-node, as
#                 bench/onnx_bench.sh installs it into BUILD_DIR/onnx-bench/ort)
# and prints, per model:
#   bench: NAME peak RSS: libsession X MB, onnxruntime Y MB, ratio R   (R = ours / ORT's;
#                                                                      at most 1 is the goal)
# Environment: MODELS (default "vgg19 convnext_tiny"), PYTHON. Not run by the tests.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
build=${1:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
python=${PYTHON:-/usr/bin/python3}
models=${MODELS:-vgg19 convnext_tiny}

if [ ! -x "$build/tools/session-run" ]; then
  { [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release; } || exit 2
fi
meson compile -C "$build" session-run ses_cpu >/dev/null || exit 2
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
work=$build/onnx-memory
mkdir -p "$work"
ort_modules=$build/onnx-bench/ort/node_modules

peak_mb() { # the "Maximum resident set size" of /usr/bin/time -v's report in file $1, in MB
  awk -F: '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"
}

for name in $models; do
  model=$work/$name.onnx input=$work/${name}_x.npy
  if [ ! -f "$model" ]; then
    "$python" - "$name" "$model" "$input" <<'EOF' || { echo "bench: $name: export failed"; continue; }
import sys
import numpy as np
import torch
import torchvision
name, path, xpath = sys.argv[1:4]
torch.manual_seed(0)
m = getattr(torchvision.models, name)(weights=None).eval()
torch.manual_seed(1)
x = torch.rand(1, 3, 224, 224)
kwargs = dict(opset_version=13, input_names=["x"], output_names=["y"])
try:
    torch.onnx.export(m, (x,), path, dynamo=False, **kwargs)
except TypeError:  # torch 1.x has no dynamo argument
    torch.onnx.export(m, (x,), path, **kwargs)
np.save(xpath, x.numpy())
EOF
  fi
  ours=$(mktemp) theirs=$(mktemp)
  /usr/bin/time -v "$build/tools/session-run" "$model" --device cpu --input "x=$input" --quiet \
    >/dev/null 2>"$ours" || { echo "bench: $name: session-run failed: $(tail -1 "$ours")"; continue; }
  if [ -d "$ort_modules/onnxruntime-node" ] && command -v node >/dev/null; then
    ORT_NODE_MODULES=$ort_modules /usr/bin/time -v node bench/ort_run.js "$model" "$input" \
      --threads 1 >/dev/null 2>"$theirs"
    a=$(peak_mb "$ours") b=$(peak_mb "$theirs")
    echo "bench: $name peak RSS: libsession $a MB, onnxruntime $b MB, ratio $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}')"
  else
    echo "bench: $name peak RSS: libsession $(peak_mb "$ours") MB (no onnxruntime-node: run bench/onnx_bench.sh once)"
  fi
  rm -f "$ours" "$theirs"
done
