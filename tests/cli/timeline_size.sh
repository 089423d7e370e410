# End to end: timelines sized for people (issue 35 item 5). A run whose
# every rank would be over ZEPSIM_TIMELINE_MAX_MB (64 MB by default) of JSON
# writes 8 chosen ranks, says which on stderr and in the file's metadata;
# --timeline-ranks all writes every rank, a list the ranks listed; the
# choice follows the plan, so both backends keep the same ranks; simulate,
# run and compare share it.
. "$(dirname "$0")/lib.bash"
# Zeppelin on 2 nodes: 16 ranks, about 65 MB of JSON for all of them.
POINT=(--method zeppelin --nodes 2 --group 16 --context 32768 --iterations 1 --seed 1)
RUN=("${POINT[@]}" --quiet)

ranks_in() { # ranks_in FILE: the ranks of its complete events, as a list "0,5,9"
  grep -o '"rank":[0-9]*' "$1" | cut -d: -f2 | sort -un | paste -sd, -
}
expand() { # expand LIST: "0,5,9-11" -> "0,5,9,10,11"
  local out="" item
  for item in ${1//,/ }; do
    if [[ "$item" == *-* ]]; then out="$out,$(seq -s, "${item%-*}" "${item#*-}")"; else out="$out,$item"; fi
  done
  echo "${out#,}"
}
check() { # check NAME GOT WANT
  if [ "$2" = "$3" ]; then PASSES=$((PASSES + 1)); else
    echo "FAIL $1: got '$2', expected '$3'"; FAILS=$((FAILS + 1)); fi
}

# By default: 8 of 16 ranks, a one-line note naming them and the way to all.
expect_rc auto 0 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/auto.json"
expect_out auto "^zepsim: note: timeline .*auto\.json holds 8 of 16 ranks: [0-9,-]+ \(kept in this order while they fit: the most compute in the plan, [0-9]+; the least, [0-9]+; rank 0; the last; evenly spaced ones\); every rank would be about 6[0-9] MB of JSON, over the 64 MB limit \(ZEPSIM_TIMELINE_MAX_MB\): --timeline-ranks all writes every rank, --timeline-ranks 0,5,17-20 the ranks listed$"
[ "$(grep -c 'note: timeline' "$TMP/out")" = 1 ] && PASSES=$((PASSES + 1)) || { echo "FAIL auto: not one note"; FAILS=$((FAILS + 1)); }
list=$(sed -n 's/.*holds 8 of 16 ranks: \([0-9,-]*\) .*/\1/p' "$TMP/out")
check auto-ranks "$(ranks_in "$TMP/auto.json")" "$(expand "$list")"
check auto-rank0 "$(expand "$list" | cut -d, -f1)" 0
check auto-meta "$(grep -o '"otherData":{"ranks":"[^"]*","nranks":16,"rank_choice":"automatic","layers":"all","note":"8 of 16 ranks' "$TMP/auto.json" | wc -l)" 1
auto_size=$(stat -c %s "$TMP/auto.json")
[ "$auto_size" -lt 64000000 ] && PASSES=$((PASSES + 1)) || { echo "FAIL auto-size: $auto_size"; FAILS=$((FAILS + 1)); }
# The same run, gzip-compressed: the same ranks.
expect_rc auto-gz 0 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/auto.json.gz"
check auto-gz "$(gzip -dc "$TMP/auto.json.gz" | cmp - "$TMP/auto.json" && echo same)" same

# --timeline-ranks all: every rank, no note.
expect_rc all 0 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/all.json" --timeline-ranks all
if grep -q "note: timeline" "$TMP/out"; then echo "FAIL all: a note"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
check all-ranks "$(ranks_in "$TMP/all.json")" "$(seq -s, 0 15)"
check all-meta "$(grep -o '"otherData":{"ranks":"all","nranks":16,"rank_choice":"all","layers":"all"}' "$TMP/all.json" | wc -l)" 1
[ "$(stat -c %s "$TMP/all.json")" -gt 64000000 ] && PASSES=$((PASSES + 1)) || { echo "FAIL all-size"; FAILS=$((FAILS + 1)); }
# The automatic subset is these ranks' events of the whole, op for op.
expect_rc auto-vs-all 0 "$ZEPSIM" timeline compare "$TMP/auto.json" "$TMP/all.json"
expect_out auto-vs-all "median absolute error: compute 0.00%, communication 0.00%"
n_auto=$(grep -c '"ph":"X"' "$TMP/auto.json")
expect_out auto-vs-all "0 only measured, $((  $(grep -c '"ph":"X"' "$TMP/all.json") - n_auto )) only predicted"
rm -f "$TMP/all.json"

# A list: those ranks; ranges and repeats; ranks past the last ignored.
expect_rc list 0 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/list.json" --timeline-ranks 0,5,9-11,5,15-99
check list-ranks "$(ranks_in "$TMP/list.json")" "0,5,9,10,11,15"
check list-meta "$(grep -o '"otherData":{"ranks":"0,5,9-11,15","nranks":16,"rank_choice":"given"' "$TMP/list.json" | wc -l)" 1
for bad in 3-1 1,,2 x -1 1- "1 2" all,3; do
  expect_rc "bad-list-$bad" 2 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/bad.json" --timeline-ranks "$bad"
  expect_out "bad-list-$bad" "bad rank list"
done
expect_rc bad-list-run 2 "$ZEPSIM" run "$TMP/none.json" --timeline-ranks 2-1
expect_out bad-list-run "bad rank list '2-1'"

# The limit from the environment: 20 MB keeps fewer ranks, 1000 MB all.
expect_rc env-20 0 env ZEPSIM_TIMELINE_MAX_MB=20 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/e20.json"
expect_out env-20 "holds [1-4] of 16 ranks: .* over the 20 MB limit"
[ "$(stat -c %s "$TMP/e20.json")" -lt 20000000 ] && PASSES=$((PASSES + 1)) || { echo "FAIL env-20-size"; FAILS=$((FAILS + 1)); }
expect_rc env-1000 0 env ZEPSIM_TIMELINE_MAX_MB=1000 "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/e1000.json"
if grep -q "note: timeline" "$TMP/out"; then echo "FAIL env-1000: a note"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
check env-1000-ranks "$(ranks_in "$TMP/e1000.json")" "$(seq -s, 0 15)"
rm -f "$TMP/e1000.json"
for bad in 0 x -5 1e3; do
  expect_rc "bad-env-$bad" 2 env ZEPSIM_TIMELINE_MAX_MB=$bad "$ZEPSIM" simulate "${RUN[@]}" --timeline "$TMP/x.json"
  expect_out "bad-env-$bad" "ZEPSIM_TIMELINE_MAX_MB"
done

# run: the same choice on either backend (it follows the plan), so the
# two timelines still match op for op.
expect_rc plan 0 "$ZEPSIM" plan "${POINT[@]}" --dump "$TMP/plan.json"
for b in sim analytic; do
  expect_rc run-$b 0 env ZEPSIM_TIMELINE_MAX_MB=20 "$ZEPSIM" run "$TMP/plan.json" --backend $b \
    --timeline "$TMP/run-$b.json"
  expect_out run-$b "^zepsim: note: timeline .*run-$b\.json holds [1-4] of 16 ranks"
done
check run-same-ranks "$(ranks_in "$TMP/run-sim.json")" "$(ranks_in "$TMP/run-analytic.json")"
expect_rc run-compare 0 "$ZEPSIM" timeline compare "$TMP/run-sim.json" "$TMP/run-analytic.json"
expect_out run-compare "0 only measured, 0 only predicted"

# compare: one note per method, from its worker processes.
expect_rc compare 0 env ZEPSIM_TIMELINE_MAX_MB=20 "$ZEPSIM" compare --methods zeppelin,te-cp \
  --nodes 2 --group 16 --context 32768 --iterations 1 --plot none --jobs 2 --timeline "$TMP/c.json"
expect_out compare "^zepsim: note: timeline .*c\.zeppelin\.json holds [1-4] of 16 ranks"
expect_out compare "^timeline zeppelin: .*c\.zeppelin\.json"
finish
