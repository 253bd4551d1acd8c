#!/usr/bin/env bash
# The SDK end to end: install te-mlir, build examples/plugin-template out of
# tree against the installation with find_package(TEMLIR), install the
# plugin next to it, load it by name and run a program whose per-tensor
# quantize it lowers; the results must equal the native lowering's bit for
# bit, and --explain must show who lowered what.
#   plugin-template.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset NVTE_PLUGIN NVTE_PLUGIN_STRICT NVTE_PLUGIN_POLICY NVTE_PLUGIN_DENY \
  TE_PLUGIN_PATH TE_CACHE_DISABLE
export TE_CACHE_DIR=$work/cache

cmake --install "$build" --prefix "$work/install" > "$work/install.log"
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$source/examples/plugin-template" -B "$work/plugin" -G Ninja \
  -DTEMLIR_DIR="$work/install/lib/cmake/TEMLIR" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  "${launcher[@]}" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/plugin" > "$work/build.log" ||
  { cat "$work/build.log"; exit 1; }
cmake --install "$work/plugin" > /dev/null
test -f "$work/install/lib/te-mlir/plugins/libte-plugin-template.so"

te_opt=$work/install/bin/te-opt
te_run=$work/install/bin/te-run
program=$source/examples/plugin-template/quantize.mlir

# Found by name in the installed plugin directory, and available.
info=$(NVTE_PLUGIN=te-plugin-template "$te_opt" --te-print-plugin-info)
echo "$info"
grep -q "te-plugin-template \[available\] from NVTE_PLUGIN" <<< "$info"
grep -q "provider template/quantize: te.quantize" <<< "$info"

# Who lowers what.
explain=$(NVTE_PLUGIN=te-plugin-template NVTE_PLUGIN_STRICT=1 "$te_run" \
  "$program" --explain --random-inputs --seed 7 --output-dir "$work/plugin-out")
echo "$explain"
grep -Eq "^te.quantize +\S+quantize.mlir:6:20 +plugin template/quantize +-$" <<< "$explain"
grep -Eq "^te.quantize +\S+quantize.mlir:9:13 +cpu \(native\) +template/quantize: only per-tensor scaling, not mxfp8_1x32$" <<< "$explain"

# The same results as the native lowering.
"$te_run" "$program" --random-inputs --seed 7 --output-dir "$work/native-out" > /dev/null
for i in 0 1 2 3 4; do
  cmp "$work/plugin-out/out$i.npy" "$work/native-out/out$i.npy"
done
echo "plugin-template: built out of tree, loaded by name, results equal native"
