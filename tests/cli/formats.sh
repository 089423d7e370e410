# Every command's --format json and --format csv output parses with real
# parsers (issue 18): Python's json module (strict: no NaN or Infinity, one
# document) and csv module (one header, every row as wide as it, no
# repeated column). Numbers are JSON numbers, never strings that look like
# numbers; failed values are null with a status and an error. python3 is
# one of the packages scripts/setup installs; where it is missing the test
# skips, except in CI (CI=true), where that is a failure.
. "$(dirname "$0")/lib.bash"
if ! command -v python3 >/dev/null 2>&1; then
  if [ "${CI:-}" = true ]; then echo "FAIL: python3 missing (scripts/setup installs it)"; exit 1; fi
  echo "SKIP formats: python3 is not installed (scripts/setup installs it)"
  exit 77
fi
REF="$SHARED/reference"
cat >"$TMP/check.py" <<'PY'
import csv, json, re, sys
fmt, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
numlike = re.compile(r"^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
def bad_constant(c):
    raise ValueError("non-finite number " + c)
def walk(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, where + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk(x, "%s[%d]" % (where, i))
    elif isinstance(v, str) and numlike.match(v):
        raise ValueError("a number as a string at %s: %r" % (where, v))
if fmt == "json":
    doc = json.loads(text, parse_constant=bad_constant)
    if not isinstance(doc, dict) or "zepsim" not in doc:
        raise ValueError("not a zepsim document")
    walk(doc, "$")
    rows = [r for v in doc.values() if isinstance(v, list) for r in v if isinstance(r, dict)]
    for r in rows:  # a failed row says why and has no figures
        if r.get("status") == "failed":
            if not r.get("error"):
                raise ValueError("failed row without an error")
            if r.get("tokens_per_s") is not None:
                raise ValueError("failed row with a figure")
    print("json ok: %d keys, %d rows" % (len(doc), len(rows)))
else:
    rows = list(csv.reader(text.splitlines(), strict=True))
    if not rows:
        raise ValueError("empty CSV")
    head = rows[0]
    if len(set(head)) != len(head):
        raise ValueError("repeated column in " + repr(head))
    for i, r in enumerate(rows[1:], 2):
        if len(r) != len(head):
            raise ValueError("line %d has %d fields, the header %d" % (i, len(r), len(head)))
    print("csv ok: %d columns, %d rows" % (len(head), len(rows) - 1))
PY
# check NAME FORMAT CMD...: CMD's stdout parses as FORMAT (and CMD exits
# $WANT, 0 unless set)
check() {
  local name="$1" fmt="$2" rc=0
  shift 2
  "$@" --format "$fmt" >"$TMP/doc" 2>"$TMP/err" || rc=$?
  if [ "$rc" -ne "${WANT:-0}" ]; then
    echo "FAIL $name-$fmt: exit $rc: $*"; sed 's/^/    /' "$TMP/err" | head -5; FAILS=$((FAILS + 1)); return
  fi
  if python3 -I "$TMP/check.py" "$fmt" "$TMP/doc" >"$TMP/out" 2>&1; then PASSES=$((PASSES + 1)); else
    echo "FAIL $name-$fmt: $*"; tail -3 "$TMP/out" | sed 's/^/    /'; head -c 600 "$TMP/doc" | sed 's/^/    /'
    FAILS=$((FAILS + 1)); fi
}
both() { local n="$1"; shift; check "$n" json "$@"; check "$n" csv "$@"; }

SMALL=(--backend analytic --nodes 1 --group 8 --context 16384 --iterations 1 --quiet)
both show-model "$ZEPSIM" show model llama-7b
both show-gpu "$ZEPSIM" show gpu h100-sxm
both show-cluster "$ZEPSIM" show cluster cluster-a --nodes 2
for l in models gpus clusters columns; do both "list-$l" "$ZEPSIM" list "$l"; done
both cost-attn "$ZEPSIM" cost attention --len 8192 --cp 4
both cost-gemm "$ZEPSIM" cost gemm --model llama-7b --len 4096
both cost-coll "$ZEPSIM" cost collective --cluster cluster-a --nodes 2 --op all-reduce --bytes 64M --gpus 16
both cost-p2p "$ZEPSIM" cost p2p --cluster cluster-a --nodes 2 --src 0 --dst 9 --bytes 1M
both trace-stats "$ZEPSIM" trace stats arxiv --n 2000
both trace-batches "$ZEPSIM" trace batches arxiv --budget 262144 --n 3
both trace-presets "$ZEPSIM" trace presets
both zeppelin "$ZEPSIM" zeppelin thresholds --model llama-7b --cluster cluster-a
both simulate "$ZEPSIM" simulate --method zeppelin "${SMALL[@]}" --ranks
# one method fails (WLB-LLM's default layout needs 64 GPUs), one runs: the
# failed row has nulls, status failed and its error; the exit status is 1
WANT=1 both compare "$ZEPSIM" compare --methods te-cp,wlb-llm "${SMALL[@]}" --plot none
"$ZEPSIM" compare --methods te-cp,wlb-llm "${SMALL[@]}" --plot none --format json >"$TMP/doc.json" \
  2>/dev/null
if grep -qE '"method": "wlb-llm", .*"status": "failed", "error": "[^"]+", "tokens_per_s": null' "$TMP/doc.json"
then PASSES=$((PASSES + 1)); else echo "FAIL failed-row: $(grep wlb-llm "$TMP/doc.json")"; FAILS=$((FAILS + 1)); fi
both compare-ok "$ZEPSIM" compare --methods te-cp,zeppelin,usp "${SMALL[@]}" --plot none
both plan "$ZEPSIM" plan --method te-cp --nodes 1 --group 8 --context 16384 --dump "$TMP/plan.json"
both run "$ZEPSIM" run "$TMP/plan.json" --ranks
both hw-check "$ZEPSIM" hw run "$TMP/plan.json" --check-only
"$ZEPSIM" run "$TMP/plan.json" --timeline "$TMP/t.json" >/dev/null 2>&1
both timeline "$ZEPSIM" timeline compare "$TMP/t.json" "$TMP/t.json"
if [ -r "$REF/h200-nccl-tests/all_reduce-2-gpus.txt" ]; then
  both calib-fit "$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt -o "$TMP/c.json"
  both calib-show "$ZEPSIM" calib show "$TMP/c.json"
  both calib-predict "$ZEPSIM" calib predict --calib "$TMP/c.json" --sizes 1M,64M
  both validate "$ZEPSIM" validate --against "$REF"/h200-nccl-tests/*.txt --holdout gpus=2 --plot none
fi
both bench-plan "$ZEPSIM" bench plan --traces arxiv --nodes 1 --tokens 65536 --reps 1


cat >"$TMP/tiny.json" <<'JSON'
{"name": "tiny", "title": "tiny", "base": {"nodes": 1, "group": 8, "context": 16384, "iterations": 1,
 "backend": "analytic"}, "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "WLB", "method": "wlb-llm"}],
 "plot": {"kind": "bars", "metric": "tokens_per_s"}}
JSON
"$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/r.db" >/dev/null 2>&1
both db-query "$ZEPSIM" db query "SELECT method, status, error, seed, tokens_per_s, iter_time FROM results" --db "$TMP/r.db"
both experiment-points "$ZEPSIM" experiment list "$TMP/tiny.json" --db "$TMP/r.db"
both experiment-list "$ZEPSIM" experiment list --dir "$(dirname "$0")/../../experiments/specs"

finish
