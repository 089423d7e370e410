# End to end: the results database under hostile conditions (issue 21
# item 7): read-only commands change nothing and work on a read-only
# mount and for a user who cannot write the folder, `db query` runs only reads, a merge into itself and files that are
# not zepsim databases are refused by name, a full disk says so, and two
# runners started on one spec share its points.
. "$(dirname "$0")/lib.bash"
case $ZEPSIM in /*) ;; *) ZEPSIM=$PWD/$ZEPSIM ;; esac
cd "$TMP" || exit 1
cat >t.json <<'JSON'
{"name": "t", "title": "T",
 "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 16, "context": 262144, "group": 16,
          "iterations": 2, "backend": "analytic"},
 "sweep": {"seed": [1, 2, 3, 4]},
 "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Local", "method": "local"}],
 "baseline": "TE CP"}
JSON
expect_rc run 0 "$ZEPSIM" experiment run t.json --db a.db && expect_out run "8 ran, 0 failed"

# The points view has every result column docs/output.md lists (issue 35
# item 6), with the figures that were missing: busy, idle, peak memory,
# GPUs, speedup over the spec's baseline, attention kernel.
"$ZEPSIM" list columns --format csv | tail -n +2 | cut -d, -f1 >want.txt
expect_rc points-columns 0 "$ZEPSIM" db query "SELECT * FROM points" --db a.db --format csv
head -1 "$TMP/out" | tr ',' '\n' >have.txt
missing=$(grep -vxFf have.txt want.txt | tr '\n' ' ')
if [ -z "$missing" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL points-columns: the points view lacks $missing"; FAILS=$((FAILS + 1)); fi
expect_rc points-figures 0 "$ZEPSIM" db query "SELECT method, gpus, round(speedup, 9), busy_pct > 0, idle_pct >= 0, peak_mem_gib > 1, nodes_from FROM points WHERE seed = 1 ORDER BY method" --db a.db --format csv
expect_out points-figures "^local,128,[0-9.]+,1,1,1,--nodes$"
expect_out points-figures "^te-cp,128,1(\.0)?,1,1,1,--nodes$"

# A schema version 2 file (before those columns): read as it is, with
# NULL for them, and upgraded by the first writer.
cp a.db v2.db
sqlite3 v2.db "ALTER TABLE results DROP COLUMN gpus; ALTER TABLE results DROP COLUMN baseline_key; UPDATE meta SET value = '2' WHERE key = 'schema_version'"
expect_rc v2-read 0 "$ZEPSIM" db query "SELECT gpus, speedup, busy_pct > 0 FROM points WHERE method = 'te-cp' AND seed = 1" --db v2.db --format csv
expect_out v2-read "^,,1$"
expect_rc v2-upgrade 0 "$ZEPSIM" experiment run t.json --db v2.db && expect_out v2-upgrade "0 ran, 0 failed"
expect_rc v2-upgraded 0 sqlite3 v2.db "SELECT value FROM meta WHERE key = 'schema_version'; SELECT count(*) FROM pragma_table_info('results') WHERE name IN ('gpus', 'baseline_key')"
expect_out v2-upgraded "^4$" && expect_out v2-upgraded "^2$"

# Only reads: ATTACH created x.db before; the journal mode stays as it was.
expect_rc attach 2 "$ZEPSIM" db query "ATTACH 'x.db' AS x" --db a.db && expect_out attach "only SELECT statements run"
if [ -e x.db ]; then echo "FAIL attach-file: x.db created"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
expect_rc delete 2 "$ZEPSIM" db query "DELETE FROM results" --db a.db
expect_rc pragma 2 "$ZEPSIM" db query "PRAGMA journal_mode=delete" --db a.db
cp a.db d.db
sqlite3 d.db "PRAGMA journal_mode=DELETE" >/dev/null
expect_rc query-delete-mode 0 "$ZEPSIM" db query "SELECT count(*) FROM results" --db d.db && expect_out query-delete-mode "^8$"
expect_rc list-delete-mode 0 "$ZEPSIM" experiment list t.json --db d.db
mode=$(sqlite3 d.db "PRAGMA journal_mode")
if [ "$mode" = delete ] && [ ! -e d.db-wal ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL journal-mode: $mode after reading"; FAILS=$((FAILS + 1)); fi

# Not a zepsim database, another schema version, a merge into itself.
sqlite3 other.db "CREATE TABLE t(x)"
expect_rc foreign-query 2 "$ZEPSIM" db query "SELECT 1" --db other.db && expect_out foreign-query "not a zepsim results database"
expect_rc foreign-run 2 "$ZEPSIM" experiment run t.json --db other.db
tables=$(sqlite3 other.db .tables | tr -s ' \n' ' ')
if [ "$tables" = "t " ]; then PASSES=$((PASSES + 1)); else echo "FAIL foreign-unchanged: tables $tables"; FAILS=$((FAILS + 1)); fi
echo "just text" >text.db
expect_rc text 2 "$ZEPSIM" db query "SELECT 1" --db text.db && expect_out text "not an SQLite database"
cp a.db v9.db
sqlite3 v9.db "UPDATE meta SET value = '9' WHERE key = 'schema_version'"
expect_rc version 2 "$ZEPSIM" experiment report t.json --db v9.db --out rep && expect_out version "schema version '9'"
expect_rc merge-self 2 "$ZEPSIM" db merge a.db ./a.db && expect_out merge-self "cannot be merged into itself"
expect_rc no-db 1 "$ZEPSIM" db query "SELECT 1" --db none.db && expect_out no-db "no results database: none.db"

# Two runners at once on one spec: every point runs once (both ran all 8).
rm -f two.db*
"$ZEPSIM" experiment run t.json --db two.db --jobs 1 >r1.txt 2>&1 &
p1=$!
"$ZEPSIM" experiment run t.json --db two.db --jobs 1 >r2.txt 2>&1
rc2=$?
wait $p1
rc1=$?
ran=$(cat r1.txt r2.txt | grep -o '[0-9]* ran' | awk '{s += $1} END {print s}')
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$ran" -eq 8 ] && [ "$(sqlite3 two.db 'SELECT count(*) FROM results')" = 8 ]; then
  PASSES=$((PASSES + 1)); else echo "FAIL two-runners: exits $rc1 $rc2, $ran points ran"; cat r1.txt r2.txt; FAILS=$((FAILS + 1)); fi

# As a user who cannot write the database's folder (issue 35 item 2;
# before: "attempt to write a readonly database" from all three): the
# commands that read work and write nothing. Root writes through
# permissions, so it runs them as nobody; another user makes the folder
# read-only instead.
mkdir -p other && cp a.db other/ && cp t.json other/
chmod 755 other && chmod 644 other/a.db
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  chmod o+x "$TMP" # nobody must reach the folder
  mkdir -p rep-other && chmod 777 rep-other
else
  as_other() { "$@"; }
  chmod 555 other
  mkdir -p rep-other
fi
before=$(ls -la --time-style=+%s.%N other; md5sum other/a.db)
expect_rc other-query 0 as_other "$ZEPSIM" db query 'SELECT count(*) FROM points' --db other/a.db &&
  expect_out other-query "^8$"
expect_rc other-list 0 as_other "$ZEPSIM" experiment list other/t.json --db other/a.db &&
  expect_out other-list "ok"
expect_rc other-report 0 as_other "$ZEPSIM" experiment report other/t.json --db other/a.db --out rep-other --no-plot
after=$(ls -la --time-style=+%s.%N other; md5sum other/a.db)
if [ "$before" = "$after" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL other-unchanged: the folder changed:"; diff <(echo "$before") <(echo "$after"); FAILS=$((FAILS + 1)); fi
# A -wal file left by a runner killed mid-write holds rows the main file
# lacks: with its -shm file SQLite reads both; without it, reading needs
# the -shm file, which this user cannot create, so the error says what to
# do.
chmod 755 other
python3 - other/a.db <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("UPDATE meta SET value = value")
os._exit(0)  # no checkpoint: the -wal file stays
PY
[ "$(id -u)" -eq 0 ] || chmod 555 other
if [ -e other/a.db-wal ]; then
  expect_rc other-wal-shm 0 as_other "$ZEPSIM" db query 'SELECT count(*) FROM points' --db other/a.db
  chmod 755 other && rm -f other/a.db-shm
  [ "$(id -u)" -eq 0 ] || chmod 555 other
  expect_rc other-wal 1 as_other "$ZEPSIM" db query 'SELECT count(*) FROM points' --db other/a.db &&
    expect_out other-wal "its -wal file holds results not yet in the main file.*as a user who can write its folder"
fi
chmod 755 other

# A read-only mount and a full disk need a private mount namespace (root).
if unshare -m true 2>/dev/null; then
  mkdir -p ro && cp a.db ro/
  unshare -m sh -c "mount --bind ro ro && mount -o remount,bind,ro ro &&
    '$ZEPSIM' db query 'SELECT count(*) FROM results' --db ro/a.db &&
    '$ZEPSIM' experiment list t.json --db ro/a.db && '$ZEPSIM' experiment report t.json --db ro/a.db --out rep" >ro.txt 2>&1
  if [ $? -eq 0 ] && grep -q '^8$' ro.txt; then PASSES=$((PASSES + 1)); else
    echo "FAIL read-only-mount:"; sed 's/^/    /' ro.txt; FAILS=$((FAILS + 1)); fi
  expect_rc full 1 unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs /mnt && '$ZEPSIM' experiment run '$TMP/t.json' --db /mnt/f.db"
  expect_out full "disk full while .*: /mnt/f.db: free space on the disk"
else
  echo "skipping the read-only mount and full disk parts: no private mount namespace (not root)"
fi
finish
