# End to end: `zepsim timeline compare` on two simulator timelines of the
# same one-GPU plan priced for two GPUs (same ops, other durations), on a
# timeline against itself, and on bad input.
. "$(dirname "$0")/lib.bash"

one_gpu() { # one_gpu GPU FILE: a one-GPU cluster description
  cat >"$2" <<JSON
{"name": "one-$1", "gpu": "$1", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1,
 "nic_gbps": 400, "pcie_gbs": 52, "nvlink_latency_us": 2.0, "pcie_latency_us": 0.5,
 "nic_latency_us": 2.0, "fabric_latency_us": 1.0, "nodes_per_leaf": 32, "oversubscription": 1.0}
JSON
}
printf '[{"name": "extra", "ph": "X", "ts": 0, "dur": 1, "args": {"rank": 0}}]\n' \
  >"$TMP/norank-free.json"
one_gpu h200 "$TMP/h200.json"
one_gpu h100-sxm "$TMP/h100.json"
printf '8192\n4096\n2048\n1024\n512\n300\n' >"$TMP/lens.txt"
for g in h200 h100; do
  expect_rc plan-$g 0 "$ZEPSIM" plan --method local --model llama-550m --cluster "$TMP/$g.json" \
    --nodes 1 --group 1 --context 16172 --trace "$TMP/lens.txt" --iterations 1 --dump "$TMP/$g-plan.json"
  expect_rc run-$g 0 "$ZEPSIM" run --backend sim --cluster "$TMP/$g.json" "$TMP/$g-plan.json" \
    --timeline "$TMP/$g-tl.json"
done

expect_rc help 0 "$ZEPSIM" timeline --help && expect_out help "usage: zepsim timeline compare"
expect_rc compare 0 "$ZEPSIM" timeline compare "$TMP/h100-tl.json" "$TMP/h200-tl.json"
expect_out compare "^iteration span: measured [0-9.]+ ms, predicted [0-9.]+ ms, error -[0-9.]+%"
expect_out compare "0 only measured, 0 only predicted"
expect_out compare "^attn-bwd +compute +[0-9]+ "
expect_rc self 0 "$ZEPSIM" timeline compare "$TMP/h200-tl.json" "$TMP/h200-tl.json" --format csv
expect_out self "^attn-fwd,compute,[0-9]+,[0-9.]+,[0-9.]+,0,0$"
expect_rc self-table 0 "$ZEPSIM" timeline compare "$TMP/h200-tl.json" "$TMP/h200-tl.json"
expect_out self-table "^attn-fwd +compute +[0-9]+ +[0-9.]+ +[0-9.]+ +\+0.00 +0.00$"

# Limiting a timeline to layers and ranks (issue 5): forward layers count
# up, backward down, so layers 1-2 appear in both passes and nothing else.
expect_rc limit 0 "$ZEPSIM" run --backend sim --cluster "$TMP/h200.json" "$TMP/h200-plan.json" \
  --timeline "$TMP/lim.json" --timeline-layers 1-2 --timeline-ranks 0
layers=$(grep -o '"layer":-\?[0-9]*' "$TMP/lim.json" | sort -u | tr '\n' ' ')
if [ "$layers" = '"layer":1 "layer":2 ' ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL limit-layers: got $layers"; FAILS=$((FAILS + 1)); fi
all=$(grep -o '"layer":-\?[0-9]*' "$TMP/h200-tl.json" | sort -u | wc -l)
if [ "$all" -gt 3 ] && grep -q '"layer":-1' "$TMP/h200-tl.json"; then PASSES=$((PASSES + 1)); else
  echo "FAIL all-layers: $all distinct layers"; FAILS=$((FAILS + 1)); fi
qkv=$(grep -o '"name":"qkv"[^}]*"layer":[0-9]*' "$TMP/lim.json" | grep -o '"layer":[0-9]*$' | tr '\n' ' ')
qkvw=$(grep -o '"name":"qkv-wgrad"[^}]*"layer":[0-9]*' "$TMP/lim.json" | grep -o '"layer":[0-9]*$' | tr '\n' ' ')
if [ "$qkv" = '"layer":1 "layer":2 ' ] && [ "$qkvw" = '"layer":2 "layer":1 ' ]; then
  PASSES=$((PASSES + 1)); else echo "FAIL layer-order: forward $qkv, backward $qkvw"; FAILS=$((FAILS + 1)); fi
# Folding keeps the layers a timeline shows (issue 22): layers 10-11 sit
# in the middle of the folded forward and backward passes, yet every rank
# writes their ops, at their real times; the rest still folds.
expect_rc fold-layers 0 "$ZEPSIM" simulate --method te-cp --nodes 2 --iterations 1 \
  --timeline "$TMP/fold.json" --timeline-layers 10-11
expect_out fold-layers "folded: [0-9]+ of [0-9]+ repeated segments"
fl=$(grep -o '"name":"qkv[^"]*"[^}]*"rank":[0-9]*,"layer":[0-9]*' "$TMP/fold.json" |
  sed 's/.*"name":"\([^"]*\)".*"rank":\([0-9]*\),"layer":\([0-9]*\)/\1 \2 \3/' | sort -u | wc -l)
# qkv (forward), qkv-dgrad and qkv-wgrad x 16 ranks x 2 layers
if [ "$fl" -eq 96 ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL fold-layers-ops: $fl distinct (op, rank, layer), expected 96"; FAILS=$((FAILS + 1)); fi
expect_rc fold-all 0 "$ZEPSIM" simulate --method te-cp --nodes 2 --iterations 1 \
  --timeline "$TMP/fold-all.json"
expect_out fold-all "ran unrolled for the timeline"
expect_rc bad-range 2 "$ZEPSIM" run --backend sim "$TMP/h200-plan.json" --timeline-layers 3-1
expect_out bad-range "bad range '3-1'"
expect_rc bad-range-sim 2 "$ZEPSIM" simulate --timeline-ranks x

# Several files on one side (a multi-process GPU run writes one per rank).
expect_rc two-files 0 "$ZEPSIM" timeline compare "$TMP/h200-tl.json,$TMP/norank-free.json" \
  "$TMP/h200-tl.json"
expect_out two-files "1 only measured, 0 only predicted"
expect_rc empty-list 2 "$ZEPSIM" timeline compare "," "$TMP/h200-tl.json"

expect_rc no-sub 2 "$ZEPSIM" timeline
expect_rc one-file 2 "$ZEPSIM" timeline compare "$TMP/h200-tl.json"
expect_rc bad-top 2 "$ZEPSIM" timeline compare --top 0 "$TMP/h200-tl.json" "$TMP/h200-tl.json"
expect_rc missing 2 "$ZEPSIM" timeline compare "$TMP/nope.json" "$TMP/h200-tl.json"
expect_out missing "nope.json"
printf '{"traceEvents": [\n{"name": "x", "ph": "X", "ts": 0, "dur": 1}]}\n' >"$TMP/norank.json"
expect_rc no-rank 2 "$ZEPSIM" timeline compare "$TMP/h200-tl.json" "$TMP/norank.json"
expect_out no-rank "norank.json: traceEvents\[0\]"
finish
