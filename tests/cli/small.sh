# End to end: the small things a new user trips on (issue 35 item 7), each
# as the issue found it:
# - `--methods "te-cp, zeppelin"`: "unknown method ' zeppelin'";
# - `zepsim list methods` and `list specs`: "unknown list";
# - a spec name with a typo: "cannot open file", no suggestion;
# - a folder given as a file: "read error: Is a directory", exit 1;
# - an nccl-tests log given to --calib: "malformed JSON ... near '$'";
# - `--context 256K`: "bad value";
# - `show model` printed `max_tokens_per_gpu 0` without saying why;
# - `run` replayed on the analytic backend and `simulate` on SimGrid, and
#   `run --quiet` was an unknown option.
. "$(dirname "$0")/lib.bash"
REF="$SHARED/reference"
SMALL=(--nodes 1 --group 8 --context 16384 --iterations 1 --backend analytic --quiet --plot none)

expect_rc methods-blanks 0 "$ZEPSIM" compare --methods "te-cp, zeppelin" "${SMALL[@]}" &&
  expect_out methods-blanks "^zeppelin +[0-9]+" && expect_out methods-blanks "^te-cp +[0-9]+"
expect_rc list-methods 0 "$ZEPSIM" list methods && expect_out list-methods "^zeppelin +" &&
  expect_out list-methods "^auto +"
expect_rc list-methods-json 0 "$ZEPSIM" list methods --format json &&
  expect_out list-methods-json '"name": "te-cp"'
expect_rc list-specs 0 "$ZEPSIM" list specs && expect_out list-specs "zeppelin-fig8\.json +[0-9]+ "
expect_rc spec-typo 2 "$ZEPSIM" experiment run zeppelin-fig88 --db "$TMP/x.db" &&
  expect_out spec-typo "no such spec file or spec name: zeppelin-fig88: did you mean 'zeppelin-fig8'\? \`zepsim list specs\`"
if [ -e "$TMP/x.db" ]; then echo "FAIL spec-typo-db: a database was made"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
mkdir -p "$TMP/folder"
expect_rc dir-model 2 "$ZEPSIM" show model "$TMP/folder" &&
  expect_out dir-model "a folder where a file is expected: .*folder: give a file, not a folder"
expect_rc dir-trace 2 "$ZEPSIM" trace stats "$TMP/folder"
expect_rc dir-calib 2 "$ZEPSIM" calib show "$TMP/folder"
expect_rc dir-plan 2 "$ZEPSIM" run --backend analytic "$TMP/folder"
if [ -f "$REF/h200-nccl-tests/all_gather-2-gpus.txt" ]; then
  expect_rc log-as-calib 2 "$ZEPSIM" calib show "$REF/h200-nccl-tests/all_gather-2-gpus.txt" &&
    expect_out log-as-calib "a measurement file \(nccl-tests log, kernel CSV or TSV\), not a calibration: .*fit it first: \`zepsim calib fit .*all_gather-2-gpus.txt -o OUT.calib.json\`"
  expect_rc log-as-calib-compare 1 "$ZEPSIM" compare --methods te-cp "${SMALL[@]}" \
    --calib "$REF/h200-nccl-tests/all_gather-2-gpus.txt" &&
    expect_out log-as-calib-compare "te-cp +failed: a measurement file .*fit it first"
fi
expect_rc context-k 0 "$ZEPSIM" simulate --method te-cp --nodes 1 --group 8 --context 64K \
  --iterations 1 --backend analytic --quiet && expect_out context-k "^# context 65536 tokens per 8-GPU group"
expect_rc context-bad 2 "$ZEPSIM" simulate --method te-cp --context 64X --quiet
expect_rc context-big 2 "$ZEPSIM" simulate --method te-cp --context 99999999G --quiet
expect_rc max-tokens-0 0 "$ZEPSIM" show model llama-7b &&
  expect_out max-tokens-0 "^max_tokens_per_gpu +0 tokens: none fit, the model state \([0-9.]+ GiB\) leaves no room .*--zero 2\|3"
expect_rc max-tokens 0 "$ZEPSIM" show model llama-7b --dp 8 --zero 3 &&
  expect_out max-tokens "^max_tokens_per_gpu +[1-9][0-9]* tokens$"
# run and simulate: one default backend (the --help texts and the headers
# agree), and --quiet in both, silencing the progress lines on stderr
def_sim=$("$ZEPSIM" simulate --help | grep -A4 -- '^  --backend' | grep -o '(default [a-z]*' | head -1)
def_run=$("$ZEPSIM" run --help | grep -A4 -- '^  --backend' | grep -o '(default [a-z]*' | head -1)
if [ -n "$def_sim" ] && [ "$def_sim" = "$def_run" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL default-backend-help: simulate '$def_sim', run '$def_run'"; FAILS=$((FAILS + 1)); fi
PT=(--method te-cp --nodes 1 --group 8 --context 16384)
expect_rc default-plan 0 "$ZEPSIM" plan "${PT[@]}" --dump "$TMP/plan.json"
expect_rc default-simulate 0 "$ZEPSIM" simulate "${PT[@]}" --iterations 1 --quiet &&
  expect_out default-simulate "^# context .*, backend sim, "
expect_rc default-run 0 "$ZEPSIM" run "$TMP/plan.json" --quiet &&
  expect_out default-run "^# .*plan\.json: method te-cp, .*, backend sim$"
for cmd in run simulate; do
  if [ $cmd = run ]; then args=("$TMP/plan.json"); else args=("${PT[@]}" --iterations 1); fi
  "$ZEPSIM" $cmd "${args[@]}" >/dev/null 2>"$TMP/log"
  cp "$TMP/log" "$TMP/out"
  expect_out "progress-$cmd" "^(run|simulate te-cp): .*; [0-9]+ s$"
  expect_rc "quiet-$cmd-rc" 0 "$ZEPSIM" $cmd "${args[@]}" --quiet
  "$ZEPSIM" $cmd "${args[@]}" --quiet >/dev/null 2>"$TMP/log"
  if [ -s "$TMP/log" ]; then echo "FAIL quiet-$cmd: $(head -2 "$TMP/log")"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
  expect_rc "quiet-$cmd-help" 0 "$ZEPSIM" $cmd --help && expect_out "quiet-$cmd-help" "^  --quiet +no progress on stderr"
done
finish
