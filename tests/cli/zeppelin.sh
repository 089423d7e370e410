# End to end: `zepsim zeppelin thresholds` (crossovers with their reasoning).
. "$(dirname "$0")/lib.bash"

expect_rc zep-help 0 "$ZEPSIM" zeppelin --help && expect_out zep-help "usage: zepsim zeppelin thresholds"
expect_rc zep-a 0 "$ZEPSIM" zeppelin thresholds --model llama-3b --cluster cluster-a --nodes 2
expect_out zep-a-intra "^m_intra +[0-9]+"
expect_out zep-a-inter "^m_inter +[0-9]+"
expect_out zep-a-why "compute = transfer"
expect_out zep-a-k "^routing_k +4 "
expect_rc zep-json 0 "$ZEPSIM" zeppelin thresholds --model llama-7b --cluster cluster-c --format json
expect_out zep-json '"key": "m_inter"'
expect_rc zep-no-sub 2 "$ZEPSIM" zeppelin --model llama-3b --cluster cluster-a
expect_rc zep-bad-sub 2 "$ZEPSIM" zeppelin frob --model llama-3b --cluster cluster-a
expect_rc zep-no-model 2 "$ZEPSIM" zeppelin thresholds --cluster cluster-a
expect_rc zep-bad-tp 2 "$ZEPSIM" zeppelin thresholds --model llama-3b --cluster cluster-a --tp 3
expect_rc zep-bad-k 2 "$ZEPSIM" zeppelin thresholds --model llama-3b --cluster cluster-a --k 0
expect_rc zep-unknown-model 2 "$ZEPSIM" zeppelin thresholds --model gpt-5 --cluster cluster-a
finish
