# End to end: writing timelines (issue 18): one file per method from
# `compare` whatever --jobs, names printed; .json.gz compressed and read
# back; the analytic backend writes the same events as the simulator; send
# -> receive flows; `plan --timeline` refused; a timeline that cannot be
# written is an error that leaves nothing behind.
. "$(dirname "$0")/lib.bash"
SMALL=(--nodes 1 --group 8 --context 16384 --iterations 1 --seed 3)

for jobs in 1 2; do
  d="$TMP/j$jobs"
  mkdir -p "$d"
  expect_rc compare-j$jobs 0 "$ZEPSIM" compare --methods te-cp,usp,zeppelin "${SMALL[@]}" \
    --plot none --jobs $jobs --timeline "$d/t.json"
  expect_out names-j$jobs "^timeline te-cp: .*/t\.te-cp\.json \([0-9.]+ MB of JSON\)"
  expect_out names-j$jobs "^timeline zeppelin: .*/t\.zeppelin\.json"
  got=$(cd "$d" && ls | tr '\n' ' ')
  if [ "$got" = "t.te-cp.json t.usp.json t.zeppelin.json " ]; then PASSES=$((PASSES + 1)); else
    echo "FAIL files-j$jobs: got '$got'"; FAILS=$((FAILS + 1)); fi
  for m in te-cp usp zeppelin; do # each parses and holds complete events
    expect_rc parse-j$jobs-$m 0 "$ZEPSIM" timeline compare "$d/t.$m.json" "$d/t.$m.json"
    expect_out parse-j$jobs-$m "0 only measured, 0 only predicted"
  done
done
# With --jobs 1 and --jobs 2 the files are the same.
for m in te-cp usp zeppelin; do
  if cmp -s "$TMP/j1/t.$m.json" "$TMP/j2/t.$m.json"; then PASSES=$((PASSES + 1)); else
    echo "FAIL same-$m: --jobs 1 and --jobs 2 timelines differ"; FAILS=$((FAILS + 1)); fi
done
expect_rc twice 2 "$ZEPSIM" compare --methods usp,usp "${SMALL[@]}" --plot none \
  --timeline "$TMP/tw.json"
expect_out twice "listed twice"

# gzip: compressed on disk, the same text inside, read by timeline compare.
expect_rc sim-plain 0 "$ZEPSIM" simulate --method zeppelin "${SMALL[@]}" --timeline "$TMP/s.json"
expect_out sim-plain "^timeline: .*/s\.json"
expect_rc sim-gz 0 "$ZEPSIM" simulate --method zeppelin "${SMALL[@]}" --timeline "$TMP/s.json.gz"
magic=$(od -An -tx1 -N2 "$TMP/s.json.gz" | tr -d ' ')
if [ "$magic" = 1f8b ] && gzip -t "$TMP/s.json.gz" && cmp -s <(gzip -dc "$TMP/s.json.gz") "$TMP/s.json"
then PASSES=$((PASSES + 1)); else echo "FAIL gz: magic '$magic' or content differs"; FAILS=$((FAILS + 1)); fi
expect_rc gz-compare 0 "$ZEPSIM" timeline compare "$TMP/s.json.gz" "$TMP/s.json"
expect_out gz-compare "0 only measured, 0 only predicted"
printf 'not gzip' >"$TMP/bad.json.gz"
expect_rc gz-bad 2 "$ZEPSIM" timeline compare "$TMP/bad.json.gz" "$TMP/s.json"

# Flows: as many starts as ends, one per send.
ns=$(grep -c '"ph":"s"' "$TMP/s.json"); nf=$(grep -c '"ph":"f"' "$TMP/s.json")
nsend=$(grep -c '"cat":"send"' "$TMP/s.json")
if [ "$ns" -gt 0 ] && [ "$ns" = "$nf" ] && [ "$ns" = "$nsend" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL flows: $ns starts, $nf ends, $nsend sends"; FAILS=$((FAILS + 1)); fi

# The analytic backend writes a timeline with the same ops.
expect_rc analytic 0 "$ZEPSIM" simulate --method zeppelin "${SMALL[@]}" --backend analytic \
  --timeline "$TMP/a.json"
expect_rc analytic-vs-sim 0 "$ZEPSIM" timeline compare "$TMP/s.json" "$TMP/a.json"
expect_out analytic-vs-sim "0 only measured, 0 only predicted"
expect_rc plan-dump 0 "$ZEPSIM" plan --method usp "${SMALL[@]}" --dump "$TMP/plan.json"
expect_rc run-analytic 0 "$ZEPSIM" run "$TMP/plan.json" --backend analytic --timeline "$TMP/r.json" \
  --timeline-ranks 0-3
expect_out run-analytic "^timeline: .*/r\.json"
ranks=$(grep -o '"rank":[0-9]*' "$TMP/r.json" | sort -u | tr '\n' ' ')
if [ "$ranks" = '"rank":0 "rank":1 "rank":2 "rank":3 ' ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL run-analytic-ranks: $ranks"; FAILS=$((FAILS + 1)); fi

# plan runs no backend: --timeline is refused, not ignored.
expect_rc plan-timeline 2 "$ZEPSIM" plan --method usp "${SMALL[@]}" --timeline "$TMP/p.json"
expect_out plan-timeline "plan runs no backend"
[ ! -e "$TMP/p.json" ] && PASSES=$((PASSES + 1)) || { echo "FAIL plan wrote a file"; FAILS=$((FAILS + 1)); }

# A folder that does not exist: an error naming the path, nothing written.
expect_rc no-dir 1 "$ZEPSIM" simulate --method usp "${SMALL[@]}" --timeline "$TMP/none/t.json"
expect_out no-dir "none/t.json"
expect_rc no-dir-analytic 1 "$ZEPSIM" simulate --method usp "${SMALL[@]}" --backend analytic \
  --timeline "$TMP/none/t.json"
left=$(ls "$TMP" | grep -c 'tmp-' || true)
if [ "$left" = 0 ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL leftovers: $left temporary files"; FAILS=$((FAILS + 1)); fi
# A ring across two nodes: sends and receives name their pass, and the
# timeline read back gives the forward pass's cross-node ring round
# (xnode_p2p_us, positive); without a timeline the column is empty.
xcol() { # xcol FILE: the xnode_p2p_us field of a one-row CSV
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "xnode_p2p_us") c = i } NR == 2 { print $c }' "$1"
}
X2=(--method te-cp --nodes 2 --group 16 --context 32768 --trace fixed:32768 --iterations 1 --quiet)
expect_rc xnode 0 sh -c "'$ZEPSIM' simulate ${X2[*]} --format csv --timeline '$TMP/x2.json' >'$TMP/x2.csv'"
if grep -q '"phase":"forward"' "$TMP/x2.json" && grep -q '"phase":"backward"' "$TMP/x2.json"; then
  PASSES=$((PASSES + 1)); else echo "FAIL phase: no phase args in the timeline"; FAILS=$((FAILS + 1)); fi
x=$(xcol "$TMP/x2.csv")
if awk -v x="$x" 'BEGIN { exit !(x + 0 > 0) }'; then PASSES=$((PASSES + 1)); else
  echo "FAIL xnode-value: xnode_p2p_us '$x'"; FAILS=$((FAILS + 1)); fi
expect_rc xnode-none 0 sh -c "'$ZEPSIM' simulate ${X2[*]} --format csv >'$TMP/x0.csv'"
x=$(xcol "$TMP/x0.csv")
if [ -z "$x" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL xnode-none: xnode_p2p_us '$x' without a timeline"; FAILS=$((FAILS + 1)); fi
finish
