#!/usr/bin/env bash
# The main job: installs what is missing, builds te-mlir, then runs te-opt over
# the example programs (parse, verify, canonicalize, print) and shows the
# verifier rejecting a broken attention op with a precise diagnostic.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
TE_OPT=build/bin/te-opt

"$TE_OPT" --version | sed -n '/te-mlir/,$p'
verified=0
for example in examples/*.mlir; do
  echo
  echo "=== $example: verified and canonicalized by te-opt"
  sed -n '1,/^[^/]/{/^\/\//p}' "$example"
  "$TE_OPT" "$example" -canonicalize
  verified=$((verified + 1))
done

echo
echo "=== a broken program: 6 query heads cannot share 4 key/value heads"
broken='func.func @gqa(%q: tensor<1x64x6x32xbf16>, %kv: tensor<1x64x4x32xbf16>) {
  %o = te.attention %q, %kv, %kv layout bshd mask causal
      : (tensor<1x64x6x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      -> tensor<1x64x6x32xbf16>
  return
}'
if echo "$broken" | "$TE_OPT" - 2>&1 >/dev/null | head -n 3; then :; fi
echo
echo "demo: $verified example programs verified; the broken one was rejected"
