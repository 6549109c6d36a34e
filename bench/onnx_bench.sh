#!/usr/bin/env bash
# ONNX inference on the CPU driver side by side with ONNX Runtime, in one run (issue #20):
#
#   bench/onnx_bench.sh [BUILD_DIR]      (default: build; configured and built if missing)
#
# Models (bench/onnx_models.py, torch.onnx.export at opset 13, written at bench time into
# BUILD_DIR/onnx-bench/models with their inputs), with the runs per process N:
#   mlp_b1 (784-256-10 sigmoid, batch 1, N 1000), mlp_b64 (same, batch 64, N 300),
#   bigmlp_b128 (1024-4096-4096-1024 relu, batch 128, N 30), cnn_b64 (2x conv 3x3 + relu +
#   maxpool 2, 32 and 64 channels, fc; 1x28x28, batch 64, N 60), squeezenet_b1 (torchvision
#   squeezenet1_0, N 40), resnet50_b1 (torchvision resnet50, weights=None, N 15).
# libsession: `session-run MODEL --device cpu --repeat N` with SESSION_DRIVER_CPU_THREADS=T (and
# OPENBLAS_NUM_THREADS=T). ONNX Runtime: bench/ort_run.js on the npm package onnxruntime-node
# (installed into BUILD_DIR/onnx-bench/ort with --ignore-scripts when missing; the package
# carries libonnxruntime.so), intraOpNumThreads T, interOpNumThreads 1, the same input.
# Each side's figure for a round is the median of its runs 2..N; ROUNDS rounds (default 3)
# interleave the two (ours first in odd rounds, ONNX Runtime first in even ones); the figure
# printed is the median over the rounds, for each T in THREADS (default "1 2"; "1 16" on a
# 16-core host):
#   bench: NAME tT: libsession X ms, onnxruntime Y ms, ratio R     (R = ORT's time / ours:
#                                                                   above 1, we are faster)
# then a Markdown table, and a check that the outputs agree: max |ours - ORT| / max |ORT|
# <= 1e-4 (`check:` lines; /usr/bin/python3 with numpy). Without Node or onnxruntime-node it
# says why and prints our figures alone. Environment: THREADS, ROUNDS, MODELS (a comma-separated
# subset), REPEAT (one N for every model), PYTHON, BENCH_DEADLINE_S (default 540: no step starts
# later). About 70 s on a 2-core VM, plus the export the first time. Never run by the tests: the
# machine is shared and noisy.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

build=${1:-${BUILD_DIR:-build}}
case "$build" in /*) ;; *) build=$root/$build ;; esac
rounds=${ROUNDS:-3}
threads_list=${THREADS:-1 2}
python=${PYTHON:-/usr/bin/python3} # Debian's python3-torch is only visible to this one
deadline=$((SECONDS + ${BENCH_DEADLINE_S:-540}))
all_models="mlp_b1 mlp_b64 bigmlp_b128 cnn_b64 squeezenet_b1 resnet50_b1"
models=${MODELS:-$all_models}
models=${models//,/ }
declare -A runs=([mlp_b1]=1000 [mlp_b64]=300 [bigmlp_b128]=30 [cnn_b64]=60 [squeezenet_b1]=40
  [resnet50_b1]=15)

if [ -f "$build/build.ninja" ]; then
  meson compile -C "$build" session-run ses_cpu >/dev/null || exit 2
elif [ ! -x "$build/tools/session-run" ]; then
  meson setup "$build" --buildtype=release || exit 2
  meson compile -C "$build" session-run ses_cpu >/dev/null || exit 2
fi
# A build folder carried to another machine (tests/cuda/run-gpu-tests.sh --collect) brings the
# libraries it needs.
if [ -d "$build/carried/lib" ]; then
  export LD_LIBRARY_PATH="$build/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
run_bin=$build/tools/session-run
export SESSION_DRIVER_FILES=$build/plugins/cpu/cpu.json
unset SESSION_LOADER_DEBUG

work=$build/onnx-bench
mkdir -p "$work/models" "$work/out"
log=$(mktemp)
steplog=$(mktemp)
trap 'rm -f "$log" "$steplog"' EXIT

echo "=== bench/onnx_bench.sh: $build; threads: $threads_list; rounds: $rounds"
"$build/tools/session-info" 2>/dev/null | grep -E '^ +cpu:0 ' | sed 's/^ */device: /'
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
  "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')" \
  "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ');" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the models ------------------------------------------------------------------------------
missing=()
for m in $models; do
  [ -f "$work/models/$m.onnx" ] && [ -f "$work/models/${m}_input.npy" ] || missing+=("$m")
done
if [ "${#missing[@]}" != 0 ]; then
  models_csv=$(IFS=,; echo "${missing[*]}")
  timeout 300 "$python" "$root/bench/onnx_models.py" "$work/models" --models "$models_csv" 2>&1 |
    grep -v -i 'warn' || true
fi
present=""
for m in $models; do
  if [ -f "$work/models/$m.onnx" ]; then present+="$m "; else echo "note: no $m.onnx: skipped"; fi
done
models=$present
[ -n "$models" ] || { echo "no models: is torch installed for $python?"; exit 1; }

# ---- ONNX Runtime ----------------------------------------------------------------------------
have_ort=0
ort_py=0
ort_dir=$work/ort
export ORT_NODE_MODULES=$ort_dir/node_modules
# Without Node.js, ONNX Runtime's Python package (a GPU machine has it) runs bench/ort_run.py.
if ! command -v node >/dev/null && why=$("$python" -c 'import onnxruntime; print(onnxruntime.__version__)' 2>&1); then
  have_ort=1
  ort_py=1
  echo "onnxruntime: $why (Python package, bench/ort_run.py)"
elif ! command -v node >/dev/null; then
  echo "note: node is not installed, so only libsession's figures follow."
else
  if [ ! -d "$ORT_NODE_MODULES/onnxruntime-node" ] && command -v npm >/dev/null; then
    mkdir -p "$ort_dir"
    echo "installing onnxruntime-node into $ort_dir (npm install --ignore-scripts)"
    (cd "$ort_dir" && timeout 300 npm install --ignore-scripts --no-audit --no-fund \
      onnxruntime-node >"$ort_dir/npm.log" 2>&1) || tail -n 5 "$ort_dir/npm.log"
  fi
  if why=$(node -e 'const o = require(process.env.ORT_NODE_MODULES + "/onnxruntime-node");
                    console.log(o.env.versions.common)' 2>&1); then
    have_ort=1
    echo "onnxruntime: $why (onnxruntime-node, $ORT_NODE_MODULES)"
  else
    echo "note: onnxruntime-node cannot be loaded, so only libsession's figures follow:"
    echo "$why" | grep -m3 -i 'error' | sed 's/^/      /'
  fi
fi

# median_of_runs FILE: the median of runs 2..N that session-run and ort_run.js print.
median_of_runs() {
  awk '/^runs 2 to / { for (i = 1; i < NF; i++) if ($i == "median") v = $(i + 1) }
       END { if (v == "") exit 1; print v }' "$1"
}

# side ours|ort MODEL THREADS ROUND: one process, its median logged as "raw: side m t round ms".
side() {
  local who=$1 m=$2 t=$3 r=$4 n limit=180 st ms
  n=${REPEAT:-${runs[$m]:-20}}
  if [ $((deadline - SECONDS)) -lt 5 ]; then
    echo "FAIL  $who $m t$t round $r (not started: BENCH_DEADLINE_S reached)"
    return 1
  fi
  [ "$limit" -le $((deadline - SECONDS)) ] || limit=$((deadline - SECONDS))
  if [ "$who" = ours ]; then
    SESSION_DRIVER_CPU_THREADS=$t OPENBLAS_NUM_THREADS=$t timeout -k 5 "$limit" "$run_bin" \
      "$work/models/$m.onnx" --device cpu --input "x=$work/models/${m}_input.npy" \
      --output "y=$work/out/$m.t$t.ours.npy" --repeat "$n" >"$steplog" 2>&1
  else
    local -a ort_cmd=(node "$root/bench/ort_run.js")
    [ "$ort_py" = 1 ] && ort_cmd=("$python" "$root/bench/ort_run.py")
    timeout -k 5 "$limit" "${ort_cmd[@]}" "$work/models/$m.onnx" \
      "$work/models/${m}_input.npy" --output "$work/out/$m.t$t.ort.npy" --threads "$t" \
      --repeat "$n" >"$steplog" 2>&1
  fi
  st=$?
  if [ "$st" = 0 ] && ms=$(median_of_runs "$steplog"); then
    echo "raw: $who $m $t $r $ms" | tee -a "$log"
  else
    echo "FAIL  $who $m t$t round $r (exit $st):"
    tail -n 5 "$steplog" | sed 's/^/      /'
  fi
}

rm -f "$work"/out/*.npy
for r in $(seq "$rounds"); do
  echo "=== round $r of $rounds ($SECONDS s)"
  for t in $threads_list; do
    for m in $models; do
      if [ "$have_ort" = 1 ] && [ $((r % 2)) = 0 ]; then side ort "$m" "$t" "$r"; fi
      side ours "$m" "$t" "$r"
      if [ "$have_ort" = 1 ] && [ $((r % 2)) = 1 ]; then side ort "$m" "$t" "$r"; fi
    done
  done
done

# ---- medians over the rounds, the ratios, the table -------------------------------------------
echo "=== medians over $rounds rounds of the median of runs 2..N ($SECONDS s)"
awk -v models="$models" -v threads="$threads_list" -v have_ort="$have_ort" '
  $1 == "raw:" { k = $2 SUBSEP $3 SUBSEP $4; n[k]++; v[k, n[k]] = $6 }
  function median(k,    i, j, t, a, c) {
    c = n[k]
    if (!c) return ""
    for (i = 1; i <= c; i++) a[i] = v[k, i]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
  }
  END {
    nm = split(models, ms, " "); nt = split(threads, ts, " ")
    for (j = 1; j <= nt; j++) for (i = 1; i <= nm; i++) {
      m = ms[i]; t = ts[j]
      o = median("ours" SUBSEP m SUBSEP t); r = median("ort" SUBSEP m SUBSEP t)
      O[m, t] = o; R[m, t] = r
      if (o != "" && r != "")
        printf "bench: %s t%s: libsession %.3f ms, onnxruntime %.3f ms, ratio %.3f\n", m, t, o, r, r / o
      else if (have_ort)
        printf "bench: %s t%s: libsession %s ms, onnxruntime %s ms: no ratio (a side failed)\n",
          m, t, o == "" ? "-" : o, r == "" ? "-" : r
      else
        printf "bench: %s t%s: libsession %s ms\n", m, t, o == "" ? "-" : o
    }
    print ""
    print "| model | threads | libsession ms | onnxruntime ms | ratio (ORT / ours) |"
    print "| --- | --- | --- | --- | --- |"
    for (i = 1; i <= nm; i++) for (j = 1; j <= nt; j++) {
      m = ms[i]; t = ts[j]; o = O[m, t]; r = R[m, t]
      printf "| %s | %s | %s | %s | %s |\n", m, t, o == "" ? "-" : sprintf("%.3f", o),
        r == "" ? "-" : sprintf("%.3f", r), (o != "" && r != "") ? sprintf("%.2f", r / o) : "-"
    }
  }' "$log"

# ---- do the outputs agree? (the last round's files) ------------------------------------------
if [ "$have_ort" = 1 ]; then
  echo "=== outputs: max |libsession - onnxruntime| / max |onnxruntime| (goal <= 1e-4)"
  "$python" - "$work/out" "$models" "$threads_list" <<'EOF' || echo "check: FAIL (numpy)"
import os, sys
import numpy as np
out, models, threads = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
bad = 0
for m in models:
    for t in threads:
        a, b = ("%s/%s.t%s.%s.npy" % (out, m, t, s) for s in ("ours", "ort"))
        if not (os.path.exists(a) and os.path.exists(b)):
            print("check: %s t%s: FAIL (an output is missing)" % (m, t)); bad += 1; continue
        x, y = np.load(a), np.load(b)
        if x.shape != y.shape:
            print("check: %s t%s: FAIL (shapes %s vs %s)" % (m, t, x.shape, y.shape)); bad += 1
            continue
        rel = float(np.abs(x.astype(np.float64) - y).max() / max(np.abs(y).max(), 1e-30))
        ok = rel <= 1e-4
        bad += not ok
        print("check: %s t%s: %.2e %s" % (m, t, rel, "ok" if ok else "FAIL"))
sys.exit(1 if bad else 0)
EOF
fi
echo "=== done ($SECONDS s)"
