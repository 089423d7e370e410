# End to end: `zepsim platform` writes a loadable SimGrid platform,
# `zepsim bench sim` and `bench floor` run (tiny sizes) and their errors
# exit 2.
. "$(dirname "$0")/lib.bash"

expect_rc platform-help 0 "$ZEPSIM" platform --help && expect_out platform-help "usage: zepsim platform"
expect_rc platform-missing-cluster 2 "$ZEPSIM" platform
expect_rc platform-bad-nodes 2 "$ZEPSIM" platform --cluster cluster-a --nodes 0
expect_rc platform-unknown-cluster 2 "$ZEPSIM" platform --cluster cluster-z
expect_rc platform-a16 0 "$ZEPSIM" platform --cluster cluster-a --nodes 16 --out "$TMP/p.xml"
if [ "$(grep -c '<host id="g' "$TMP/p.xml")" -eq 128 ]; then PASSES=$((PASSES + 1)); else
  echo "FAIL platform-a16-hosts: expected 128 GPU hosts"; FAILS=$((FAILS + 1)); fi
expect_rc platform-stdout 0 "$ZEPSIM" platform --cluster cluster-c --nodes 2
expect_out platform-stdout '<route src="g1" dst="n0-gw" symmetrical="NO"><link_ctn id="pu1"/><link_ctn id="xu1"/>'
expect_rc platform-bad-out 1 "$ZEPSIM" platform --cluster cluster-a --out /nonexistent/dir/p.xml
expect_out platform-bad-out "cannot create file"

expect_rc bench-help 0 "$ZEPSIM" bench --help && expect_out bench-help "sim"
expect_rc bench-none 2 "$ZEPSIM" bench
expect_rc bench-unknown 2 "$ZEPSIM" bench frob
expect_rc bench-sim-help 0 "$ZEPSIM" bench sim --help && expect_out bench-sim-help "exponent b fits"
expect_rc bench-sim-bad-gpus 2 "$ZEPSIM" bench sim --gpus 20
expect_rc bench-sim-bad-fold 2 "$ZEPSIM" bench sim --fold fast
expect_rc bench-sim-bad-method 2 "$ZEPSIM" bench sim --method frob
expect_rc bench-sim-small 0 "$ZEPSIM" bench sim --method te-cp --gpus 16,32 --fold off,on --runs 1 --floor-runs 0 --format csv
expect_out bench-sim-small "^te-cp,16,sim,off,[0-9.]+,"
expect_out bench-sim-small "^te-cp,32,sim,on,[0-9.]+,.*,[-+0-9.e]+,[-+0-9.e]+$"
expect_out bench-sim-small "^bench sim: te-cp at 32 GPUs, sim, fold on: run 1/1 took [0-9.]+ CPU s, [0-9]+ MB, iteration [0-9.]+ ms$"
expect_rc bench-sim-analytic 0 "$ZEPSIM" bench sim --method zeppelin --gpus 16,32 --backend analytic --runs 2
expect_out bench-sim-analytic "^zeppelin +16 +analytic +on "
expect_out bench-sim-analytic "^scaling: zeppelin, fold on: cpu_s ~ GPUs\^[-0-9.]+$"
# A compute end whose waiter is a collective held back by its stream's
# transfers in flight: replayed in the past, it must start nothing (the
# SimGrid actor's guard once fired there, USP on ProLong-64K at 16 nodes).
expect_rc sim-usp-prolong 0 "$ZEPSIM" simulate --method usp --trace prolong64k --nodes 16 --iterations 1
expect_out sim-usp-prolong "^tokens_per_s +281982 "
expect_rc bench-floor-help 0 "$ZEPSIM" bench floor --help && expect_out bench-floor-help "SimGrid's floor"
expect_rc bench-floor-odd 2 "$ZEPSIM" bench floor --gpus 15
expect_out bench-floor-odd "even count"
expect_rc bench-floor-width 2 "$ZEPSIM" bench floor --width 17
expect_rc bench-floor-small 0 "$ZEPSIM" bench floor --gpus 16 --transfers 2000 --runs 2 --format csv
expect_out bench-floor-small "^16,inside nodes,2000,4000(,[-+0-9.e]+){7}$"
expect_out bench-floor-small "^16,across nodes,2000,4000,"
finish
