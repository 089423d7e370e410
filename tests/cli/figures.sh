# End to end: figures and help (issue 18, point 12). Reports draw the
# paper's published values on the plot (a marker on the bar, a dashed line
# for an aggregate); `--plot` writes the format its extension names;
# scripts/reproduce-figures writes into its build folder unless --update;
# `experiment list` finds the specs from any folder; Fig. 12's title says
# what is plotted; `zepsim help CMD` is `zepsim CMD --help`.
. "$(dirname "$0")/lib.bash"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ZABS="$(cd "$(dirname "$ZEPSIM")" && pwd)/$(basename "$ZEPSIM")"
HAVE_GNUPLOT=0
command -v gnuplot >/dev/null 2>&1 && HAVE_GNUPLOT=1
same() { # NAME A B: two files equal
  if cmp -s "$2" "$3"; then PASSES=$((PASSES + 1)); else
    echo "FAIL $1: $2 and $3 differ"; diff "$2" "$3" | head -5; FAILS=$((FAILS + 1)); fi
}
magic() { # NAME FILE HEX-PREFIX
  local got
  got=$(od -An -tx1 -N4 "$2" 2>/dev/null | tr -d ' \n')
  if [ "${got#"$3"}" != "$got" ]; then PASSES=$((PASSES + 1)); else
    echo "FAIL $1: $2 starts with '$got', not '$3'"; FAILS=$((FAILS + 1)); fi
}

# ---- the paper's numbers on the plot ----
cat >"$TMP/tiny.json" <<'JSON'
{
  "name": "tiny",
  "title": "tiny: TE CP and Zeppelin on two traces",
  "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 1, "group": 8, "context": 16384,
           "iterations": 1, "seed": 1, "backend": "analytic"},
  "sweep": {"trace": [{"label": "arxiv", "trace": "arxiv"}, {"label": "github", "trace": "github"}]},
  "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Zeppelin", "method": "zeppelin"}],
  "baseline": "TE CP",
  "plot": {"kind": "bars", "metric": "speedup"},
  "paper": [
    {"what": "Zeppelin on github", "series": "Zeppelin", "metric": "speedup", "agg": "value",
     "match": {"trace": "github"}, "value": 1.75, "source": "test"},
    {"what": "mean speedup", "series": "Zeppelin", "metric": "speedup", "agg": "mean",
     "value": 1.25, "source": "test"},
    {"what": "not plotted (another metric)", "series": "Zeppelin", "metric": "mfu", "agg": "value",
     "match": {"trace": "github"}, "value": 0.5, "source": "test"}
  ]
}
JSON
expect_rc run 0 "$ZEPSIM" experiment run "$TMP/tiny.json" --db "$TMP/t.db"
expect_rc report 0 "$ZEPSIM" experiment report "$TMP/tiny.json" --db "$TMP/t.db" --out "$TMP/rep"
# Zeppelin is series 1 of 2 on case 1 (github): x = 1 + (1 - 0.5) / 3
cp "$TMP/rep/tiny.gp" "$TMP/out"
expect_out paper-marker "^1\.16667	1\.75$"
expect_out paper-line 'set arrow 1 from graph 0, first 1\.25 to graph 1, first 1\.25'
expect_out paper-line-label 'paper, mean: mean speedup = 1\.25'
expect_out paper-key '\$paper using 1:2 with points .* title "paper"'
if grep -q "0\.5$" "$TMP/rep/tiny.gp"; then
  echo "FAIL paper-metric: another metric's value is drawn"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
if [ "$HAVE_GNUPLOT" = 1 ]; then
  magic report-png "$TMP/rep/tiny.png" 89504e47
else
  echo "skipping the rendering checks: gnuplot is not installed"
fi

# ---- a ninth series gets a colour of its own (gnuplot's default eight cycle) ----
if grep -q "set linetype" "$TMP/rep/tiny.gp"; then
  echo "FAIL colours-few: a 2-series plot sets line colours"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
series=""
for i in 1 2 3 4 5 6 7 8 9; do series="$series${series:+, }{\"label\": \"s$i\", \"method\": \"te-cp\", \"opts\": \"routing=$((i % 2))\"}"; done
cat >"$TMP/nine.json" <<JSON
{
  "name": "nine",
  "title": "nine series",
  "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 1, "group": 8, "context": 16384,
           "iterations": 1, "seed": 1, "backend": "analytic", "trace": "arxiv"},
  "series": [$series],
  "plot": {"kind": "bars", "metric": "tokens_per_s"}
}
JSON
expect_rc nine-run 0 "$ZEPSIM" experiment run "$TMP/nine.json" --db "$TMP/n.db"
expect_rc nine-report 0 "$ZEPSIM" experiment report "$TMP/nine.json" --db "$TMP/n.db" --out "$TMP/rep"
cp "$TMP/rep/nine.gp" "$TMP/out"
expect_out colours-nine '^set linetype 9 lc rgb "#7f7f7f"$'
if grep -q "set linetype 10" "$TMP/out"; then
  echo "FAIL colours-nine: a colour set for a tenth series"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi

# ---- --plot writes the format its extension names ----
SMALL=(--backend analytic --nodes 1 --group 8 --context 16384 --iterations 1 --quiet)
if [ "$HAVE_GNUPLOT" = 1 ]; then
  for ext in png svg pdf; do
    expect_rc "plot-$ext" 0 "$ZEPSIM" compare --methods te-cp,zeppelin "${SMALL[@]}" --plot "$TMP/c.$ext"
    expect_out "plot-$ext" "^chart: .*/c\.$ext \(tokens/s; iteration time as busy / exposed / idle\)$"
  done
  magic plot-png "$TMP/c.png" 89504e47
  magic plot-pdf "$TMP/c.pdf" 25504446 # %PDF
  if head -c 300 "$TMP/c.svg" | grep -q "<svg"; then PASSES=$((PASSES + 1)); else
    echo "FAIL plot-svg: not SVG"; FAILS=$((FAILS + 1)); fi
fi
expect_rc plot-bad 2 "$ZEPSIM" compare --methods te-cp "${SMALL[@]}" --plot "$TMP/c.jpg"
expect_out plot-bad "cannot tell the plot format of '.*c\.jpg' from its extension: --plot: name a \.png, \.svg or \.pdf file, or none"
expect_rc validate-plot-bad 2 "$ZEPSIM" validate --against /nonexistent.txt --plot "$TMP/v.gif"

# ---- scripts/reproduce-figures: into its build folder unless --update ----
before=$(cd "$ROOT/experiments/results" && ls -l --time-style=+%s.%N | md5sum)
expect_rc reproduce 0 env ZEPSIM="$ZABS" BUILD_DIR="$TMP/bf" JOBS=1 \
  "$ROOT/scripts/reproduce-figures" "$TMP/tiny.json"
expect_out reproduce "^figures written to $TMP/bf/results \(scripts/reproduce-figures --update writes"
[ -s "$TMP/bf/results/tiny.md" ] && PASSES=$((PASSES + 1)) || { echo "FAIL reproduce: no tiny.md"; FAILS=$((FAILS + 1)); }
after=$(cd "$ROOT/experiments/results" && ls -l --time-style=+%s.%N | md5sum)
if [ "$before" = "$after" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL reproduce: experiments/results changed without --update"; FAILS=$((FAILS + 1)); fi
expect_rc reproduce-bad 2 "$ROOT/scripts/reproduce-figures" --updat
expect_rc reproduce-bad-jobs 2 env ZEPSIM="$ZABS" BUILD_DIR="$TMP/bf3" JOBS=two \
  "$ROOT/scripts/reproduce-figures" "$TMP/tiny.json"
expect_out reproduce-bad-jobs "JOBS must be a positive whole number of lanes, not 'two'"
# two lanes share the spec's points through the database's claims: every
# point stored once, the second lane's log beside the database
expect_rc reproduce-lanes 0 env ZEPSIM="$ZABS" BUILD_DIR="$TMP/bf2" JOBS=2 \
  "$ROOT/scripts/reproduce-figures" "$TMP/tiny.json"
expect_rc reproduce-lanes-db 0 "$ZEPSIM" experiment list "$TMP/tiny.json" --db "$TMP/bf2/results.db" --format csv
if [ "$(grep -c ",ok$" "$TMP/out")" = 4 ] && [ -s "$TMP/bf2/lane-2.log" ] && [ -s "$TMP/bf2/results/tiny.md" ]; then
  PASSES=$((PASSES + 1)); else echo "FAIL reproduce-lanes: not 4 points stored ok, or no lane-2.log"; FAILS=$((FAILS + 1)); fi

# ---- experiment list from anywhere; specs by name ----
expect_rc list-anywhere 0 sh -c "cd / && '$ZABS' experiment list"
expect_out list-anywhere "zeppelin-fig8\.json +[0-9]+ +Zeppelin Fig\. 8"
expect_rc list-env 0 sh -c "cd / && ZEPSIM_SPECS='$TMP' '$ZABS' experiment list"
expect_out list-env "tiny\.json +4 +tiny"
expect_rc list-by-name 0 sh -c "cd / && '$ZABS' experiment list zeppelin-fig12"
expect_out list-by-name "^0 +one 64K sequence +TE CP +te-cp"
expect_rc list-bad-dir 1 "$ZEPSIM" experiment list --dir "$TMP/none"
expect_out list-bad-dir "cannot open the spec folder: .*/none"
# Fig. 12 plots the ring round read from each point's timeline: its title says so
expect_rc fig12-title 0 "$ZEPSIM" experiment list --format json
expect_out fig12-title '"title": "Zeppelin Fig\. 12: a cross-node ring transfer of TE CP'

# ---- zepsim help CMD = zepsim CMD --help ----
for c in compare simulate experiment db calib trace list; do
  "$ZEPSIM" help "$c" >"$TMP/help-a" 2>&1
  "$ZEPSIM" "$c" --help >"$TMP/help-b" 2>&1
  same "help-$c" "$TMP/help-a" "$TMP/help-b"
done
expect_rc help-unknown 2 "$ZEPSIM" help compre
expect_out help-unknown "unknown command 'compre'"
finish
