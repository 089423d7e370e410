#!/usr/bin/env bash
# zepsim hardware backend: the one prepared check for a machine with a GPU
# (issue 9). Configures and builds, checks every CUDA kernel against the CPU
# reference, runs the GPU tests and a single-GPU schedule of local sequences
# (the "local" planner's plan, dumped by tests/test_gpu_run), then the
# calibration microbenchmarks, a calibration fitted on them, and one plan
# priced with that calibration run on the GPU and in the simulator, compared
# op by op (`zepsim timeline compare`); and a ByteScale plan with activation
# offloading (offload=on: d2h/h2d host copies to pinned memory) run on the
# GPU beside the simulator's prediction (issue 31); all within 9 minutes.
#
#   OUT=/path/to/out hw/scripts/device-check.sh      (default OUT=./out)
#
# Writes to $OUT: summary.txt (the figures for docs/hw-backend results),
# gpu.txt, <step>.log for every step, measurements.json (the calibration
# measurement file, docs/validation.md schema) and timeline-local.json
# (Chrome trace of the single-GPU run), calib.json, plan-calibrated.json,
# timeline-hw.json and timeline-sim.json (the GPU-vs-simulator pair),
# plan-offload.json and timeline-offload.json (the offloading plan and its
# measured timeline). Exit status: 0 when every step
# passed, 1 otherwise (the summary says which step failed).
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-$SRC/build-device}
JOBS=${JOBS:-16}
BUDGET=${BUDGET:-540} # seconds for the whole script (9 minutes)
T0=$(date +%s)
FAILED=""
: >"$OUT/summary.txt"

say() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(($(date +%s) - T0)); }
# step NAME LIMIT_S CMD...: runs CMD with the smaller of LIMIT_S and what is
# left of the budget, output in $OUT/NAME.log.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - $(elapsed)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 5 ]; then
    say "[$(elapsed)s] $name: SKIPPED (time budget of ${BUDGET}s spent)"
    FAILED="$FAILED $name"
    return 1
  fi
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    say "[$(elapsed)s] $name: ok"
  else
    if [ "$rc" -eq 124 ]; then
      say "[$(elapsed)s] $name: TIMED OUT after ${limit}s"
    else
      say "[$(elapsed)s] $name: FAILED (exit $rc), see $OUT/$name.log"
    fi
    tail -n 15 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    FAILED="$FAILED $name"
  fi
  return $rc
}

say "zepsim device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), source $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
  say "GPU (nvidia-smi): $(sed -n 2p "$OUT/gpu.txt")"
  say "GPUs visible: $(($(wc -l <"$OUT/gpu.txt") - 1))"
else
  say "nvidia-smi not found"
fi
say "nvcc: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1)"
missing=""
for p in simgrid gsl jansson sqlite3 cunit; do pkg-config --exists "$p" || missing="$missing $p"; done
[ -n "$missing" ] && say "missing build dependencies (pkg-config):$missing -- the configure step will fail"

step configure 120 cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release || { say "stop: configure failed"; exit 1; }
grep -q "building the CUDA/NCCL backend" "$OUT/configure.log" || say "WARNING: CMake did not find CUDA/NCCL; the backend is not built"
step build 300 cmake --build "$BUILD" -j"$JOBS" || { say "stop: build failed"; exit 1; }
say "compiler warnings in build.log: $(grep -ciE 'warning' "$OUT/build.log")"
step devices 60 "$BUILD/zepsim" hw devices && sed -n '2,$p' "$OUT/devices.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
step check 120 "$BUILD/zepsim" hw check
grep -E "^(ok|FAIL)" "$OUT/check.log" | sed 's/^/  /' >>"$OUT/summary.txt"
step gpu-tests 180 ctest --test-dir "$BUILD" -L gpu --output-on-failure
grep -E "local plan on one GPU" "$OUT/gpu-tests.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
PLAN="$BUILD/tests/tmp/test_gpu_run/local-plan.json"
if [ -f "$PLAN" ]; then
  step run-local 120 "$BUILD/zepsim" hw run "$PLAN" --iters 3 --timeline "$OUT/timeline-local.json" &&
    grep -E "iter_ms|compute_max|idle_max|notes" "$OUT/run-local.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
else
  say "run-local: SKIPPED (no plan dumped by test_gpu_run)"
  FAILED="$FAILED run-local"
fi

# One GPU of the h200 preset (GPU_PRESET overrides), for the plans below.
ONE="$OUT/one-gpu-cluster.json"
cat >"$ONE" <<JSON
{"name": "device-one-gpu", "gpu": "${GPU_PRESET:-h200}", "nodes": 1, "gpus_per_node": 1,
 "nics_per_node": 1, "nic_gbps": 400, "pcie_gbs": 52, "nvlink_latency_us": 2.0,
 "pcie_latency_us": 0.5, "nic_latency_us": 2.0, "fabric_latency_us": 1.0,
 "nodes_per_leaf": 32, "oversubscription": 1.0}
JSON

# Issue 31: ByteScale with offload=on. A 12,288-token document where
# max_seqlen=8192 leaves room for 8192 offloads part of every layer's
# activations (about 9 MiB each way per layer); the GPU runs those copies as
# cudaMemcpyAsync to pinned host memory on the plan's "offload" stream. The
# simulator's prediction of the same plan is printed beside it.
printf '12288\n' >"$OUT/lengths-offload.txt"
if step plan-offload 60 "$BUILD/zepsim" plan --method bytescale --model llama-550m --cluster "$ONE" \
  --nodes 1 --group 1 --context 12288 --trace "$OUT/lengths-offload.txt" --iterations 1 \
  --opt max_seqlen=8192,offload=on --dump "$OUT/plan-offload.json" &&
  step check-offload 30 "$BUILD/zepsim" hw run "$OUT/plan-offload.json" --check-only &&
  step hw-offload 120 "$BUILD/zepsim" hw run "$OUT/plan-offload.json" --iters 3 \
    --timeline "$OUT/timeline-offload.json" &&
  step sim-offload 60 "$BUILD/zepsim" run --backend sim --cluster "$ONE" "$OUT/plan-offload.json"; then
  say "bytescale offload=on on one GPU (host copies to pinned memory):"
  grep -oE "selective offloading on[^;]*" "$OUT/plan-offload.log" | sed 's/^/  plan: /' | tee -a "$OUT/summary.txt"
  grep -E "host_copy_max" "$OUT/check-offload.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
  grep -E "iter_ms|compute_max|exposed_max|idle_max|notes" "$OUT/hw-offload.log" | sed 's/^/  hw:  /' | tee -a "$OUT/summary.txt"
  grep -E "iter_ms|exposed_max" "$OUT/sim-offload.log" | sed 's/^/  sim: /' | tee -a "$OUT/summary.txt"
fi
step bench 240 "$BUILD/zepsim" hw bench --model llama-7b --model llama3-8b --max-tokens 16384 --reps 5 \
  --out "$OUT/measurements.json"
grep -E "attn causal|TFLOP/s; cuBLASLt" "$OUT/bench.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
say "cuDNN fused attention: not timed by this build (follow-up, docs/hw-backend.md); ratio to cuDNN: n/a"

# Issue 10: calibrate on this GPU's own measurements, then run one plan
# priced with that calibration on the GPU and in the simulator, and compare
# the two timelines op by op.
if [ -s "$OUT/measurements.json" ]; then
  step calib-fit 60 "$BUILD/zepsim" calib fit "$OUT/measurements.json" -o "$OUT/calib.json" &&
    grep -E "^  (attn|gemm|elementwise)" "$OUT/calib-fit.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
  step validate-holdout 60 "$BUILD/zepsim" validate --plot none --against "$OUT/measurements.json" \
    --holdout 'seq<=4096' && sed -n '/^summary/,$p' "$OUT/validate-holdout.log" | sed 's/^/  /' | tee -a "$OUT/summary.txt"
  printf '8192\n4096\n2048\n1024\n512\n300\n' >"$OUT/lengths.txt"
  if [ -s "$OUT/calib.json" ] &&
    step plan-calibrated 60 "$BUILD/zepsim" plan --method local --model llama-550m --cluster "$ONE" \
      --nodes 1 --group 1 --context 16172 --trace "$OUT/lengths.txt" --iterations 1 \
      --calib "$OUT/calib.json" --dump "$OUT/plan-calibrated.json" &&
    step hw-calibrated 120 "$BUILD/zepsim" hw run "$OUT/plan-calibrated.json" --iters 3 \
      --timeline "$OUT/timeline-hw.json" &&
    step sim-calibrated 60 "$BUILD/zepsim" run --backend sim --cluster "$ONE" \
      "$OUT/plan-calibrated.json" --timeline "$OUT/timeline-sim.json" &&
    step hw-vs-sim 30 "$BUILD/zepsim" timeline compare --top 12 "$OUT/timeline-hw.json" \
      "$OUT/timeline-sim.json"; then
    say "GPU vs simulator, one plan priced with this GPU's calibration (measured = GPU):"
    sed 's/^/  /' "$OUT/hw-vs-sim.log" | tee -a "$OUT/summary.txt"
  fi
else
  say "calibration and GPU-vs-simulator steps: SKIPPED (no measurements.json)"
  FAILED="$FAILED calib-fit"
fi
say "total: $(elapsed)s of ${BUDGET}s"
if [ -n "$FAILED" ]; then
  say "RESULT: FAILED steps:$FAILED"
  exit 1
fi
say "RESULT: all steps passed"
exit 0
