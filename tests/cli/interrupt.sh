# End to end: an interrupt (SIGINT, SIGTERM) while a command writes files
# (issue 35 item 1). Before, `compare --timeline` and `simulate --timeline`
# died without a word and left their timeline's temporary file behind
# (hundreds of MB at 16 nodes). Now each removes what it was writing, says
# so in one line on stderr, and dies of the signal (exit 130 / 143). The
# signal goes to the zepsim process alone (as `kill PID` does), so the
# workers that write the timelines must be stopped by it; `experiment run`
# says how many points are stored, and a rerun resumes from there.
. "$(dirname "$0")/lib.bash"
case $ZEPSIM in /*) ;; *) ZEPSIM=$PWD/$ZEPSIM ;; esac

# interrupt NAME SIG WANT_RC DIR PATTERN CMD...: starts CMD in DIR, waits up
# to 300 s (a sanitizer build on a loaded machine plans slowly) until a
# file matching PATTERN exists in DIR (the write is under
# way), sends SIG to zepsim alone, and checks the exit status, the line,
# and that DIR holds no temporary file afterwards.
interrupt() {
  local name=$1 sig=$2 want=$3 dir=$4 pat=$5
  shift 5
  mkdir -p "$dir"
  (cd "$dir" && exec "$@") >"$TMP/$name.out" 2>"$TMP/$name.err" &
  local pid=$! n=0
  while [ $n -lt 3000 ] && ! compgen -G "$dir/$pat" >/dev/null; do
    sleep 0.1
    n=$((n + 1))
    kill -0 $pid 2>/dev/null || break
  done
  if ! compgen -G "$dir/$pat" >/dev/null; then
    echo "FAIL $name: no $pat appeared in $dir (did the command end early?)"
    sed 's/^/    /' "$TMP/$name.err" | head -5
    FAILS=$((FAILS + 1))
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    return
  fi
  kill -"$sig" $pid
  wait $pid
  local rc=$?
  if [ "$rc" -eq "$want" ]; then PASSES=$((PASSES + 1)); else
    echo "FAIL $name: exit $rc, expected $want"
    FAILS=$((FAILS + 1))
  fi
  if grep -q "^zepsim: interrupted (SIG$sig)" "$TMP/$name.err"; then PASSES=$((PASSES + 1)); else
    echo "FAIL $name: no 'zepsim: interrupted (SIG$sig)' line on stderr:"
    sed 's/^/    /' "$TMP/$name.err" | head -5
    FAILS=$((FAILS + 1))
  fi
  sleep 0.5 # a worker the signal did not reach would still be writing
  local left
  left=$(find "$dir" -name '*.tmp-*' | head -5)
  if [ -z "$left" ]; then PASSES=$((PASSES + 1)); else
    echo "FAIL $name: temporary files left: $left"
    FAILS=$((FAILS + 1))
  fi
}

SIM=(--nodes 4 --iterations 3 --quiet)
interrupt simulate-int INT 130 "$TMP/sim" '*.tmp-*' \
  "$ZEPSIM" simulate --method te-cp "${SIM[@]}" --timeline big.json
interrupt simulate-term TERM 143 "$TMP/simt" '*.tmp-*' \
  "$ZEPSIM" simulate --method te-cp "${SIM[@]}" --timeline big.json.gz
interrupt compare-int INT 130 "$TMP/cmp" '*.tmp-*' \
  "$ZEPSIM" compare --methods te-cp,zeppelin "${SIM[@]}" --timeline tl.json
interrupt compare-term TERM 143 "$TMP/cmpt" '*.tmp-*' \
  "$ZEPSIM" compare --methods te-cp,zeppelin "${SIM[@]}" --timeline tl.json
# a plan dump of 64 nodes (tens of MB), then `run` of it with a timeline
expect_rc plan 0 "$ZEPSIM" plan --method te-cp --nodes 8 --dump "$TMP/p.json"
interrupt run-int INT 130 "$TMP/run" '*.tmp-*' \
  "$ZEPSIM" run --backend sim "$TMP/p.json" --timeline t.json
interrupt dump-int INT 130 "$TMP/dump" '*.tmp-*' \
  "$ZEPSIM" plan --method zeppelin --nodes 128 --dump p.json

# experiment run: interrupted once a point is stored; the line counts the
# stored points, and the rerun runs only the rest. Small points (2 nodes,
# one iteration): the resume runs up to seven of them, which under the
# sanitizers on a loaded 2-core machine took most of the test's 600 s at
# 4 nodes and 3 iterations.
cat >"$TMP/spec.json" <<'JSON'
{"name": "intr", "title": "interrupt", "base": {"model": "llama-7b", "cluster": "cluster-a",
 "nodes": 2, "context": 262144, "iterations": 1, "backend": "sim"},
 "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8]},
 "series": [{"label": "TE CP", "method": "te-cp"}]}
JSON
mkdir -p "$TMP/exp"
# (in a subshell: a plain background command of a script ignores SIGINT)
(exec "$ZEPSIM" experiment run "$TMP/spec.json" --db "$TMP/exp/x.db") >"$TMP/exp.out" 2>"$TMP/exp.err" &
pid=$!
n=0
# the progress line after the first point (stderr is not a terminal)
until [ $n -ge 1200 ] || grep -q '^experiment: 1/8 points' "$TMP/exp.err"; do
  sleep 0.1
  n=$((n + 1))
done
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ]; then PASSES=$((PASSES + 1)); else echo "FAIL exp-rc: exit $rc"; FAILS=$((FAILS + 1)); fi
if grep -qE '^zepsim: interrupted \(SIGINT\): [1-7] of 8 points stored; rerun to resume$' "$TMP/exp.err"; then
  PASSES=$((PASSES + 1))
else
  echo "FAIL exp-line:"
  sed 's/^/    /' "$TMP/exp.err" | tail -3
  FAILS=$((FAILS + 1))
fi
stored=$(sed -n 's/^zepsim: interrupted (SIGINT): \([0-9]*\) of 8.*/\1/p' "$TMP/exp.err")
expect_rc exp-resume 0 "$ZEPSIM" experiment run "$TMP/spec.json" --db "$TMP/exp/x.db" --quiet &&
  expect_out exp-resume "${stored:-x} already stored"
finish
