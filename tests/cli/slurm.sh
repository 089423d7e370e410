# End to end on a real one-node Slurm (issue 18): the test writes a
# slurm.conf for this machine, starts munged, slurmctld and slurmd itself,
# submits scripts/slurm-sweep.sbatch as an array job (3 tasks, one shard
# each, `--shard slurm` from the 0-based SLURM_ARRAY_TASK_ID), waits for it,
# merges the per-shard databases with `db merge` and writes the report with
# `experiment report`; then stops what it started. Skipped (exit 77, with
# the reason) only where the Slurm and MUNGE daemons are not installed or
# cannot start (not root, say); CI installs them (scripts/setup --slurm).
. "$(dirname "$0")/lib.bash"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SPEC="$TMP/tiny.json"
cat >"$SPEC" <<'JSON'
{
  "name": "tiny-sweep",
  "title": "tiny sweep: TE CP and Zeppelin on two traces (1 node, analytic)",
  "base": {"model": "llama-7b", "cluster": "cluster-a", "nodes": 1, "group": 8, "context": 16384,
           "iterations": 1, "seed": 1, "backend": "analytic"},
  "sweep": {"trace": [{"label": "arxiv", "trace": "arxiv"}, {"label": "github", "trace": "github"}]},
  "series": [{"label": "TE CP", "method": "te-cp"}, {"label": "Zeppelin", "method": "zeppelin"}],
  "baseline": "TE CP",
  "plot": {"kind": "bars", "metric": "speedup"}
}
JSON

# ---- --shard slurm outside Slurm, and its arithmetic, need no daemons ----
expect_rc shard-no-slurm 2 env -u SLURM_ARRAY_TASK_ID "$ZEPSIM" experiment run "$SPEC" \
  --shard slurm --db "$TMP/x.db"
expect_out shard-no-slurm "SLURM_ARRAY_TASK_ID is not set: --shard slurm: run it inside a Slurm array job"
# an array from 5: task 6 is the second of three shards
expect_rc shard-min 0 env SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=3 \
  "$ZEPSIM" experiment run "$SPEC" --shard slurm --db "$TMP/m.db"
expect_out shard-min "4 points, 1 in shard 2/3"
expect_rc shard-out-of-range 2 env SLURM_ARRAY_TASK_ID=9 SLURM_ARRAY_TASK_MIN=0 \
  SLURM_ARRAY_TASK_COUNT=3 "$ZEPSIM" experiment run "$SPEC" --shard slurm --db "$TMP/y.db"
expect_out shard-out-of-range "array task 9 is not one of 3 tasks from 0"

skip() {
  echo "SKIP slurm: $1"
  finish >/dev/null
  [ "$FAILS" -eq 0 ] || { finish; exit 1; }
  exit 77
}
for b in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$b" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$b" >/dev/null 2>&1 ||
    skip "'$b' is not installed (Debian packages slurm-wlm and munge: scripts/setup --slurm)"
done
export PATH="$PATH:/usr/sbin:/sbin"
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start jobs (run the test as root, as CI does)"

# Daemons' files: a short folder (UNIX socket paths are limited to 107 bytes).
D=$(mktemp -d /tmp/zs-slurm.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$D"
}
trap cleanup EXIT
logs() { for f in "$D"/*.log; do echo "--- $f"; tail -n 15 "$f"; done; }

mkdir -p "$D/state" "$D/spool"
mungekey -c -k "$D/munge.key" >/dev/null 2>&1 || skip "mungekey cannot create a key"
munged -f -F --socket="$D/munge.sock" --key-file="$D/munge.key" --log-file="$D/munged.log" \
  --pid-file="$D/munged.pid" --seed-file="$D/munged.seed" >>"$D/munged.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$D/munge.sock" ] && break; sleep 0.1; done
[ -S "$D/munge.sock" ] || { logs; skip "munged did not start"; }

H=$(hostname -s)
PORT=$((20000 + $$ % 20000))
cat >"$D/slurm.conf" <<CONF
ClusterName=zepsimtest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=zepsim Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >>"$D/slurmctld.log" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$H" >>"$D/slurmd.log" 2>&1 &
PIDS+=($!)
up=0
for _ in $(seq 60); do
  [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && { up=1; break; }
  sleep 0.5
done
[ "$up" = 1 ] || { logs; skip "slurmctld and slurmd did not bring the node up"; }
PASSES=$((PASSES + 1))

# ---- the array job: three shards, one database each ----
OUT="$TMP/sweep"
ZABS="$(cd "$(dirname "$ZEPSIM")" && pwd)/$(basename "$ZEPSIM")" # the tasks run elsewhere
jid=$(cd "$TMP" && ZEPSIM="$ZABS" sbatch --parsable --array=0-2 \
  --output="$TMP/task-%A_%a.log" "$ROOT/scripts/slurm-sweep.sbatch" "$SPEC" "$OUT")
if [ -z "$jid" ]; then echo "FAIL sbatch: no job id"; logs; FAILS=$((FAILS + 1)); finish; exit 1; fi
PASSES=$((PASSES + 1))
for _ in $(seq 240); do
  [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break
  sleep 0.5
done
states=$(scontrol -o show job "$jid" | grep -o 'JobState=[A-Z]*' | sort | uniq -c | tr -s ' ')
if [ "$states" = " 3 JobState=COMPLETED" ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL array: $states"; cat "$TMP"/task-*.log; logs; FAILS=$((FAILS + 1)); fi
# each task's log has its progress lines (a batch log, not a terminal)
if [ "$(cat "$TMP"/task-*.log | grep -c '^experiment: [12]/[12] points, 0 failed')" -ge 3 ]; then
  PASSES=$((PASSES + 1)); else echo "FAIL task-progress"; cat "$TMP"/task-*.log; FAILS=$((FAILS + 1)); fi
got=$(cat "$TMP"/task-*.log | grep -o 'in shard [0-9]/3' | sort | tr '\n' ' ')
if [ "$got" = "in shard 1/3 in shard 2/3 in shard 3/3 " ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL shards: '$got'"; cat "$TMP"/task-*.log; FAILS=$((FAILS + 1)); fi

# ---- merge and report ----
expect_rc merge 0 "$ZEPSIM" db merge "$OUT/all.db" "$OUT"/shard-0.db "$OUT"/shard-1.db \
  "$OUT"/shard-2.db
expect_out merge "merged 3 databases into .*all.db: 4 rows copied, 0 already present"
expect_rc report 0 "$ZEPSIM" experiment report "$SPEC" --db "$OUT/all.db" --out "$OUT/report" \
  --no-plot
expect_out report "tiny-sweep: 4 points, 4 stored, 0 failed, 0 not run"
# the sharded sweep stores what one unsharded run stores
expect_rc whole 0 "$ZEPSIM" experiment run "$SPEC" --db "$TMP/whole.db"
for db in "$OUT/all.db" "$TMP/whole.db"; do
  "$ZEPSIM" db query "SELECT method, trace, tokens_per_s FROM results ORDER BY method, trace" \
    --db "$db" --format csv >"$db.csv"
done
if cmp -s "$OUT/all.db.csv" "$TMP/whole.db.csv"; then PASSES=$((PASSES + 1)); else
  echo "FAIL same-results: sharded and whole runs differ"; diff "$OUT/all.db.csv" "$TMP/whole.db.csv"
  FAILS=$((FAILS + 1)); fi
finish
