# End to end: output a user can trust (issue 18). The node count comes
# from the cluster file unless --nodes is given, and the header says
# which; compare ends with a verdict, each method's slowest-rank reason,
# tokens per iteration and peak memory per GPU; a method out of memory
# names the options that make it fit; long runs report progress lines in
# a log (off with --quiet); simulate and compare share their columns,
# which `zepsim list columns` and docs/output.md document alike; a
# timeline above 200 MB gets a warning naming --timeline-ranks/-layers.
. "$(dirname "$0")/lib.bash"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SMALL=(--backend analytic --group 8 --context 16384 --iterations 2)

# ---- nodes: the cluster file's count unless --nodes ----
sed 's/"nodes": 16/"nodes": 2/; s/"name": "cluster-a"/"name": "my-cluster"/' \
  "$ROOT/models/presets/cluster-cluster-a.json" >"$TMP/my.json"
expect_rc nodes-file 0 "$ZEPSIM" compare --cluster "$TMP/my.json" --methods te-cp "${SMALL[@]}" --plot none --quiet
expect_out nodes-file "^# model llama-7b, cluster .*my\.json x 2 nodes \(the cluster's own count\)"
expect_rc nodes-file-csv 0 "$ZEPSIM" compare --cluster "$TMP/my.json" --methods te-cp "${SMALL[@]}" --plot none --quiet --format csv
expect_out nodes-file-csv "^llama-7b,.*my\.json,2,cluster,16,arxiv,te-cp,"
expect_rc nodes-given 0 "$ZEPSIM" simulate --cluster "$TMP/my.json" --nodes 1 --method te-cp "${SMALL[@]}" --quiet
expect_out nodes-given "x 1 nodes \(--nodes\)"
expect_rc nodes-show 0 "$ZEPSIM" show cluster "$TMP/my.json"
expect_out nodes-show "^nodes +2$"
expect_out nodes-show "^nodes_from +cluster file$"
expect_rc nodes-plan 0 "$ZEPSIM" plan --cluster "$TMP/my.json" --method te-cp --group 8 --context 16384 --format csv
expect_out nodes-plan "^ranks,16,GPUs,$"
# the default study is cluster-a's own 16 nodes
expect_rc nodes-default 0 "$ZEPSIM" plan --method te-cp --format csv
expect_out nodes-default "^ranks,128,GPUs,$"

# ---- compare: verdict, why, tokens per iteration, peak memory ----
expect_rc verdict 0 "$ZEPSIM" compare --methods te-cp,usp,zeppelin --nodes 1 "${SMALL[@]}" --plot none --quiet
expect_out verdict "^method +tokens_per_s +tokens_per_iter +iter_ms +speedup +mfu_pct +busy_pct +exposed_pct +idle_pct +max_nic_pct +peak_mem_gib +attn_imbalance +plan_ms$"
expect_out verdict "^verdict: (te-cp|usp|zeppelin) is fastest at [0-9]+ tokens/s, [0-9.]+% ahead of (te-cp|usp|zeppelin) \([0-9]+\)"
expect_out verdict "^why \(each method's slowest rank in the last iteration\):$"
for m in te-cp usp zeppelin; do
  expect_out "why-$m" "^  $m +(compute-bound|communication-bound|waiting on other ranks)"
done
expect_rc verdict-json 0 "$ZEPSIM" compare --methods te-cp,usp,zeppelin --nodes 1 "${SMALL[@]}" --plot none --quiet --format json
expect_out verdict-json '"verdict": \{"fastest": "(te-cp|usp|zeppelin)", "tokens_per_s": [0-9.]+, "runner_up": "[a-z-]+", "margin_pct": [0-9.]+'
expect_out verdict-json '"method": "usp", .*"tokens_per_iter": [0-9.]+, .*"peak_mem_gib": [0-9.]+, .*"why": "[a-z]'
# numbers bare, units in their own object, every key present (issue 35 item 6)
expect_out verdict-json '"units": \{.*"tokens_per_s": "tokens/s", .*"iter_ms": "ms"'
expect_out verdict-json '"iter_ms": [0-9]+\.[0-9]{5,}, '
expect_out verdict-json '^ "notes": \['


# ---- memory: the options that make it fit ----
# A usage error that every method hits (a group larger than the GPUs) exits
# 2 with the error once, before any table; a method that does not fit does
# not count as one (the table says how to make it fit, exit 1: below).
expect_rc group-all 2 "$ZEPSIM" compare --nodes 1 --methods te-cp,zeppelin --backend analytic --iterations 1 --plot none --quiet
expect_out group-all "^zepsim: 8 GPUs cannot be cut into context groups of 16: --group: use a group size"
if [ "$(grep -c 'cannot be cut' "$TMP/out")" != 1 ] || grep -q '^method' "$TMP/out"; then
  echo "FAIL group-all-once: the error more than once, or a table"
  FAILS=$((FAILS + 1))
else
  PASSES=$((PASSES + 1))
fi
expect_rc fit-70b 1 "$ZEPSIM" compare --model llama3-70b --methods te-cp --backend analytic --iterations 1 --plot none --quiet
expect_out fit-70b "^te-cp: zepsim: .*do not fit one GPU: llama3-70b: it fits with --zero 3 \("
expect_rc fit-70b-runs 0 "$ZEPSIM" simulate --model llama3-70b --method te-cp --zero 3 --backend analytic --iterations 1 --quiet
expect_rc fit-none 2 "$ZEPSIM" simulate --model llama3-70b --method te-cp --nodes 2 --backend analytic --iterations 1 --quiet
expect_out fit-none "out of GPU memory, and neither full recomputation, ZeRO 2-3, tp 2-8 nor ZeRO 3 with tp makes it fit: use more nodes"
expect_rc fit-recompute 2 "$ZEPSIM" simulate --method te-cp --recompute none --nodes 2 --backend analytic --iterations 1 --quiet
expect_out fit-recompute "it fits with --recompute full"
expect_rc fit-plan 2 "$ZEPSIM" plan --model llama3-70b --method te-cp
expect_out fit-plan "it fits with --zero 3"
# not a memory failure: no advice
expect_rc not-memory 2 "$ZEPSIM" simulate --method te-cp --opt cp=3 --nodes 2 --backend analytic --iterations 1 --quiet
if grep -q "it fits with" "$TMP/out"; then echo "FAIL not-memory: advice"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi

# ---- progress in a log: a line per finished method / iteration, --quiet silences ----
"$ZEPSIM" compare --methods te-cp,zeppelin --nodes 1 "${SMALL[@]}" --plot none >"$TMP/stdout" 2>"$TMP/log"
cp "$TMP/log" "$TMP/out"
expect_out progress-compare "^compare: 1/2 methods done \((te-cp|zeppelin) finished\)"
expect_out progress-compare "^compare: 2/2 methods done \((te-cp|zeppelin) finished\); [0-9]+ s$"
"$ZEPSIM" simulate --method zeppelin --nodes 1 --backend analytic --group 8 --context 16384 --iterations 3 >/dev/null 2>"$TMP/log"
cp "$TMP/log" "$TMP/out"
expect_out progress-simulate "^simulate zeppelin: iteration 1/3 done; [0-9]+ s"
expect_out progress-simulate "^simulate zeppelin: iteration 3/3 done; [0-9]+ s$"
"$ZEPSIM" compare --methods te-cp,zeppelin --nodes 1 "${SMALL[@]}" --plot none --quiet >/dev/null 2>"$TMP/log"
"$ZEPSIM" simulate --method zeppelin --nodes 1 "${SMALL[@]}" --quiet >/dev/null 2>>"$TMP/log"
if [ -s "$TMP/log" ]; then echo "FAIL quiet: $(head -2 "$TMP/log")"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi

# ---- the same columns everywhere, documented in one table ----
"$ZEPSIM" compare --methods te-cp,zeppelin --nodes 1 "${SMALL[@]}" --plot none --quiet --format csv >"$TMP/compare.csv"
"$ZEPSIM" simulate --method usp --nodes 1 "${SMALL[@]}" --quiet --format csv >"$TMP/simulate.csv"
if [ "$(head -1 "$TMP/compare.csv")" = "$(head -1 "$TMP/simulate.csv")" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL same-columns: compare and simulate CSV headers differ"; FAILS=$((FAILS + 1)); fi
cols=$("$ZEPSIM" list columns --format csv | tail -n +2 | cut -d, -f1 | tr '\n' ',')
if [ "$(head -1 "$TMP/compare.csv")," = "$cols" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL list-columns: '$cols'"; FAILS=$((FAILS + 1)); fi
# docs/output.md's table lists every column, with its unit, in order
doc=$(sed -n '/^| column | unit | kind | meaning |/,/^$/p' "$ROOT/docs/output.md" | tail -n +3 | cut -d'|' -f2,3 |
  sed 's/^ *`\([a-z0-9_]*\)` *| *\(.*[^ ]\) *$/\1|\2/; s/^ *`\([a-z0-9_]*\)` *| *$/\1|/')
want=$("$ZEPSIM" list columns --format json | grep -o '"column": "[a-z0-9_]*", "unit": "[^"]*"' |
  sed 's/"column": "\([a-z0-9_]*\)", "unit": "\([^"]*\)"/\1|\2/')
if [ "$doc" = "$want" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL docs-columns: docs/output.md and \`zepsim list columns\` differ"; diff <(echo "$doc") <(echo "$want") | head
  FAILS=$((FAILS + 1)); fi
# rows of several runs concatenate: configuration columns on every row
tail -n +2 "$TMP/simulate.csv" >>"$TMP/compare.csv"
n=$(cut -d, -f7 "$TMP/compare.csv" | tail -n +2 | tr '\n' ' ')
if [ "$n" = "te-cp zeppelin usp " ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL concat: methods '$n'"; FAILS=$((FAILS + 1)); fi

# the results database under the same names: the view `points`
cat >"$TMP/tiny.json" <<'JSON'
{"name": "tiny", "title": "tiny", "base": {"nodes": 1, "group": 8, "context": 16384, "iterations": 1,
 "backend": "analytic"}, "series": [{"label": "TE CP", "method": "te-cp"}],
 "plot": {"kind": "bars", "metric": "tokens_per_s"}}
JSON
expect_rc db-run 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/r.db"
# experiment run in a log: progress lines (first and last point), none with --quiet
expect_out progress-experiment "^experiment: 0/1 points, 0 failed; [0-9]+ s$"
expect_out progress-experiment "^experiment: 1/1 points, 0 failed; [0-9]+ s$"
expect_rc experiment-quiet 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/q.db" --quiet
if grep -q "^experiment:" "$TMP/out"; then echo "FAIL experiment-quiet: progress"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
expect_rc db-points 0 "$ZEPSIM" db query "SELECT * FROM points" --db "$TMP/r.db" --format csv
known=",$("$ZEPSIM" list columns --format csv | tail -n +2 | cut -d, -f1 | tr '\n' ','),spec,"
for c in $(head -1 "$TMP/out" | tr ',' ' '); do
  case "$known" in *",$c,"*) PASSES=$((PASSES + 1)) ;; *) echo "FAIL db-points: column '$c'"; FAILS=$((FAILS + 1)) ;; esac
done
expect_rc db-units 0 "$ZEPSIM" db query \
  "SELECT p.iter_ms = r.iter_time * 1000 AND p.mfu_pct = r.mfu * 100 AS same FROM points p JOIN results r USING (seed)" \
  --db "$TMP/r.db" --format csv
expect_out db-units "^1$"

# ---- a timeline above 200 MB (every rank asked for; by default it keeps
# 8 ranks: tests/cli/timeline_size.sh): a warning with the options that
# shrink it ----
expect_rc tl-big 0 "$ZEPSIM" simulate --method te-cp --backend analytic --nodes 20 --group 16 \
  --context 65536 --iterations 1 --quiet --timeline "$TMP/big.json.gz" --timeline-ranks all
expect_out tl-big "^zepsim: warning: timeline .*big\.json\.gz is 2[0-9][0-9] MB of JSON: chrome://tracing stops at 256 MB .* --timeline-ranks 0,5,17-20 / --timeline-layers A-B$"
rm -f "$TMP/big.json.gz"
expect_rc tl-small 0 "$ZEPSIM" simulate --method te-cp --backend analytic --nodes 1 --group 8 \
  --context 16384 --iterations 1 --quiet --timeline "$TMP/small.json.gz"
if grep -q "warning: timeline" "$TMP/out"; then echo "FAIL tl-small: warned"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
# compare runs each iteration of each method in a worker of its own and
# adds them in order: --jobs 1 and --jobs 3 give the same table (host times
# aside), a method that fails (wlb-llm's default layout needs 64 GPUs)
# included.
for j in 1 3; do
  expect_rc split-j$j 1 "$ZEPSIM" compare --methods te-cp,wlb-llm,zeppelin,hybrid-dp --nodes 1 \
    --group 8 --context 16384 --iterations 3 --plot none --format csv --quiet --jobs $j
  cp "$TMP/out" "$TMP/split$j.csv"
done
python3 - "$TMP/split1.csv" "$TMP/split3.csv" <<'PY' && PASSES=$((PASSES + 1)) || {
import csv, sys
def rows(p):
    out = []
    # stderr is in the file too: the failed method's error and the notes
    for r in csv.DictReader(l for l in open(p) if not l.startswith(("wlb-llm: ", "zepsim: "))):
        r.pop("wall_s"); r.pop("plan_ms"); out.append(r)
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
ok = a == b and [r["status"] for r in a] == ["ok", "failed", "ok", "ok"]
sys.exit(0 if ok else 1)
PY
  echo "FAIL split: --jobs 1 and --jobs 3 tables differ"; FAILS=$((FAILS + 1)); }
# simulate runs its iterations in workers too (--jobs): the same figures
# and the same last iteration (per-rank table included), as JSON.
for j in 1 2; do
  expect_rc sim-split-j$j 0 "$ZEPSIM" simulate --method zeppelin --nodes 2 --iterations 3 --ranks \
    --format json --quiet --jobs $j
  cp "$TMP/out" "$TMP/sim$j.json"
done
python3 - "$TMP/sim1.json" "$TMP/sim2.json" <<'PY' && PASSES=$((PASSES + 1)) || {
import json, sys
def doc(p):
    text = "".join(l for l in open(p) if not l.startswith("zepsim: note"))
    d = json.loads(text)
    for r in d["results"]:
        r.pop("wall_s"); r.pop("plan_ms")
    return d
a, b = doc(sys.argv[1]), doc(sys.argv[2])
sys.exit(0 if a == b and len(a["ranks"]) == 16 else 1)
PY
  echo "FAIL sim-split: --jobs 1 and --jobs 2 differ"; FAILS=$((FAILS + 1)); }
expect_rc sim-jobs-bad 2 "$ZEPSIM" simulate --jobs 0
finish
