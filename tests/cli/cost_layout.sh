# End to end: zepsim cost attention --layout (issue 31 item 2): one row per
# CP token layout with its time, imbalance, communication and efficiency,
# in every format, bad input named; and te-cp / llama-cp planning under
# each layout.
. "$(dirname "$0")/lib.bash"
A=(cost attention --cluster cluster-b --model llama3-8b --len 65536 --cp 8)

expect_rc lay-all 0 "$ZEPSIM" "${A[@]}" --layout all --format csv
expect_out lay-all "^table,layout,comm,time_ms,compute_ms,imbalance,merge_ms,comm_ms,kv_mib,ideal_ms,efficiency_pct,tflops_per_gpu,key,value,unit,note$"
for l in zigzag ring stripe; do expect_out "lay-all-$l" "^layouts,$l,ring p2p,"; done
expect_out lay-all "^layouts,llama3,all-gather,"
expect_out lay-all "^setup,+pass,fwd,"
# The contiguous ring's last rank computes ~(2cp-1)/cp of the mean: its
# efficiency is about half of zigzag's, whose compute is balanced.
eff() { awk -F, -v l="$1" '$2 == l {print $11}' "$TMP/out"; }
imb() { awk -F, -v l="$1" '$2 == l {print $6}' "$TMP/out"; }
awk -v r="$(eff ring)" -v z="$(eff zigzag)" -v i="$(imb ring)" -v j="$(imb zigzag)" \
  'BEGIN { exit !(r > 40 && r < 65 && z > 80 && z <= 105 && i > 1.7 && j < 1.01) }' &&
  PASSES=$((PASSES + 1)) || { echo "FAIL lay-shape: ring $(eff ring)% x$(imb ring), zigzag $(eff zigzag)% x$(imb zigzag)"; FAILS=$((FAILS + 1)); }
expect_rc lay-one 0 "$ZEPSIM" "${A[@]}" --layout stripe --pass fwd+bwd
expect_out lay-one "^stripe +ring p2p"
expect_out lay-one "^pass +fwd\+bwd"
if grep -q "^zigzag" "$TMP/out"; then echo "FAIL lay-one: a row not asked for"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
if command -v python3 >/dev/null; then
  "$ZEPSIM" "${A[@]}" --layout all --pass bwd --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["layout"] for r in d["layouts"]] == ["zigzag", "ring", "stripe", "llama3"]' &&
    PASSES=$((PASSES + 1)) || { echo "FAIL lay-json"; FAILS=$((FAILS + 1)); }
fi
expect_rc lay-bad 2 "$ZEPSIM" "${A[@]}" --layout striped
expect_out lay-bad "unknown CP layout 'striped'.*--layout: use ring, zigzag, stripe or llama3"
expect_rc lay-bad-pass 2 "$ZEPSIM" "${A[@]}" --layout ring --pass both
expect_out lay-bad-pass "bad --pass 'both'"
expect_rc lay-cp1 2 "$ZEPSIM" cost attention --len 4096 --layout ring
expect_out lay-cp1 "needs a CP group"
expect_rc lay-too-many 2 "$ZEPSIM" cost attention --cluster cluster-b --nodes 1 --len 65536 --cp 16 --layout ring
# Packed documents of their own lengths; a document too short for the
# group's chunks is named.
expect_rc lay-lens 0 "$ZEPSIM" cost attention --cluster cluster-b --cp 8 --lens 24832,25600,12800,1280,1024 --layout zigzag --format csv
expect_out lay-lens "^setup,+lens,\"?24832,25600,12800,1280,1024"
expect_rc lay-lens-short 2 "$ZEPSIM" cost attention --cp 8 --lens 4096,10 --layout ring
expect_out lay-lens-short "a document of 10 tokens cannot be cut"
expect_rc lay-lens-alone 2 "$ZEPSIM" cost attention --lens 4096,512
expect_out lay-lens-alone "--lens prices CP layouts only"
# --impl: ring-flash-attention's ops around the kernels; the default
# (fused) table has no impl row, bad values and --impl alone exit 2.
expect_rc lay-rfa 0 "$ZEPSIM" "${A[@]}" --layout all --impl ring-flash-attn --format csv
expect_out lay-rfa "^setup,+impl,ring-flash-attn,"
expect_rc lay-rfa-eager 0 "$ZEPSIM" "${A[@]}" --layout stripe --impl ring-flash-attn-eager
expect_out lay-rfa-eager "^impl +ring-flash-attn-eager"
# Under ring-flash-attention llama3 is its contiguous varlen function: the
# last rank holds the latest keys, so it balances like the contiguous ring
# (about half the generic llama3's efficiency, which places zigzag).
eff_of() { awk -F, '$1 == "layouts" && $2 == "llama3" {print $11}' "$TMP/out"; }
expect_rc lay-l3-rfa 0 "$ZEPSIM" "${A[@]}" --layout llama3 --impl ring-flash-attn --format csv
L3R=$(eff_of)
expect_rc lay-l3-fused 0 "$ZEPSIM" "${A[@]}" --layout llama3 --format csv
L3F=$(eff_of)
awk -v r="$L3R" -v f="$L3F" 'BEGIN { exit !(r > 40 && r < 65 && f > 80) }' &&
  PASSES=$((PASSES + 1)) || { echo "FAIL lay-l3: rfa llama3 $L3R%, generic $L3F%"; FAILS=$((FAILS + 1)); }
expect_rc lay-fused 0 "$ZEPSIM" "${A[@]}" --layout all --impl fused
if grep -q "^impl" "$TMP/out"; then echo "FAIL lay-fused: an impl row in the default table"; FAILS=$((FAILS + 1)); else PASSES=$((PASSES + 1)); fi
expect_rc lay-bad-impl 2 "$ZEPSIM" "${A[@]}" --layout all --impl te
expect_out lay-bad-impl "unknown CP layout implementation 'te'.*--impl: use fused\|ring-flash-attn\|ring-flash-attn-eager"
expect_rc lay-impl-alone 2 "$ZEPSIM" cost attention --len 4096 --impl ring-flash-attn
expect_out lay-impl-alone "--impl prices CP layouts only"
# Without --layout the output is the busiest-rank table it always was.
expect_rc lay-none 0 "$ZEPSIM" cost attention --len 4096 --cp 4 --format csv
expect_out lay-none "^busiest_rank,[0-9]"

# The planners follow the layout and validate.
for m in te-cp llama-cp; do
  for l in zigzag ring stripe llama3; do
    expect_rc "plan-$m-$l" 0 "$ZEPSIM" simulate --method "$m" --opt "layout=$l" --backend analytic --nodes 1 --group 8 --context 16384 --iterations 1 --validate --quiet
  done
done
expect_out plan-te-cp-llama3 "^# method options: layout=llama3"
expect_rc plan-bad 2 "$ZEPSIM" simulate --method te-cp --opt layout=snake --backend analytic --nodes 1 --group 8 --iterations 1 --quiet
expect_out plan-bad "layout=zigzag\|ring\|stripe\|llama3"
finish
