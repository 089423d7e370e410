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

if [ ! -d "$REF/h200-nccl-tests" ] || [ ! -f "$REF/h100-kernels/attention-latency-vs-seqlen.csv" ]; then
  echo "skipping the reference-data part: $REF not present"
  finish
  exit $?
fi
expect_rc calib-fit 0 "$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt "$REF"/h100-kernels/*.csv -o "$TMP/h200.calib.json"
expect_out calib-fit "all-reduce +t0"
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
