# End to end: zepsim trace stats/gen/batches/presets, malformed trace files
# (each exit 2 naming file:line), byte-identical generation per seed, and
# the published figures of the shared WLB-LLM trace.
. "$(dirname "$0")/lib.bash"

expect_rc help 0 "$ZEPSIM" trace --help && expect_out help "usage: zepsim trace stats"
expect_rc no-sub 2 "$ZEPSIM" trace
expect_rc bad-sub 2 "$ZEPSIM" trace frob x && expect_out bad-sub "unknown subcommand 'frob'"
expect_rc bad-opt 2 "$ZEPSIM" trace stats arxiv --frob
expect_rc opt-not-applicable 2 "$ZEPSIM" trace stats arxiv --out x && expect_out opt-not-applicable "does not apply"
expect_rc long-without-window 2 "$ZEPSIM" trace stats arxiv --long split
expect_rc bad-long 2 "$ZEPSIM" trace stats arxiv --window 10 --long fold
expect_rc gen-needs-n 2 "$ZEPSIM" trace gen arxiv
expect_rc gen-file 2 "$ZEPSIM" trace gen /etc/hostname --n 3
expect_rc unknown-preset 2 "$ZEPSIM" trace stats prolong && expect_out unknown-preset "prolong64k"
expect_rc bad-spec 2 "$ZEPSIM" trace stats uniform:9-1 && expect_out bad-spec "generator 'uniform:9-1'"
expect_rc missing-file 2 "$ZEPSIM" trace stats /nonexistent/t.lengths && expect_out missing-file "/nonexistent/t.lengths"
expect_rc batches-no-budget 2 "$ZEPSIM" trace batches arxiv

# ---- malformed trace files: exit 2, "zepsim: what: FILE:LINE...: fix" -----
bad() { # bad NAME LINE CONTENT [extra options]
  local name="$1" line="$2" content="$3"
  shift 3
  printf '%b' "$content" >"$TMP/$name"
  expect_rc "malformed-$name" 2 "$ZEPSIM" trace stats "$TMP/$name" "$@" &&
    expect_out "malformed-$name" "^zepsim: .*: $TMP/$name:$line(:[0-9]+)?: "
}
bad empty.lengths 1 ''
bad comments.lengths 1 '# only\n# comments\n'
bad word.lengths 3 '10\n20\nabc\n'
bad fraction.lengths 2 '10\n2.5\n'
bad zero.lengths 2 '10\n0\n'
bad negative.lengths 4 '# c\n1\n2\n-3\n'
bad huge.lengths 1 '4294967296\n'
bad garbage.lengths 1 '12 apples\n'
bad nul.txt 2 '1\n\x00\n'
bad truncated.json 3 '[1,\n2,\n3'
bad string.json 2 '[1,\n "2"]'
bad float.json 1 '[1, 2.0]'
bad zero.json 1 '[0, 1]'
bad object.json 1 '{"sizes": [1]}'
bad empty.json 1 '[]'
bad wrong-column.csv 1 'id,len\n1,2\n' --column size
bad column-number.csv 1 'a,b\n1,2\n' --column 7
bad ambiguous.csv 1 'a,b\n1,2\n'
bad short-row.csv 3 'id,length\n1,5\n2\n'
bad cell.csv 3 'length\n5\nfive\n'
bad header-only.csv 1 'length\n'
bad quote.csv 2 'length\n"5\n'

# ---- readers accept what the writer writes; stats of file == of generator ----
for ext in lengths csv json; do
  expect_rc "gen-$ext" 0 "$ZEPSIM" trace gen prolong64k --n 20000 --seed 9 --out "$TMP/p.$ext"
  expect_rc "stats-$ext" 0 "$ZEPSIM" trace stats "$TMP/p.$ext" --format csv
  grep -v '^summary,source,' "$TMP/out" >"$TMP/file-$ext.csv"
done
expect_rc stats-gen 0 "$ZEPSIM" trace stats prolong64k --n 20000 --seed 9 --format csv
grep -v '^summary,source,' "$TMP/out" >"$TMP/gen.csv"
for ext in lengths csv json; do
  if cmp -s "$TMP/gen.csv" "$TMP/file-$ext.csv"; then PASSES=$((PASSES + 1)); else
    echo "FAIL round-trip-$ext: stats of the written file differ from the generator's"
    diff "$TMP/gen.csv" "$TMP/file-$ext.csv" | head -5
    FAILS=$((FAILS + 1))
  fi
done

# ---- the same seed gives byte-identical output; another seed does not ----
for p in wlb-meta-128k prolong64k github arxiv fineweb openwebmath stackexchange squad \
  uniform:1-100 fixed:5 lognormal:8,1 mix:github=0.3,arxiv=0.7; do
  "$ZEPSIM" trace gen "$p" --n 3000 --seed 5 >"$TMP/a" 2>&1
  "$ZEPSIM" trace gen "$p" --n 3000 --seed 5 >"$TMP/b" 2>&1
  "$ZEPSIM" trace gen "$p" --n 3000 --seed 6 >"$TMP/c" 2>&1
  if cmp -s "$TMP/a" "$TMP/b" && { [ "$p" = fixed:5 ] || ! cmp -s "$TMP/a" "$TMP/c"; }; then
    PASSES=$((PASSES + 1))
  else
    echo "FAIL determinism-$p"
    FAILS=$((FAILS + 1))
  fi
done
# pinned: the first lengths of uniform:1-1000 with seed 1
expect_rc pinned 0 "$ZEPSIM" trace gen uniform:1-1000 --n 4 --seed 1
[ "$(grep -v '^#' "$TMP/out" | tr '\n' ' ')" = "418 998 721 933 " ] && PASSES=$((PASSES + 1)) ||
  { echo "FAIL pinned: $(grep -v '^#' "$TMP/out" | tr '\n' ' ')"; FAILS=$((FAILS + 1)); }

# ---- window handling is explicit in the output ----
expect_rc window-split 0 "$ZEPSIM" trace stats fixed:300000 --n 2 --window 131072 --long split
expect_out window-split "131072 tokens, split: 2 documents split into 6 pieces"
expect_out window-split "^docs +6$"
expect_rc window-truncate 0 "$ZEPSIM" trace stats fixed:300000 --n 2 --window 131072
expect_out window-truncate "truncate: 2 documents cut, 337856 tokens dropped"

# ---- batches ----
expect_rc batches 0 "$ZEPSIM" trace batches wlb-meta-128k --ranks 8 --tokens-per-rank 16384 --n 5
expect_out batches "budget +131,072 tokens"
expect_out batches "^batches +5$"
expect_out batches "^4 +[0-9]+"
expect_rc batches-json 0 "$ZEPSIM" trace batches uniform:1-10 --budget 20 --n 2 --format json
expect_out batches-json '"batch": 1'
printf '5\n3\n' >"$TMP/small.lengths"
expect_rc batches-runs-out 0 "$ZEPSIM" trace batches "$TMP/small.lengths" --budget 6 --n 5
expect_out batches-runs-out "ran out before --n batches"
expect_rc batches-cycle 0 "$ZEPSIM" trace batches "$TMP/small.lengths" --budget 6 --n 5 --cycle
expect_out batches-cycle "^batches +5$"

expect_rc presets 0 "$ZEPSIM" trace presets && expect_out presets "wlb-meta-128k"
expect_rc stdin 0 sh -c "printf '7\n9\n' | '$ZEPSIM' trace stats -"
expect_out stdin "^mean +8 tokens"
expect_rc above 0 "$ZEPSIM" trace stats fixed:100 --n 3 --above 50,100 --format csv
expect_out above "^above,,,,,50,50,3,100,100,100$"
expect_out above "^above,,,,,100,100,0,0,0,0$"

# ---- the shared WLB-LLM trace: the figures of TRACES.md from the data ----
WLB="$SHARED/traces/wlb-meta-128k.lengths"
if [ -r "$WLB" ]; then
  expect_rc wlb 0 "$ZEPSIM" trace stats "$WLB"
  expect_out wlb "^docs +99,519$"
  expect_out wlb "^mean +3,962 tokens"
  expect_out wlb "^median +3,227 tokens"
  expect_out wlb "^p99 +26,058 tokens"
  expect_out wlb "^max +124,913 tokens"
  # > 8K (8192): 22.45% of tokens (TRACES.md: 22.5%), attention 82.77% (82.8%)
  expect_out wlb "^8K +8,192 +2,361 +2\.372 +22\.45 +82\.77"
  expect_rc wlb-8000 0 "$ZEPSIM" trace stats "$WLB" --above 8000 --format csv
  expect_out wlb-8000 "^above,,,,,8000,8000,2390,2\.4015514625[0-9]*,22\.504868820[0-9]*,82\.792055339[0-9]*$"
else
  echo "skipping the shared-trace checks: $WLB not present"
fi

finish
