# End to end: `zepsim experiment run|report|list` and `zepsim db`, including
# a run killed mid-way and resumed (nothing lost, nothing duplicated),
# shards merged, and bad specs rejected with file:line:col.
. "$(dirname "$0")/lib.bash"

count() { # count DB [WHERE]
  "$ZEPSIM" db query "SELECT count(*) AS n FROM results ${2:-}" --db "$1" --format csv | tail -1
}

cat >"$TMP/tiny.json" <<'SPEC'
{
  "name": "tiny",
  "title": "Tiny CLI figure",
  "base": {"model": "llama-550m", "cluster": "cluster-a", "nodes": 2, "context": 32768,
           "iterations": 1, "backend": "analytic"},
  "sweep": {"trace": ["arxiv", "github"]},
  "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Zeppelin", "method": "zeppelin"}],
  "baseline": "TE CP",
  "plot": {"metric": "speedup"},
  "paper": [{"what": "mean speedup", "series": "Zeppelin", "metric": "speedup", "value": 2.8,
             "source": "Fig. 8"}]
}
SPEC

expect_rc help 0 "$ZEPSIM" experiment --help && expect_out help "experiment run SPEC"
expect_rc no-sub 2 "$ZEPSIM" experiment
expect_rc bad-sub 2 "$ZEPSIM" experiment frob && expect_out bad-sub "unknown subcommand 'frob'"
expect_rc run-no-spec 2 "$ZEPSIM" experiment run
expect_rc bad-jobs 2 "$ZEPSIM" experiment run "$TMP/tiny.json" --jobs 0
expect_rc bad-shard 2 "$ZEPSIM" experiment run "$TMP/tiny.json" --shard 3/2 --db "$TMP/x.db"
expect_out bad-shard "bad shard '3/2'"
expect_rc missing-spec 2 "$ZEPSIM" experiment run "$TMP/nope.json" --db "$TMP/x.db"
printf '{\n  "name": "bad",\n  "series": [{"label": "A",\n    "method": "te-cpp"}]\n}\n' >"$TMP/bad.json"
expect_rc bad-method 2 "$ZEPSIM" experiment run "$TMP/bad.json" --db "$TMP/x.db"
expect_out bad-method "^zepsim: unknown method 'te-cpp': .*bad.json:4:5: series\[0\]\.method: did you mean 'te-cp'\? use one of"

# run, rerun (skips), report
expect_rc run 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/t.db" --jobs 2
expect_out run "4 points; 0 already stored, 0 duplicate configurations, 4 ran, 0 failed"
expect_rc rerun 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/t.db" --jobs 2
expect_out rerun "4 already stored.* 0 ran"
[ "$(count "$TMP/t.db")" = 4 ] && PASSES=$((PASSES + 1)) || { echo "FAIL rows: $(count "$TMP/t.db")"; FAILS=$((FAILS + 1)); }
expect_rc list-points 0 "$ZEPSIM" experiment list "$TMP/tiny.json" --db "$TMP/t.db"
expect_out list-points "github +Zeppelin +zeppelin +ok"
expect_rc report 0 "$ZEPSIM" experiment report "$TMP/tiny.json" --db "$TMP/t.db" --out "$TMP/rep"
for row in "| arxiv | TE CP |" "| arxiv | Zeppelin |" "| github | TE CP |" "| github | Zeppelin |" \
           "| mean speedup | Zeppelin |" "| 2.80x |"; do
  if grep -qF -- "$row" "$TMP/rep/tiny.md"; then PASSES=$((PASSES + 1)); else
    echo "FAIL report lacks '$row'"; FAILS=$((FAILS + 1)); fi
done
if command -v gnuplot >/dev/null; then
  for f in tiny.png tiny.svg; do
    if [ -s "$TMP/rep/$f" ]; then PASSES=$((PASSES + 1)); else echo "FAIL no $f"; FAILS=$((FAILS + 1)); fi
  done
fi
cp "$TMP/rep/tiny.md" "$TMP/first.md"
expect_rc report-again 0 "$ZEPSIM" experiment report "$TMP/tiny.json" --db "$TMP/t.db" --out "$TMP/rep"
if cmp -s "$TMP/first.md" "$TMP/rep/tiny.md"; then
  PASSES=$((PASSES + 1)); else echo "FAIL report not reproducible"; FAILS=$((FAILS + 1)); fi
expect_rc report-no-plot 0 "$ZEPSIM" experiment report "$TMP/tiny.json" --db "$TMP/t.db" --out "$TMP/rep2" --no-plot
expect_out report-no-plot "not requested"
expect_rc report-no-db 1 "$ZEPSIM" experiment report "$TMP/tiny.json" --db "$TMP/none.db"

# db
expect_rc schema 0 "$ZEPSIM" db schema && expect_out schema "CREATE TABLE IF NOT EXISTS results"
expect_rc query 0 "$ZEPSIM" db query "SELECT method, trace FROM results ORDER BY method, trace" --db "$TMP/t.db"
expect_out query "te-cp +arxiv"
expect_rc query-write 2 "$ZEPSIM" db query "DELETE FROM results" --db "$TMP/t.db"
expect_out query-write "would change the database"
expect_rc query-bad 2 "$ZEPSIM" db query "SELEKT 1" --db "$TMP/t.db"
expect_rc db-bad-sub 2 "$ZEPSIM" db frob

# shards + merge equal one run
expect_rc shard1 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/s1.db" --shard 1/2
expect_out shard1 "2 in shard 1/2"
expect_rc shard2 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/s2.db" --shard 2/2
expect_rc merge 0 "$ZEPSIM" db merge "$TMP/m.db" "$TMP/s1.db" "$TMP/s2.db"
expect_out merge "4 rows copied, 0 already present"
expect_rc merge-again 0 "$ZEPSIM" db merge "$TMP/m.db" "$TMP/s1.db"
expect_out merge-again "0 rows copied, 2 already present"
a=$("$ZEPSIM" db query "SELECT key, tokens_per_s, iter_time FROM results ORDER BY key" --db "$TMP/m.db" --format csv)
b=$("$ZEPSIM" db query "SELECT key, tokens_per_s, iter_time FROM results ORDER BY key" --db "$TMP/t.db" --format csv)
if [ "$a" = "$b" ]; then PASSES=$((PASSES + 1)); else echo "FAIL merged shards differ from one run"; FAILS=$((FAILS + 1)); fi

# kill a run after some points, rerun: all points, each once
seeds=$(seq -s, 1 40)
cat >"$TMP/slow.json" <<SPEC
{
  "name": "slow",
  "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 4, "context": 262144,
           "iterations": 1, "backend": "analytic"},
  "sweep": {"seed": [$seeds]},
  "series": [{"label": "TE CP", "method": "te-cp"}]
}
SPEC
"$ZEPSIM" experiment run "$TMP/slow.json" --db "$TMP/k.db" --jobs 1 >"$TMP/killed.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -f "$TMP/k.db" ] && [ "$(count "$TMP/k.db" 2>/dev/null)" -ge 2 ] 2>/dev/null && break
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$(count "$TMP/k.db")
echo "killed run stored $before of 40 points"
if [ "$before" -ge 2 ] && [ "$before" -lt 40 ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL kill: $before rows stored before the kill (want 2..39)"; FAILS=$((FAILS + 1)); fi
expect_rc resume 0 "$ZEPSIM" experiment run "$TMP/slow.json" --db "$TMP/k.db" --jobs 2
expect_out resume "40 points; $before already stored, 0 duplicate configurations, $((40 - before)) ran, 0 failed"
[ "$(count "$TMP/k.db")" = 40 ] && PASSES=$((PASSES + 1)) || { echo "FAIL resumed rows"; FAILS=$((FAILS + 1)); }
n=$("$ZEPSIM" db query "SELECT count(DISTINCT seed) FROM results" --db "$TMP/k.db" --format csv | tail -1)
[ "$n" = 40 ] && PASSES=$((PASSES + 1)) || { echo "FAIL distinct seeds $n"; FAILS=$((FAILS + 1)); }

finish
