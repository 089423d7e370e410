# End to end: zepsim validate --runs (published training runs through the
# analytic Megatron step model): bad files exit 2 with file:line and the
# column; the in-tree held-out runs (experiments/runs/) with the sp column
# and the unfused attention; the shared NeMo 24.07 DGX-H100 table (skipped with a message
# when ../shared is absent) prints the table and the summary, its CSV and
# JSON parse, and every row is either predicted or has a reason.
. "$(dirname "$0")/lib.bash"

HDR=model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,model_tflops_gpu
expect_rc runs-help 0 "$ZEPSIM" validate --runs x --help && expect_out runs-help "not a simulated schedule"
expect_rc runs-no-cluster 2 "$ZEPSIM" validate --runs x.csv
expect_out runs-no-cluster "needs --cluster"
expect_rc runs-bad-plot 2 "$ZEPSIM" validate --runs x.csv --cluster dgx-h100 --plot out.bmp
expect_rc runs-missing 2 "$ZEPSIM" validate --runs "$TMP/none.csv" --cluster dgx-h100
printf '# c\n%s\nllama2-7b,pretrain,8,100,1,4096,1,1,1,1,fp8,,,16847,776\n' "$HDR" >"$TMP/gbs.csv"
expect_rc runs-bad-gbs 2 "$ZEPSIM" validate --runs "$TMP/gbs.csv" --cluster dgx-h100
expect_out runs-bad-gbs "gbs.csv:3"
expect_out runs-bad-gbs "column 4 \(gbs\)"
printf '%s\nllama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\nllama2-7b,pretrain,8,128,1,4096,1,1,1,1,int4,,,16847,776\n' "$HDR" >"$TMP/prec.csv"
expect_rc runs-bad-prec 2 "$ZEPSIM" validate --runs "$TMP/prec.csv" --cluster dgx-h100
expect_out runs-bad-prec "prec.csv:3"
expect_out runs-bad-prec "use one of bf16, fp8"
printf 'model,task\n' >"$TMP/hdr.csv"
expect_rc runs-bad-hdr 2 "$ZEPSIM" validate --runs "$TMP/hdr.csv" --cluster dgx-h100
expect_out runs-bad-hdr "hdr.csv:1"
# The gradient buffer: a bad dtype exits 2; FSDP (zero 3) is predicted,
# with a bf16 buffer its reduce-scatters move half the bytes.
expect_rc runs-bad-grad 2 "$ZEPSIM" validate --runs x.csv --cluster dgx-h100 --grad-dtype fp16
expect_out runs-bad-grad "use fp32\|bf16"
printf '%s\nllama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,full,3,2904,\n' "$HDR" >"$TMP/fsdp.csv"
expect_rc runs-fsdp 0 "$ZEPSIM" validate --runs "$TMP/fsdp.csv" --cluster dgx-a100 --grad-dtype fp32 --format csv
expect_out runs-fsdp "^2,llama3-8b,pretrain,64,.*,predicted,"
expect_out runs-fsdp "gradients: fp32 \(--grad-dtype\)"
expect_out runs-fsdp "fsdp2: copy-out priced"
# FSDP's implementation (--fsdp): a bad one exits 2 naming the choices;
# FSDP2 copies the weights out twice, FSDP1 concatenates the gradients
# once, Megatron-FSDP copies nothing, so their steps come in that order.
expect_rc runs-bad-fsdp 2 "$ZEPSIM" validate --runs "$TMP/fsdp.csv" --cluster dgx-a100 --fsdp fsdp3
expect_out runs-bad-fsdp "fsdp2|fsdp1|megatron-fsdp"
for f in fsdp2 fsdp1 megatron-fsdp; do
  expect_rc "runs-fsdp-$f" 0 "$ZEPSIM" validate --runs "$TMP/fsdp.csv" --cluster dgx-a100 --fsdp "$f" --format csv
  expect_out "runs-fsdp-$f" "zero: 3 \($f: "
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } $1 == 2 { print $c["step_ms"] }' "$TMP/out" >"$TMP/step-$f"
done
awk -v a="$(cat "$TMP/step-fsdp2")" -v b="$(cat "$TMP/step-fsdp1")" -v m="$(cat "$TMP/step-megatron-fsdp")" \
  'BEGIN { exit !(a + 0 > b + 0 && b + 0 > m + 0 && m + 0 > 0) }' &&
  PASSES=$((PASSES + 1)) ||
  { echo "FAIL runs-fsdp-order: steps not fsdp2 > fsdp1 > megatron-fsdp"; FAILS=$((FAILS + 1)); }
# The in-tree held-out runs (experiments/runs/): Megatron-LM's 2022 runs
# with the optional sp column (off: TP all-reduces) and the unfused
# attention they ran; all eight predicted, the full-recomputation rows
# saying sp off. A preset that does not load says why, not "no preset".
RUNS="$(cd "$(dirname "$0")/../.." && pwd)/experiments/runs"
expect_rc runs-megatron-2022 0 "$ZEPSIM" validate --runs "$RUNS/korthikanti-2022-a100.csv" --cluster dgx-a100 --attn-kernel unfused --format csv
expect_out runs-megatron-2022 "^[0-9]+,megatron-22b,pretrain,8,.*,predicted,.*sp: off \\(TP all-reduces"
awk -F, 'NR > 1 && /predicted/ { n++ } END { exit n != 8 }' "$TMP/out" && PASSES=$((PASSES + 1)) ||
  { echo "FAIL runs-megatron-2022: not 8 rows predicted"; FAILS=$((FAILS + 1)); }
expect_rc runs-torchtitan 0 "$ZEPSIM" validate --runs "$RUNS/torchtitan-2024-a100.csv" --cluster aws-p4de --grad-dtype fp32
expect_out runs-torchtitan "8 runs: 8 predicted, 0 not expressed"
printf '%s,sp\nllama2-7b,pretrain,8,128,1,4096,2,1,1,1,bf16,,,1,,sometimes\n' "$HDR" >"$TMP/sp.csv"
expect_rc runs-bad-sp 2 "$ZEPSIM" validate --runs "$TMP/sp.csv" --cluster dgx-h100
expect_out runs-bad-sp "column 16 \\(sp\\): unknown value.*sp.csv:2"
# A model without a preset is a row with a reason (the rest are predicted),
# with the nearest preset's name; names are read in any case.
printf '%s\nLLAMA3-8B,Pretrain,8,128,1,8192,1,1,2,1,FP8,,,12036,697\nllama3-8b-x,pretrain,8,128,1,8192,1,1,2,1,fp8,,,12036,697\n' "$HDR" >"$TMP/nomodel.csv"
expect_rc runs-no-model 0 "$ZEPSIM" validate --runs "$TMP/nomodel.csv" --cluster dgx-h100
expect_out runs-no-model "2 runs: 1 predicted, 1 not expressed"
expect_out runs-no-model "no model preset 'llama3-8b-x': did you mean 'llama3-8b'\?"
# An uneven pipeline split (126 layers over pp 8 x vp 8) is predicted at the
# slowest stage's 16 layers and says so; fewer layers than chunks exits 2.
printf '%s\nllama3.1-405b,pretrain,1024,512,1,8192,8,8,2,8,fp8,,,,763\n' "$HDR" >"$TMP/uneven.csv"
expect_rc runs-uneven 0 "$ZEPSIM" validate --runs "$TMP/uneven.csv" --cluster dgx-h100 --format csv
expect_out runs-uneven "^2,llama3.1-405b,pretrain,1024,.*,predicted,.*uneven pipeline split: 126 layers over pp 8 x vp 8, the slowest stage's 16 priced"
printf '%s\nllama2-7b,pretrain,8,128,1,4096,1,8,1,8,fp8,,,16847,776\n' "$HDR" >"$TMP/chunks.csv"
expect_rc runs-chunks 2 "$ZEPSIM" validate --runs "$TMP/chunks.csv" --cluster dgx-h100
expect_out runs-chunks "chunks.csv:2: .*fewer than pp 8 x vp 8 chunks|fewer than pp 8 x vp 8 chunks.*chunks.csv:2"
# Fine-tuning rows pack SQuAD-length documents into each sample by default
# (attention per document: faster than one causal sequence), say so, and
# --packed-docs none prices one sequence; a bad length model exits 2.
printf '%s\nllama2-7b,sft,8,32,1,4096,1,1,1,1,fp8,,,17120,682\n' "$HDR" >"$TMP/sft.csv"
expect_rc runs-packed 0 "$ZEPSIM" validate --runs "$TMP/sft.csv" --cluster dgx-h100 --format csv
expect_out runs-packed "packs 'squad' documents \([0-9.]+ per sample"
packed_tok=$(awk -F, 'NR == 2 {print $14}' "$TMP/out")
expect_rc runs-unpacked 0 "$ZEPSIM" validate --runs "$TMP/sft.csv" --cluster dgx-h100 --format csv --packed-docs none
expect_out runs-unpacked "one causal 4096-token sequence"
unpacked_tok=$(awk -F, 'NR == 2 {print $14}' "$TMP/out")
if awk -v a="$packed_tok" -v b="$unpacked_tok" 'BEGIN {exit !(a > b && b > 0)}'; then
  PASSES=$((PASSES + 1))
else
  echo "FAIL runs-packed-faster: packed $packed_tok, one sequence $unpacked_tok tokens/s/GPU"
  FAILS=$((FAILS + 1))
fi
# Packed samples under CP: each document zigzag-cut on its own, in the step
# model and (per-document sharding) in the simulated schedule.
printf '%s\nllama3-8b,sft,16,32,1,16384,1,1,2,1,fp8,,,1000,\n' "$HDR" >"$TMP/sftcp.csv"
expect_rc runs-packed-cp 0 "$ZEPSIM" validate --runs "$TMP/sftcp.csv" --cluster dgx-h100 --simulate --format csv
expect_out runs-packed-cp "^runs,2,llama3-8b,sft,16,.*,predicted,"
expect_out runs-packed-cp "^simulated,2,llama3-8b,.*,simulated,"
expect_rc runs-packed-bad 2 "$ZEPSIM" validate --runs "$TMP/sft.csv" --cluster dgx-h100 --packed-docs squid
expect_out runs-packed-bad "not a length model"
expect_rc runs-packed-bad-n 2 "$ZEPSIM" validate --runs "$TMP/sft.csv" --cluster dgx-h100 --packed-docs fixed:0
expect_out runs-packed-bad-n "^zepsim: --packed-docs: fixed:N needs a whole N >= 1"
# torchtitan's rows, on the cluster that ran them (aws-p4de): the kernels
# column and its recomputation modes are predicted, and say so; eager
# kernels on a LayerNorm model are a reason; a bad kernels cell exits 2
# naming column 16; the schedules decline them.
printf '%s,kernels\nllama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,selective-op,3,2973,,eager-fused-norm\ngpt3-5b,pretrain,64,64,1,2048,1,1,1,1,bf16,,3,2973,,eager\n' "$HDR" >"$TMP/tt.csv"
expect_rc runs-eager 0 "$ZEPSIM" validate --runs "$TMP/tt.csv" --cluster aws-p4de --grad-dtype fp32 --format csv --simulate
expect_out runs-eager "^runs,2,llama3-8b,pretrain,64,.*,predicted,"
expect_out runs-eager "recompute: selective-op; .*kernels: eager-fused-norm"
expect_out runs-eager "^runs,3,gpt3-5b,.*not expressed.*LayerNorm"
expect_out runs-eager "^simulated,2,llama3-8b,.*not simulated.*recompute none or full"
printf '%s,kernels\nllama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,,3,2973,,jit\n' "$HDR" >"$TMP/ttbad.csv"
expect_rc runs-bad-kernels 2 "$ZEPSIM" validate --runs "$TMP/ttbad.csv" --cluster dgx-a100
expect_out runs-bad-kernels "ttbad.csv:2"
expect_out runs-bad-kernels "column 16 \(kernels\)"
# The attention kernel: on an H100 the header names the GPU's own (fa2) and
# says when TransformerEngine runs it (NVTE_FUSED_ATTN=0, NeMo's launcher
# until 24.07) and when cuDNN's; --attn-kernel cudnn prices that and drops
# the note; an A100 (compute capability 8) has none.
printf '%s\nllama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\n' "$HDR" >"$TMP/te.csv"
expect_rc runs-te-note 0 "$ZEPSIM" validate --runs "$TMP/te.csv" --cluster dgx-h100
expect_out runs-te-note "attention kernel fa2 \(the GPU's own\)"
expect_out runs-te-note "^attention: the fa2 curve. .*NVTE_FUSED_ATTN=0.* cuDNN's fused attention"
expect_rc runs-te-cudnn 0 "$ZEPSIM" validate --runs "$TMP/te.csv" --cluster dgx-h100 --attn-kernel cudnn
expect_out runs-te-cudnn "attention kernel cudnn \(--attn-kernel\)"
if grep -q "^attention: " "$TMP/out"; then echo "FAIL runs-te-cudnn: note printed"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
# FP8 with current scaling (fp8-cs): the step model and the schedules price
# its amax passes (slower than delayed scaling's row).
printf '%s\nllama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8-cs,,,16847,776\n' "$HDR" >"$TMP/cs.csv"
expect_rc runs-fp8-cs 0 "$ZEPSIM" validate --runs "$TMP/cs.csv" --cluster dgx-h100 --simulate --format csv
expect_out runs-fp8-cs "^simulated,2,llama2-7b,.*,simulated,"
cs=$(awk -F, '$1 == "runs" && $2 == 2 {print $15}' "$TMP/out")
"$ZEPSIM" validate --runs "$TMP/te.csv" --cluster dgx-h100 --simulate --format csv >"$TMP/ds.csv" 2>&1
ds=$(awk -F, '$1 == "runs" && $2 == 2 {print $15}' "$TMP/ds.csv")
awk -v a="$cs" -v b="$ds" 'BEGIN { exit !(a + 0 > 0 && a + 0 < b + 0) }' && PASSES=$((PASSES + 1)) ||
  { echo "FAIL runs-fp8-cs: current scaling $cs not below delayed $ds tokens/s"; FAILS=$((FAILS + 1)); }
# FSDP (zero 3): the schedule gathers every layer per micro-batch and
# reduce-scatters its gradients, as the step model prices it, so the
# two steps agree (within 3%; 10% apart when the schedule gathered once
# per layer and reduce-scattered once per step).
printf '%s\nllama2-7b,pretrain,8,32,1,4096,1,1,1,1,bf16,,3,16847,\n' "$HDR" >"$TMP/z3.csv"
expect_rc runs-fsdp-sim 0 "$ZEPSIM" validate --runs "$TMP/z3.csv" --cluster dgx-h100 --simulate --format csv
awk -F, '$1 == "table" { for (i = 1; i <= NF; i++) c[$i] = i }
  $1 == "simulated" && $2 == 2 { a = $c["sim_step_ms"]; b = $c["step_model_ms"] }
  END { exit !(a > 0 && b > 0 && a / b > 0.97 && a / b < 1.03) }' "$TMP/out" && PASSES=$((PASSES + 1)) ||
  { echo "FAIL runs-fsdp-sim: simulated and step-model steps differ by more than 3%"; FAILS=$((FAILS + 1)); }
# ... and as FSDP1 (its gradient concatenation in both)
expect_rc runs-fsdp1-sim 0 "$ZEPSIM" validate --runs "$TMP/z3.csv" --cluster dgx-h100 --simulate --fsdp fsdp1 --format csv
awk -F, '$1 == "table" { for (i = 1; i <= NF; i++) c[$i] = i }
  $1 == "simulated" && $2 == 2 { a = $c["sim_step_ms"]; b = $c["step_model_ms"] }
  END { exit !(a > 0 && b > 0 && a / b > 0.97 && a / b < 1.03) }' "$TMP/out" && PASSES=$((PASSES + 1)) ||
  { echo "FAIL runs-fsdp1-sim: simulated and step-model steps differ by more than 3%"; FAILS=$((FAILS + 1)); }
# FP8 on an A100 cluster: a reason, not a failure.
printf '%s\nllama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,\n' "$HDR" >"$TMP/a100.csv"
expect_rc runs-a100 0 "$ZEPSIM" validate --runs "$TMP/a100.csv" --cluster dgx-a100
expect_out runs-a100 "not expressed"
expect_out runs-a100 "no FP8 tensor cores"
# MPT as llm-foundry ran it: --attn-kernel fa-triton (its Triton
# FlashAttention on A100s) prices a 64K row's attention slower than the
# GPU's own fa2, and the header names the kernel; a kernel the GPU lacks
# exits 2 naming the ones it has.
printf '%s\nmpt-7b,pretrain,8,16,1,65536,1,1,1,1,bf16,full,3,1013,\n' "$HDR" >"$TMP/mpt.csv"
expect_rc runs-triton 0 "$ZEPSIM" validate --runs "$TMP/mpt.csv" --cluster dgx-a100 --attn-kernel fa-triton
expect_out runs-triton "attention kernel fa-triton"
expect_rc runs-triton-csv 0 "$ZEPSIM" validate --runs "$TMP/mpt.csv" --cluster dgx-a100 --attn-kernel fa-triton --format csv
expect_out runs-triton-csv "^2,mpt-7b,pretrain,8,.*,predicted,"
cp "$TMP/out" "$TMP/triton.csv"
expect_rc runs-fa2-csv 0 "$ZEPSIM" validate --runs "$TMP/mpt.csv" --cluster dgx-a100 --format csv
cp "$TMP/out" "$TMP/fa2.csv"
if command -v python3 >/dev/null; then
  python3 - "$TMP/triton.csv" "$TMP/fa2.csv" <<'PY' && PASSES=$((PASSES + 1)) || { echo "FAIL runs-triton-slower"; FAILS=$((FAILS + 1)); }
import csv, sys
step = [float(next(r for r in csv.DictReader(open(f)) if r["status"] == "predicted")["step_ms"]) for f in sys.argv[1:]]
assert step[0] > 1.5 * step[1], step
PY
fi
expect_rc runs-bad-kernel 2 "$ZEPSIM" validate --runs "$TMP/mpt.csv" --cluster dgx-a100 --attn-kernel fa9
expect_out runs-bad-kernel "no attention kernel 'fa9' \(it has: fa2, fa-triton; and unfused"

# --lora-rank reaches the simulated schedule as it reaches the step model:
# a lora row's simulated step follows the step model's at two ranks (the
# step changes with the rank: the adapter's GEMMs are priced by shape).
# Ranks 8 and 1024: the adapters at rank 1024 add ~9% of FLOPs; 8 and 256
# differ by 1% now that a rank-8 GEMM is priced at its bytes rather than
# by the GEMM curve extrapolated below its data (that made rank 8 30%
# slower than 256, docs/cost-model.md "Below the data").
printf '%s\nllama2-7b,lora,8,32,1,4096,1,1,1,1,fp8,,,25206,673\n' "$HDR" >"$TMP/lora.csv"
for r in 8 1024; do
  expect_rc "runs-lora-$r" 0 "$ZEPSIM" validate --runs "$TMP/lora.csv" --cluster dgx-h100 --simulate --format csv --lora-rank "$r"
  expect_out "runs-lora-$r" "^simulated,2,llama2-7b,.*,simulated,"
  cp "$TMP/out" "$TMP/lora-$r.csv"
done
if command -v python3 >/dev/null; then
  python3 - "$TMP/lora-8.csv" "$TMP/lora-1024.csv" <<'PY' && PASSES=$((PASSES + 1)) || { echo "FAIL runs-lora-rank"; FAILS=$((FAILS + 1)); }
import csv, sys
steps = []
for f in sys.argv[1:]:
    lines = [l for l in open(f) if l.startswith(("table,", "simulated,"))]
    s = next(r for r in csv.DictReader(lines) if r["table"] == "simulated")
    sim, step = float(s["sim_step_ms"]), float(s["step_model_ms"])
    assert abs(sim - step) < 0.05 * step, (f, sim, step)
    steps.append(sim)
assert steps[1] > 1.05 * steps[0], steps
PY
fi

# --calib: a file that is not there, or not a calibration, exits 2 before
# any row; a collective fit of A100 NVSwitch logs prices the runs and the
# header says so.
expect_rc runs-calib-missing 2 "$ZEPSIM" validate --runs "$RUNS/korthikanti-2022-a100.csv" --cluster dgx-a100 --calib "$TMP/none.json"
expect_out runs-calib-missing "cannot open file.*none.json"
AZ="$SHARED/reference/multinode/echo-a100-azure"
if [ -f "$AZ/nccl_8.log" ]; then
  "$ZEPSIM" calib fit "$AZ/nccl_2.log" "$AZ/nccl_4.log" "$AZ/nccl_8.log" --cluster azure-nd-a100-v4 -o "$TMP/az.json" >/dev/null
  expect_rc runs-calib 0 "$ZEPSIM" validate --runs "$RUNS/korthikanti-2022-a100.csv" --cluster dgx-a100 --attn-kernel unfused --calib "$TMP/az.json"
  expect_out runs-calib "calibrated by .*az.json cost model"
  expect_out runs-calib "8 runs: 8 predicted, 0 not expressed"
fi

CSV="$SHARED/reference/e2e/nemo-24.07-dgx-h100.csv"
if [ ! -f "$CSV" ]; then
  echo "skip (shared run table): $CSV is absent"
  finish
  exit $?
fi
expect_rc runs-shared 0 "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100
expect_out runs-shared "analytic step model \(not a simulated schedule\)"
expect_out runs-shared "^line +model +task"
expect_out runs-shared "recompute: none \(default; not published\)"
expect_out runs-shared "18 runs: [0-9]+ predicted, [0-9]+ not expressed"
expect_out runs-shared "median [0-9.]+%, max [0-9.]+%"
if command -v gnuplot >/dev/null; then
  expect_rc runs-plot 0 "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100 --plot "$TMP/runs.png" --format csv
  [ -s "$TMP/runs.png" ] && PASSES=$((PASSES + 1)) || { echo "FAIL runs-plot: no $TMP/runs.png"; FAILS=$((FAILS + 1)); }
fi
expect_rc runs-shared-csv 0 "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100 --format csv
cp "$TMP/out" "$TMP/runs.csv"
if command -v python3 >/dev/null; then
  # one row per run; each predicted (finite error_pct, predictions) or with a reason
  python3 - "$TMP/runs.csv" <<'PY' && PASSES=$((PASSES + 1)) || { echo "FAIL runs-csv-rows"; FAILS=$((FAILS + 1)); }
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 18, len(rows)
for r in rows:
    if r["status"] == "predicted":
        for k in ("error_pct", "pred_tokens_s_gpu", "pred_tflops_gpu", "step_ms", "compute_ms"):
            assert math.isfinite(float(r[k])), (k, r)
        assert not r["reason"], r
        # NeMo's SFT model FLOPs count the packed documents, and LoRA's only
        # two thirds of them: error on tokens/s
        assert r["error_on"] == ("model_tflops_gpu" if r["task"] == "pretrain" else "tokens_s_gpu"), r
    else:
        assert r["status"] == "not expressed" and r["reason"], r
    assert r["defaults"], r
assert sum(r["status"] == "not expressed" for r in rows) <= 3
# LoRA (frozen base weights) is expressed, and a frozen base trains faster
lora = {r["model"]: r for r in rows if r["task"] == "lora"}
sft = {r["model"]: r for r in rows if r["task"] == "sft"}
assert len(lora) == 3 and all(r["status"] == "predicted" for r in lora.values()), lora
assert float(lora["llama2-7b"]["pred_tokens_s_gpu"]) > float(sft["llama2-7b"]["pred_tokens_s_gpu"])
PY
  "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100 --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["runs"]) == 18 and d["median_abs_error_pct"] >= 0 and d["packed_docs"] == "squad"' &&
    PASSES=$((PASSES + 1)) || { echo "FAIL runs-json"; FAILS=$((FAILS + 1)); }
  # --simulate: every run the step model predicts also as a simulated
  # schedule (or a reason), in a second table of the same document
  "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100 --simulate --format json |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
runs, sim = d["runs"], d["simulated"]
assert len(sim) == len(runs) == 18
for r, s in zip(runs, sim):
    assert s["line"] == r["line"]
    if s["status"] == "simulated":
        assert r["status"] == "predicted" and s["sim_tokens_s_gpu"] > 0 and abs(s["sim_error_pct"]) < 100, s
    else:
        assert s["reason"], s
# LoRA rows: simulated with frozen base weights (plain-4d lora=R)
lora = [s for r, s in zip(runs, sim) if r["task"] == "lora"]
assert len(lora) == 3 and all(s["status"] == "simulated" for s in lora), lora
assert d["runs_simulated"] >= 8 and d["sim_median_abs_error_pct"] >= 0' &&
    PASSES=$((PASSES + 1)) || { echo "FAIL runs-simulate-json"; FAILS=$((FAILS + 1)); }
fi
expect_rc runs-simulate 0 "$ZEPSIM" validate --runs "$CSV" --cluster dgx-h100 --simulate
expect_out runs-simulate "simulated schedules \(plain-4d, analytic backend\)"
expect_out runs-simulate "[0-9]+ runs simulated: \|error\| median [0-9.]+%"
finish
