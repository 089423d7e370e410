# `zepsim bench sim` against SimGrid's floor (issue 33 item 3): on the
# SimGrid backend each row counts the transfers the run started (xfers,
# xfers_across), the floor measured for that many (floor_us, floor_s) and
# the ratio (x_floor), finite and positive in table, CSV and JSON; empty on
# the analytic backend and with --floor-runs 0; bad floor options exit 2.
# Tiny sizes; no timing is asserted.
. "$(dirname "$0")/lib.bash"
if ! command -v python3 >/dev/null 2>&1; then
  if [ "${CI:-}" = true ]; then echo "FAIL: python3 missing (scripts/setup installs it)"; exit 1; fi
  echo "SKIP bench_floor_ratio: python3 is not installed (scripts/setup installs it)"
  exit 77
fi
cat >"$TMP/check.py" <<'PY'
import csv, io, json, math, sys
fmt, want, path = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path, encoding="utf-8").read()
cols = ["xfers", "xfers_across", "floor_us", "floor_s", "x_floor"]
def bad_constant(c):
    raise ValueError("non-finite number " + c)
if fmt == "json":
    rows = json.loads(text, parse_constant=bad_constant)["rows"]
else:
    rows = list(csv.DictReader(io.StringIO(text)))
    for r in rows:
        for c in cols:
            r[c] = float(r[c]) if r[c] != "" else None
if not rows:
    sys.exit("no rows")
for r in rows:
    for c in cols:
        if c not in r:
            sys.exit("column %s missing" % c)
        v = r[c]
        if want == "empty":
            if v is not None:
                sys.exit("%s should be empty, is %r" % (c, v))
            continue
        if want == "counts" and c in ("floor_us", "floor_s", "x_floor"):
            if v is not None:
                sys.exit("%s should be empty without a floor, is %r" % (c, v))
            continue
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            sys.exit("%s is not a finite number: %r" % (c, v))
        if v < 0 or (v == 0 and c != "xfers_across"):
            sys.exit("%s is not positive: %r" % (c, v))
    if want == "floor":
        # x_floor is cpu_s / floor_s and floor_us is floor_s per transfer
        if r["xfers_across"] > r["xfers"]:
            sys.exit("more transfers across nodes than in all")
        if abs(r["floor_us"] * r["xfers"] * 1e-6 / r["floor_s"] - 1) > 0.05:
            sys.exit("floor_us x xfers != floor_s: %r" % r)
print("ok", len(rows))
PY
# check NAME FORMAT WANT: the last command's stdout ($TMP/doc) against the columns
check() {
  if python3 -I "$TMP/check.py" "$2" "$3" "$TMP/doc" >"$TMP/out" 2>&1; then PASSES=$((PASSES + 1)); else
    echo "FAIL $1: $(cat "$TMP/out")"; sed 's/^/    /' "$TMP/doc" | head -20; FAILS=$((FAILS + 1)); fi
}
SMALL=(bench sim --method te-cp --gpus 16 --fold off,on --runs 1 --floor-runs 1 --floor-transfers 20000)
for fmt in csv json; do
  if "$ZEPSIM" "${SMALL[@]}" --format "$fmt" >"$TMP/doc" 2>"$TMP/err"; then
    PASSES=$((PASSES + 1))
    check "floor-$fmt" "$fmt" floor
  else
    echo "FAIL floor-$fmt: exit $?"; sed 's/^/    /' "$TMP/err" | head -20; FAILS=$((FAILS + 1))
  fi
done
# the floor is measured once per GPU count (not per fold mode), inside and across nodes
grep -c "^bench floor: 16 GPUs, inside nodes: run 1/1 took" "$TMP/err" >"$TMP/out"
expect_out floor-once-16 "^1$"
grep -c "^bench floor: 16 GPUs, across nodes: run 1/1 took" "$TMP/err" >"$TMP/out"
expect_out floor-across-16 "^1$"
expect_rc floor-table 0 "$ZEPSIM" "${SMALL[@]/#16/32}"
expect_out floor-table "xfers +xfers_across +floor_us +floor_s +x_floor +vs_off_pct +shares_pp"
expect_out floor-table "^te-cp +32 +sim +on( +[0-9.]+){15} +[-+][0-9.]+ +[0-9.]+$"
expect_out floor-table "SimGrid's floor at 32 GPUs: [0-9.]+ us per transfer inside nodes"
# no floor: the counts stay, the floor columns are empty
"$ZEPSIM" bench sim --method zeppelin --gpus 16 --runs 1 --floor-runs 0 --format csv >"$TMP/doc" 2>/dev/null
check no-floor csv counts
# the analytic backend starts no SimGrid transfer
"$ZEPSIM" bench sim --method te-cp --gpus 16 --runs 1 --backend analytic --format json >"$TMP/doc" 2>/dev/null
check analytic json empty
# bad input
expect_rc bad-floor-runs 2 "$ZEPSIM" bench sim --floor-runs -1
expect_out bad-floor-runs "floor-runs"
expect_rc bad-floor-runs-big 2 "$ZEPSIM" bench sim --floor-runs 17
expect_rc bad-floor-width 2 "$ZEPSIM" bench sim --floor-width 0
expect_out bad-floor-width "floor-width"
expect_rc bad-floor-width-big 2 "$ZEPSIM" bench sim --floor-width 17
expect_rc bad-floor-xfers 2 "$ZEPSIM" bench sim --floor-transfers 0
expect_rc bad-floor-xfers-text 2 "$ZEPSIM" bench sim --floor-transfers many
expect_out bad-floor-xfers-text "floor-transfers"
finish
