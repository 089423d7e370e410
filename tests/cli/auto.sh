# End to end: the auto planner plans, validates and runs from the CLI, its
# notes say what it chose and what the runner-ups would take, it is the
# fastest of a small analytic compare (one long document, short ones), its
# options are checked, and `bench plan --method auto` times it.
. "$(dirname "$0")/lib.bash"
SMALL="--backend analytic --nodes 2 --iterations 1"

expect_rc plan 0 "$ZEPSIM" plan --method auto --nodes 2 --validate
expect_out plan "^validated +1"
expect_out plan "chosen \(span above a node's share\): [0-9]+ documents local, [0-9]+ head-parallel in a node"
expect_out plan "runner-ups: .*no spanning [0-9.]+ ms \(\+[0-9.]+%\)"
expect_out plan "all local [0-9.]+ ms"

expect_rc simulate 0 "$ZEPSIM" simulate --method auto $SMALL --trace github
expect_out simulate "^# method auto$"

# One 64K document on two nodes: head-parallel beats a ring and whole
# documents; 2K documents: every method keeps them whole, auto as fast.
expect_rc compare-long 0 "$ZEPSIM" compare --methods usp,zeppelin,hybrid-dp,auto $SMALL \
  --model llama-3b --trace fixed:65536 --context 65536 --plot none --format csv
python3 - "$TMP/out" <<'PY' || { echo "FAIL compare-long: auto is not the fastest"; FAILS=$((FAILS + 1)); }
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
lines = lines[next(i for i, l in enumerate(lines) if l.startswith("model,")):]
rows = {r["method"]: float(r["tokens_per_s"]) for r in csv.DictReader(lines) if r.get("method")}
best = max(v for k, v in rows.items() if k != "auto")
sys.exit(0 if rows["auto"] >= 0.999 * best else 1)
PY

# LLaMA-30B with tp=4: 13 heads per GPU, so no head-parallel degree
# divides them; the large documents go on the nodes' rings of 2 TP groups
# (NVLink) rather than across the nodes.
expect_rc tp4 0 "$ZEPSIM" plan --method auto --model llama-30b --opt tp=4 --zero 3 --nodes 2 \
  --validate
expect_out tp4 "^validated +1"
expect_out tp4 "head-parallel over u=1 GPUs"
expect_out tp4 "chosen \(.*\): [0-9]+ documents local, 0 head-parallel in a node, [1-9][0-9]* on a node's ring, 0 spanning nodes"

# Under a calibrated cost model the planner prices with it (and still plans a
# valid schedule).
REF="$SHARED/reference"
if [ ! -d "$REF/h200-nccl-tests" ] || [ ! -d "$REF/h100-kernels" ]; then
  echo "skipping the calibrated plan: $REF not present"
else
  expect_rc calib-fit 0 "$ZEPSIM" calib fit "$REF"/h200-nccl-tests/*.txt "$REF"/h100-kernels/*.csv \
    -o "$TMP/h200.calib.json"
  expect_rc calib-plan 0 "$ZEPSIM" plan --method auto --cluster cluster-c --nodes 2 \
    --calib "$TMP/h200.calib.json" --validate
  expect_out calib-plan "^# cost model: calibrated on H200"
  expect_out calib-plan "^validated +1"
fi

expect_rc layout-local 0 "$ZEPSIM" plan --method auto --nodes 2 --opt layout=local,span=0
expect_out layout-local "chosen \(span above a node's share\): [0-9]+ documents local, 0 head-parallel"
expect_rc bad-layout 2 "$ZEPSIM" plan --method auto --nodes 2 --opt layout=zigzag
expect_out bad-layout "layout: use layout=auto\|local\|heads\|ring"
expect_rc no-ring 2 "$ZEPSIM" plan --method auto --nodes 2 --opt layout=ring
expect_out no-ring "^zepsim: layout=ring: a node's ring needs two Ulysses groups.*: layout: use ulysses=1"
expect_rc ring-u1 0 "$ZEPSIM" plan --method auto --nodes 2 --opt layout=ring,ulysses=1 --validate
expect_out ring-u1 "^validated +1"
expect_out ring-u1 "0 documents local, 0 head-parallel in a node, [0-9]+ on a node's ring"
expect_rc bad-ulysses 2 "$ZEPSIM" plan --method auto --nodes 2 --opt ulysses=3
expect_out bad-ulysses "^zepsim: ulysses=3: a node has 8 TP groups"
expect_rc help 0 "$ZEPSIM" plan --help
expect_out help "layout=auto\|local\|heads\|ring \(default auto\)"

expect_rc bench 0 "$ZEPSIM" bench plan --method auto --nodes 2 --tokens 300000 --reps 1 \
  --traces arxiv --format csv
expect_out bench "^arxiv,16,[0-9]+,300000,[0-9.]+,[0-9.]+,[0-9]+$"
expect_rc bench-te 0 "$ZEPSIM" bench plan --method te-cp --nodes 2 --tokens 300000 --reps 1 \
  --traces arxiv --format csv
expect_out bench-te "^arxiv,16,[0-9]+,300000,,[0-9.]+,[0-9]+$"
expect_rc bench-bogus 2 "$ZEPSIM" bench plan --method autoo --nodes 2 --reps 1
expect_out bench-bogus "unknown method 'autoo'.*did you mean 'auto'"
finish
