# End to end: every input is bounded (issue 21 items 3-5). Files larger
# than ZEPSIM_MAX_INPUT_MB, /dev/zero included, are refused; a plan file
# cannot ask for unbounded work; no command reports inf or NaN as a result.
. "$(dirname "$0")/lib.bash"

# /dev/zero grew to gigabytes before; now each reader stops at the limit.
export ZEPSIM_MAX_INPUT_MB=4
for cmd in "show model" "trace stats" "calib show" "run" "experiment list" "calib fit -o $TMP/x.json"; do
  name=zero-${cmd%% *}
  expect_rc "$name" 2 timeout 60 "$ZEPSIM" $cmd /dev/zero && expect_out "$name" "larger than the 4 MiB limit: /dev/zero"
done
expect_rc zero-timeline 2 timeout 60 "$ZEPSIM" timeline compare /dev/zero /dev/zero
head -c 5000000 /dev/zero | tr '\0' '1' >"$TMP/big.lengths"
expect_rc big-trace 2 "$ZEPSIM" trace stats "$TMP/big.lengths" && expect_out big-trace "ZEPSIM_MAX_INPUT_MB"
expect_rc big-stdin 2 sh -c "'$ZEPSIM' trace stats - <'$TMP/big.lengths'"
# Timelines are read as streams (any length, gzip too): 5 MB of blanks
# from 5 KB are refused where they end (not JSON), and the events kept (32
# bytes each) are bounded by the limit: 40,001 are over 1 MiB.
head -c 5000000 /dev/zero | tr '\0' ' ' | gzip >"$TMP/bomb.json.gz"
expect_rc gz-bomb 2 "$ZEPSIM" timeline compare "$TMP/bomb.json.gz" "$TMP/bomb.json.gz" && expect_out gz-bomb "malformed JSON .*bomb.json.gz:1:5000001"
ev='{"name":"a","ph":"X","ts":0,"dur":1,"args":{"rank":0}}'
{ echo '['; yes "$ev," | head -n 40000; echo "$ev]"; } | gzip >"$TMP/events.json.gz"
expect_rc gz-events 2 env ZEPSIM_MAX_INPUT_MB=1 "$ZEPSIM" timeline compare "$TMP/events.json.gz" "$TMP/events.json.gz" && expect_out gz-events "more than the 1 MiB input limit of events held.*ZEPSIM_MAX_INPUT_MB"
expect_rc gz-events-ok 0 env ZEPSIM_MAX_INPUT_MB=2 "$ZEPSIM" timeline compare "$TMP/events.json.gz" "$TMP/events.json.gz" && expect_out gz-events-ok "40001 ops"
unset ZEPSIM_MAX_INPUT_MB
# The default limit holds too (512 MiB), without a setting.
expect_rc zero-default 2 timeout 120 "$ZEPSIM" show model /dev/zero && expect_out zero-default "larger than the 512 MiB limit"
expect_rc bad-env 2 env ZEPSIM_MAX_INPUT_MB=-1 "$ZEPSIM" list models && expect_out bad-env "ZEPSIM_MAX_INPUT_MB"
expect_rc bad-env-ops 2 env ZEPSIM_MAX_PLAN_OPS=1e9 "$ZEPSIM" list models && expect_out bad-env-ops "ZEPSIM_MAX_PLAN_OPS"

# Plan files: a repeat of 2^31 - 1 (108 s analytic, 1.7 h SimGrid before)
# and an op time of 1e308 (iteration_time inf, exit 0 before).
plan() { # plan FILE REPEAT T: one rank, one op repeated REPEAT times
  cat >"$1" <<JSON
{"zepsim_schedule": 1, "method": "m", "model": "llama-7b", "cluster": "cluster-a", "cost": "c",
 "dims": {"tp": 1, "cp": 1, "pp": 1, "dp": 1}, "nranks": 1, "layers": 32, "heads": 1, "micro_batches": 1,
 "streams": ["compute", "comm"], "labels": ["x"], "groups": [], "group_tags": [], "docs": [],
 "pieces": [], "blocks": [], "ranks": [{"rank": 0, "segments": [[0, 1, $2]],
 "ops": [{"op": "elementwise", "stream": 0, "label": 0, "t": $3, "bytes": 100}]}]}
JSON
}
plan "$TMP/rep.json" 2147483647 0.001
plan "$TMP/inf.json" 2 1e308
plan "$TMP/ok.json" 32 0.001
for b in analytic sim; do
  expect_rc repeat-$b 2 timeout 60 "$ZEPSIM" run --backend $b --validate "$TMP/rep.json" && expect_out repeat-$b "repeat 2147483647 is more than the plan's 32 layers"
  expect_rc inf-$b 2 "$ZEPSIM" run --backend $b "$TMP/inf.json" && expect_out inf-$b "t: 1e\+308 out of range"
done
expect_rc ok 0 "$ZEPSIM" run --backend analytic "$TMP/ok.json" && expect_out ok "iter_ms +32.000 +ms"
expect_rc ops-limit 2 env ZEPSIM_MAX_PLAN_OPS=31 "$ZEPSIM" run --backend analytic "$TMP/ok.json" && expect_out ops-limit "more executed ops than the limit of 31"
plan "$TMP/two.json" 1 0.001
sed -i 's/"nranks": 1/"nranks": 2/; s/}]}]}/}]}, {"rank": 1, "segments": [], "ops": []}]}/' "$TMP/two.json"
expect_rc ranks-limit 2 env ZEPSIM_MAX_PLAN_RANKS=1 "$ZEPSIM" run --backend analytic "$TMP/two.json" && expect_out ranks-limit "ZEPSIM_MAX_PLAN_RANKS"

# timeline compare: a measured span of 0 printed "error +nan%".
printf '[{"name": "a", "cat": "compute", "ph": "X", "ts": 5, "dur": 0, "args": {"rank": 0}}]\n' >"$TMP/zero-tl.json"
expect_rc tl-zero 0 "$ZEPSIM" timeline compare "$TMP/zero-tl.json" "$TMP/zero-tl.json" && expect_out tl-zero "error n/a \(the measured span is 0\)"
if grep -qi nan "$TMP/out"; then echo "FAIL tl-zero-nan: nan printed"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
finish
