# End to end: compare's labels agree with its numbers (issue 35 item 4).
# - hybrid-dp on dgx-h100 with fa3: its slowest rank computes less than the
#   mean rank and idles a third of the iteration; it was "compute-bound"
#   (the largest of three terms); now it is waiting on other ranks.
# - compare prints each planner's notes, as simulate does, so a
#   `--no-routing` that changes nothing shows why (the planner had turned
#   routing off already).
# - a method that fails gives its reason in its own line on stdout (was
#   "failed (see the error above)", the error on stderr).
. "$(dirname "$0")/lib.bash"

"$ZEPSIM" compare --cluster dgx-h100 --attn-kernel fa3 --methods te-cp,hybrid-dp --quiet \
  --plot none >"$TMP/h100.out" 2>"$TMP/h100.err"
rc=$?
if [ $rc -eq 0 ]; then PASSES=$((PASSES + 1)); else echo "FAIL h100: exit $rc"; cat "$TMP/h100.err"; FAILS=$((FAILS + 1)); fi
cp "$TMP/h100.out" "$TMP/out"
expect_out hybrid-why "^  hybrid-dp +waiting on other ranks \(idle [0-9]+% of its time; it computes less than the mean rank: imbalance\): compute"
expect_out te-cp-why "^  te-cp +communication-bound \(exposed communication [0-9]+% of its time\): compute"
# every compute-bound line computes at least 75% of its time
python3 - "$TMP/h100.out" <<'PY' && PASSES=$((PASSES + 1)) || { echo "FAIL why-shares"; FAILS=$((FAILS + 1)); }
import re, sys
for l in open(sys.argv[1]):
    m = re.match(r"  (\S+) +(.*?): compute ([0-9.]+) ms \(mean over ranks [0-9.]+ ms\), exposed comm ([0-9.]+) ms, idle ([0-9.]+) ms", l)
    if not m:
        continue
    c, x, i = map(float, m.group(3, 4, 5))
    t = c + x + i
    if m.group(2).startswith("compute-bound") != (c >= 0.75 * t):
        sys.exit(f"{m.group(1)}: '{m.group(2)}' with compute {c / t:.0%}")
PY

# The planner's notes, with and without --no-routing.
for opt in "" --no-routing; do
  "$ZEPSIM" compare --methods te-cp,zeppelin --nodes 4 --backend analytic --iterations 1 --quiet \
    --plot none $opt >"$TMP/out" 2>&1
  expect_out "planner$opt" "^planner \(each method's notes on the last iteration\):$" &&
    expect_out "planner$opt" "^  zeppelin +zeppelin: .*routing off"
done
"$ZEPSIM" compare --methods te-cp,zeppelin --nodes 4 --backend analytic --iterations 1 --quiet \
  --plot none --format json >"$TMP/out" 2>&1
expect_out planner-json '"planner: zeppelin: zeppelin: '

# A method that fails (wlb-llm's default layout needs 64 GPUs): its reason
# on its own line of stdout.
"$ZEPSIM" compare --methods te-cp,wlb-llm --nodes 1 --group 8 --context 16384 --iterations 1 \
  --backend analytic --quiet --plot none >"$TMP/fail.out" 2>"$TMP/fail.err"
rc=$?
if [ $rc -eq 1 ]; then PASSES=$((PASSES + 1)); else echo "FAIL fail-rc: exit $rc"; FAILS=$((FAILS + 1)); fi
cp "$TMP/fail.out" "$TMP/out"
expect_out fail-line "^  wlb-llm +failed: .{20,}"
if grep -q "see the error above" "$TMP/fail.out"; then echo "FAIL fail-above"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
# the line says what stderr says
reason=$(sed -n 's/^wlb-llm: zepsim: \(.\{20\}\).*/\1/p' "$TMP/fail.err")
if [ -n "$reason" ] && grep -qF "failed: $reason" "$TMP/fail.out"; then PASSES=$((PASSES + 1)); else
  echo "FAIL fail-same: stderr '$reason'"; FAILS=$((FAILS + 1)); fi
finish
