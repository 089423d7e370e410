# End to end: `zepsim report DB -o FILE.html` (issue 34 item 4): one
# self-contained page per results database (the plot inlined as SVG, the
# paper-vs-ours table, every point), nothing loaded from elsewhere, the
# same bytes twice, the database only read, bad input exit 2; and, where
# Chromium is installed (scripts/setup --browser), the page renders
# headless with no console error and a screenshot is taken.
. "$(dirname "$0")/lib.bash"
case $ZEPSIM in /*) ;; *) ZEPSIM=$PWD/$ZEPSIM ;; esac
cd "$TMP" || exit 1
cat >tiny.json <<'JSON'
{"name": "tiny", "title": "Tiny: TE CP and Zeppelin on two traces <&>",
 "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 1, "context": 16384, "group": 8,
          "iterations": 1, "backend": "analytic"},
 "sweep": {"trace": ["arxiv", "github"]},
 "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Zeppelin", "method": "zeppelin"}],
 "baseline": "TE CP",
 "plot": {"kind": "bars", "metric": "speedup"},
 "paper": [{"what": "Zeppelin over TE CP, arxiv", "series": "Zeppelin", "metric": "speedup",
            "agg": "value", "match": {"trace": "arxiv"}, "value": 1.0, "source": "the test"}]}
JSON
expect_rc run 0 "$ZEPSIM" experiment run ./tiny.json --db t.db
before=$(sha256sum t.db | cut -d' ' -f1)
expect_rc page 0 "$ZEPSIM" report t.db -o r.html --dir .
expect_out page "^wrote r.html: 1 specs, 4 points"
cp r.html first.html
# the page: its title escaped, the tables, the summary's paper count
grep -q "Tiny: TE CP and Zeppelin on two traces &lt;&amp;&gt;" r.html &&
  grep -q "<th>ours / paper</th>" r.html && grep -q '<td class="n">1 of 1</td>' r.html &&
  PASSES=$((PASSES + 1)) || { echo "FAIL page-content"; FAILS=$((FAILS + 1)); }
if command -v gnuplot >/dev/null 2>&1; then
  if grep -q "<svg" r.html && ! grep -q "<?xml" r.html; then PASSES=$((PASSES + 1)); else
    echo "FAIL page-svg: no inline SVG (or an XML prolog inside the HTML)"; FAILS=$((FAILS + 1)); fi
fi
# self-contained: no script, nothing fetched, no link out of the page
if grep -qE '<script|src=|href="[^#]|url\(' r.html; then
  echo "FAIL page-self-contained:"; grep -oE '<script|src=[^ ]*|href="[^#][^"]*"|url\(' r.html | head
  FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
# deterministic, read-only, no scratch left
expect_rc again 0 "$ZEPSIM" report t.db -o r.html --dir .
if cmp -s r.html first.html; then PASSES=$((PASSES + 1)); else
  echo "FAIL page-deterministic"; FAILS=$((FAILS + 1)); fi
if [ "$(sha256sum t.db | cut -d' ' -f1)" = "$before" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL db-unchanged"; FAILS=$((FAILS + 1)); fi
if ls -d .zepsim-report-* 2>/dev/null | grep -q .; then
  echo "FAIL scratch-left"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi

# bad input
expect_rc no-db 1 "$ZEPSIM" report missing.db -o x.html && expect_out no-db "no results database: missing.db"
expect_rc two-dbs 2 "$ZEPSIM" report t.db t.db
sqlite3 empty.db "CREATE TABLE other (x)"
expect_rc foreign 2 "$ZEPSIM" report empty.db -o x.html && expect_out foreign "not a zepsim results database"
expect_rc no-folder 1 "$ZEPSIM" report t.db -o no/such/dir/r.html --dir .
if [ -e x.html ] || [ -e no ]; then echo "FAIL no-partial-page"; FAILS=$((FAILS + 1)); else
  PASSES=$((PASSES + 1)); fi

# rendered by a browser, where one is installed
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$CHROME" ]; then
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1280,2400 --screenshot="$TMP/shot.png" --enable-logging=stderr --v=0 \
    "file://$TMP/r.html" >chrome.txt 2>&1
  got=$(od -An -tx1 -N4 "$TMP/shot.png" 2>/dev/null | tr -d ' \n')
  if [ "$got" = 89504e47 ] && [ "$(stat -c %s "$TMP/shot.png")" -gt 20000 ]; then
    PASSES=$((PASSES + 1)); else echo "FAIL chromium-screenshot:"; tail -5 chrome.txt; FAILS=$((FAILS + 1)); fi
  if grep -E "CONSOLE|Uncaught|ERR_FILE_NOT_FOUND" chrome.txt | grep -qv "dbus\|gpu"; then
    echo "FAIL chromium-console:"; grep -E "CONSOLE|Uncaught|ERR_FILE" chrome.txt | head
    FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
else
  echo "skipping the browser check: no Chromium (scripts/setup --browser installs it)"
fi
finish
