# Helpers for the end-to-end CLI scripts (sourced, not a test itself).
# Each script gets: $1 the zepsim binary, $2 the shared/ folder, $3 a scratch folder.
set -u
ZEPSIM="$1"
SHARED="$2"
TMP="$3"
rm -rf "$TMP" && mkdir -p "$TMP"
FAILS=0
PASSES=0
# expect_rc NAME WANT_RC CMD...  (stdout+stderr saved in $TMP/out)
expect_rc() {
  local name="$1" want="$2"
  shift 2
  "$@" >"$TMP/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want: $*"
    sed 's/^/    /' "$TMP/out" | head -20
    FAILS=$((FAILS + 1))
    return 1
  fi
  PASSES=$((PASSES + 1))
  return 0
}
# expect_out NAME PATTERN: the last command's output matches the grep -E pattern
expect_out() {
  if ! grep -qE -- "$2" "$TMP/out"; then
    echo "FAIL $1: output lacks /$2/"
    sed 's/^/    /' "$TMP/out" | head -20
    FAILS=$((FAILS + 1))
    return 1
  fi
  PASSES=$((PASSES + 1))
}
finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}
