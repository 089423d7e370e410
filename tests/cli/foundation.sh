# End to end: help, version, unknown command/option, show/list, bad files.
. "$(dirname "$0")/lib.bash"

expect_rc help 0 "$ZEPSIM" --help && expect_out help "show"
expect_rc no-args 2 "$ZEPSIM"
expect_rc version 0 "$ZEPSIM" --version && expect_out version "zepsim [0-9]+\.[0-9]+"
expect_rc unknown-command 2 "$ZEPSIM" frobnicate && expect_out unknown-command "unknown command 'frobnicate'"
expect_rc show-help 0 "$ZEPSIM" show --help && expect_out show-help "usage: zepsim show"
expect_rc show-bad-option 2 "$ZEPSIM" show --frob model llama-7b
expect_rc show-missing-value 2 "$ZEPSIM" show model llama-7b --nodes
expect_rc show-bad-nodes 2 "$ZEPSIM" show cluster cluster-a --nodes 0
expect_rc show-bad-kind 2 "$ZEPSIM" show planet earth

expect_rc cluster-a-2 0 "$ZEPSIM" show cluster cluster-a --nodes 2
expect_out cluster-a-2-gpus "total_gpus +16"
expect_out cluster-a-2-nics "total_nics +8"
expect_out cluster-a-2-map "^1 +3 +3 +14,15"

expect_rc model-json 0 "$ZEPSIM" show model llama-7b --format json
expect_out model-json '"key": "params", "value": 6738000000(\.0)?, "unit": ""'
expect_rc model-csv 0 "$ZEPSIM" show model llama-7b --format csv && expect_out model-csv "^key,value,unit"
expect_rc bad-format 2 "$ZEPSIM" show model llama-7b --format xml

for what in models gpus clusters; do
  expect_rc "list-$what" 0 "$ZEPSIM" list "$what"
done
expect_out list-clusters "cluster-a"

expect_rc missing-file 2 "$ZEPSIM" show model /nonexistent/m.json
expect_out missing-file "cannot open file \(No such file or directory\): /nonexistent/m.json"
expect_rc unknown-preset 2 "$ZEPSIM" show model gpt-5 && expect_out unknown-preset "llama-7b"

printf '{\n  "name": "broken",\n  "layers": 32\n  "hidden": 4096\n}\n' >"$TMP/broken.json"
expect_rc malformed-model 2 "$ZEPSIM" show model "$TMP/broken.json"
expect_out malformed-model "broken.json:4:[0-9]+"

printf '{"name": "x", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32,\n "head_dim": 128, "ffn": 11008, "vocab": 32000, "layer": 2}\n' >"$TMP/typo.json"
expect_rc typo-key 2 "$ZEPSIM" show model "$TMP/typo.json"
expect_out typo-key "unknown key 'layer': .*typo.json:2:[0-9]+"

# Numbers are parsed strictly: no wrap-around, no blanks, no trailing text.
# Seeds stop at 2^63 - 1, what JSON and the results database hold exactly
# (2^64 - 1 was accepted, and --format json printed it as 1.84467440737096e19).
for v in -1 18446744073709551616 18446744073709551615 9223372036854775808 " 3" 3x; do
  expect_rc "seed-bad-$v" 2 "$ZEPSIM" simulate --backend analytic --nodes 2 --iterations 1 --seed "$v"
  expect_out "seed-bad-$v" "bad value .*--seed: give a whole number in \\[0, 9223372036854775807\\]"
done
expect_rc seed-max 0 "$ZEPSIM" simulate --backend analytic --nodes 1 --group 8 --context 16384 --iterations 1 \
  --quiet --seed 9223372036854775807 --format json
expect_out seed-max '"seed": 9223372036854775807,'
expect_rc seed-max-trace 0 "$ZEPSIM" trace gen arxiv --n 3 --seed 9223372036854775807
expect_rc seed-max-bench 0 "$ZEPSIM" bench plan --traces arxiv --nodes 1 --tokens 65536 --reps 1 --seed 9223372036854775807
expect_rc nodes-blank 2 "$ZEPSIM" show cluster cluster-a --nodes " 2"

finish
