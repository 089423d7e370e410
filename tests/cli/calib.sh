# End to end: zepsim calib fit / show and zepsim validate on the shared
# reference data (skipped when absent) and on broken files.
. "$(dirname "$0")/lib.bash"
REF="$SHARED/reference"

expect_rc calib-help 0 "$ZEPSIM" calib --help && expect_out calib-help "usage: zepsim calib fit"
expect_rc calib-no-output 2 "$ZEPSIM" calib fit x.txt
expect_rc calib-bad-sub 2 "$ZEPSIM" calib frob
expect_rc validate-help 0 "$ZEPSIM" validate --help && expect_out validate-help "--holdout"
expect_rc validate-no-files 2 "$ZEPSIM" validate
printf '$ ./all_reduce_perf -g 2\n# nThread 1 nGpus 2\n     8388608       4194304      half     sum      -1    46.47  180.53\n' >"$TMP/all_reduce-trunc.txt"
expect_rc calib-truncated 2 "$ZEPSIM" calib fit "$TMP/all_reduce-trunc.txt" -o "$TMP/x.json"
expect_out calib-truncated "all_reduce-trunc.txt:3"
expect_rc calib-missing 2 "$ZEPSIM" calib fit /nonexistent.txt -o "$TMP/x.json"
expect_rc validate-bad-holdout 2 "$ZEPSIM" validate --against /nonexistent.txt --holdout "gpus=x"

# Per-document attention profiles (L,cp,tp,duration_per_doc): they need
# the model; with it, a fit on cp = 1 predicts the sharded points.
printf 'L,cp,tp,duration_per_doc\n1024,1,1,0.2\n2048,1,1,0.7\n4096,1,1,2.7\n8192,1,1,10.1\n512,1,1,0.07\n256,1,1,0.025\n128,1,1,0.013\n64,1,1,0.012\n4096,2,1,1.6\n4096,4,2,0.5\n' >"$TMP/profile.csv"
expect_rc validate-profile-no-model 2 "$ZEPSIM" validate --against "$TMP/profile.csv" --plot none
expect_out validate-profile-no-model "attention points have no shape"
expect_rc validate-profile 0 "$ZEPSIM" validate --against "$TMP/profile.csv" --model llama-7b --gpu h100-sxm --attn-kernel te --holdout 'cp<=1' --plot none
expect_out validate-profile "4096 tokens x8, 32/32 heads, d=128, cp=4 tp=2 .* held-out"
expect_out validate-profile "attn_fwd +held-out +2 "
expect_rc validate-bad-kernel 2 "$ZEPSIM" validate --against "$TMP/profile.csv" --model llama-7b --gpu a800-80g --attn-kernel te

if [ ! -d "$REF/h200-nccl-tests" ] || [ ! -f "$REF/h100-kernels/attention-latency-vs-seqlen.csv" ]; then
  echo "skipping the reference-data part: $REF not present"
  finish
  exit $?
fi
expect_rc calib-fit 0 "$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt "$REF"/h100-kernels/*.csv -o "$TMP/h200.calib.json"
expect_out calib-fit "collectives: NCCL 2.29.2 model, fitted on cluster 'cluster-c'"
expect_out calib-fit "points explained by: ring/Simple"
expect_out calib-fit "attn_fwd"
grep -q '"sha256": "[0-9a-f]\{64\}"' "$TMP/h200.calib.json" && PASSES=$((PASSES + 1)) || { echo "FAIL calib-sha"; FAILS=$((FAILS + 1)); }
expect_rc calib-show 0 "$ZEPSIM" calib show "$TMP/h200.calib.json" && expect_out calib-show "measured on H200"
# Deterministic: the same inputs give the same bytes.
"$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt "$REF"/h100-kernels/*.csv -o "$TMP/again.json" >/dev/null
cmp -s "$TMP/h200.calib.json" "$TMP/again.json" && PASSES=$((PASSES + 1)) || { echo "FAIL calib-deterministic"; FAILS=$((FAILS + 1)); }
expect_rc validate 0 "$ZEPSIM" validate --calib "$TMP/h200.calib.json" --against "$REF"/h200-nccl-tests/*.txt --plot none
expect_out validate "all-reduce +all +22"
expect_rc holdout 0 "$ZEPSIM" validate --against "$REF"/h200-nccl-tests/*.txt "$REF/h100-kernels/attention-latency-vs-seqlen.csv" --holdout gpus=2 --holdout 'seq<=4096' --plot none --format csv
expect_out holdout "collectives >= 8 MB,held-out,33,"
expect_out holdout "attn_fwd >= 1K tokens,held-out,3,"
finish
