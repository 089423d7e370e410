# End to end: every file zepsim writes appears whole or not at all (issue
# 21 item 8). On a full disk (a small tmpfs in a private mount namespace:
# root only, skipped otherwise) each writer fails with exit 1 and a message
# that says so (a full disk by name), and leaves neither the target nor a
# temporary file behind (before: 0-byte plan dumps and calibrations,
# truncated files, "write error" for a timeline). A failure
# later than the writing (a bad option) also leaves no file.
. "$(dirname "$0")/lib.bash"
case $ZEPSIM in /*) ;; *) ZEPSIM=$PWD/$ZEPSIM ;; esac
REF="$SHARED/reference"

# Without a full disk: the outputs are whole and nothing else is left.
mkdir -p "$TMP/outs"
expect_rc dump 0 "$ZEPSIM" plan --method te-cp --nodes 2 --dump "$TMP/outs/plan.json"
expect_rc trace-gen 0 "$ZEPSIM" trace gen arxiv --n 100 --out "$TMP/outs/t.lengths"
expect_rc platform 0 "$ZEPSIM" platform --cluster cluster-a --nodes 2 --out "$TMP/outs/p.xml"
left=$(ls -A "$TMP/outs" | grep -c '\.tmp-' || true)
if [ "$left" -eq 0 ]; then PASSES=$((PASSES + 1)); else echo "FAIL tmp-left: $(ls -A "$TMP/outs")"; FAILS=$((FAILS + 1)); fi

if ! unshare -m true 2>/dev/null; then
  echo "skipping the full-disk part: no private mount namespace (not root)"
  finish
  exit $?
fi
# full NAME SIZE CMD...: run CMD with /mnt a SIZE tmpfs; expect exit 1, "no space"
# and nothing in /mnt afterwards (listed into $TMP/left) but the report's
# folder, empty.
full() {
  local name=$1 size=$2
  shift 2
  expect_rc "$name" 1 unshare -m sh -c "mount -t tmpfs -o size=$size tmpfs /mnt && cd /mnt && \"\$@\"; rc=\$?; (cd /mnt && find . -mindepth 1 | sed 's|^./||') >'$TMP/left'; exit \$rc" sh "$@" &&
    expect_out "$name" "No space left on device|disk full"
  if grep -qv "^rep$" "$TMP/left"; then echo "FAIL $name-left: $(cat "$TMP/left")"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
}
full dump-full 64k "$ZEPSIM" plan --method te-cp --nodes 2 --dump /mnt/plan.json
full trace-full 16k "$ZEPSIM" trace gen arxiv --n 100000 --out /mnt/t.lengths
full platform-full 8k "$ZEPSIM" platform --cluster cluster-a --nodes 16 --out /mnt/p.xml
# a timeline, plain and gzip (6 MB of JSON; before: "write error", not the reason)
for ext in json json.gz; do
  full timeline-full-$ext 64k "$ZEPSIM" simulate --method te-cp --backend analytic --nodes 1 --group 8 \
    --context 16384 --iterations 1 --quiet --timeline /mnt/t.$ext
done
if [ -d "$REF/h200-nccl-tests" ]; then
  full calib-full 8k "$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt "$REF"/h100-kernels/*.csv -o /mnt/c.json
fi
cat >"$TMP/t.json" <<'JSON'
{"name": "t", "title": "T", "base": {"model": "llama-550m", "cluster": "cluster-a", "nodes": 2,
 "context": 32768, "iterations": 1, "backend": "analytic"}, "sweep": {"trace": ["arxiv", "github"]},
 "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Local", "method": "local"}]}
JSON
expect_rc report-db 0 "$ZEPSIM" experiment run "$TMP/t.json" --db "$TMP/t.db"
full report-full 4k "$ZEPSIM" experiment report "$TMP/t.json" --db "$TMP/t.db" --out /mnt/rep --no-plot
finish
