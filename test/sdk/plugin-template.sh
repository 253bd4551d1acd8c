#!/usr/bin/env bash
# The SDK end to end: install te-mlir, build examples/plugin-template out of
# tree against the installation with find_package(TEMLIR), install the
# plugin next to it, load it by name and run a program whose per-tensor
# quantize it lowers; the results must equal the native lowering's bit for
# bit, and --explain must show who lowered what.
# With PYTHON, the installed te_mlir package loads the plugin by name too.
#   plugin-template.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -euo pipefail
build=$1
source=$2
python=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset NVTE_PLUGIN NVTE_PLUGIN_STRICT NVTE_PLUGIN_POLICY NVTE_PLUGIN_DENY \
  TE_PLUGIN_PATH TE_CACHE_DISABLE TE_COMPILER_LIBRARY TE_RUNTIME_PLUGIN
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

# The README's "Run it" block as written: from the checkout, --explain
# alone, which runs nothing, with the plugin ABI the host speaks.
readme=$(cd "$source" && NVTE_PLUGIN=te-plugin-template "$te_run" \
  examples/plugin-template/quantize.mlir --explain)
grep -Fxq "$(grep -F 'examples/plugin-template/quantize.mlir:9:13' \
  "$source/examples/plugin-template/README.md")" <<< "$readme"
abi=$(sed -n 's/.*plugin: template 0.1.0, plugin ABI \([0-9.]*\),.*/\1/p' <<< "$info")
grep -q "plugin ABI $abi," "$source/examples/plugin-template/README.md"

# The same results as the native lowering.
"$te_run" "$program" --random-inputs --seed 7 --output-dir "$work/native-out" > /dev/null
for i in 0 1 2 3 4; do
  cmp "$work/plugin-out/out$i.npy" "$work/native-out/out$i.npy"
done

# From Python, against the installation: the plugin loaded by name through
# the JIT, the same table and the same results.
if [ -n "$python" ]; then
  PYTHONPATH=$work/install/python "$python" - "$program" "$work" <<'PY'
import sys
import numpy as np
import te_mlir

program, work = sys.argv[1], sys.argv[2]
source = open(program).read()
assert te_mlir._default_compiler_library().startswith(work + "/install/")
jit = te_mlir.Jit()
native = jit.compile(source, name="quantize.mlir")
rng = np.random.default_rng(7)
inputs = [rng.standard_normal(shape).astype(te_mlir.numpy_dtype(dtype))
          for is_output, dtype, shape in native.signature() if not is_output]
# A NaN element: amax skips it (TE's fmaxf), in the plugin as natively.
inputs[0][3, 5] = np.nan
expected = native(*inputs)
assert not np.isnan(expected[2])
jit.load_plugins("te-plugin-template")
rows = jit.explain(source, name="quantize.mlir")
print(te_mlir.format_explain(rows))
assert [r.backend for r in rows] == ["plugin template/quantize", "cpu (native)"]
results = jit.compile(source, name="quantize.mlir")(*inputs)
assert all(a.tobytes() == b.tobytes() for a, b in zip(results, expected))
PY
  echo "plugin-template: loaded by name from the installed Python package"
fi
echo "plugin-template: built out of tree, loaded by name, results equal native"
