#!/usr/bin/env bash
# The main job: installs what is missing, builds te-mlir, then compiles and
# runs the example programs on the CPU with te-run (twice, to show the
# kernel cache), runs one program with the oneDNN plugin next to the native
# lowering (with te-run, then from Python), explains why the collectives example does not run yet, and
# shows the verifier rejecting a broken attention op.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
TE_RUN=build/bin/te-run
TE_OPT=build/bin/te-opt
# A private cache, so the first run is a miss and the second a hit.
TE_CACHE_DIR="$(mktemp -d)"
export TE_CACHE_DIR
trap 'rm -rf "$TE_CACHE_DIR"' EXIT

"$TE_OPT" --version | sed -n '/te-mlir/,$p'
for example in examples/fp8_current_scaling.mlir examples/fp8_delayed_scaling_step.mlir \
    examples/mxfp8_quantize.mlir examples/attention_forward.mlir \
    examples/attention_gqa_causal.mlir; do
  echo
  echo "=== te-run $example --random-inputs (compiled, then from the cache)"
  sed -n '1,/^[^/]/{/^\/\//p}' "$example"
  "$TE_RUN" "$example" --random-inputs --seed 1
  "$TE_RUN" "$example" --random-inputs --seed 1 --bench 3 2>&1 | grep -E '^(cache|bench)'
done

if [ -f build/lib/te-mlir/plugins/libte-plugin-onednn.so ]; then
  echo
  echo "=== NVTE_PLUGIN=te-plugin-onednn te-run examples/plugin_dispatch.mlir --explain --check"
  echo "=== (the oneDNN plugin lowers what it can, native the rest; --check compares"
  echo "=== every output with the CPU reference)"
  NVTE_PLUGIN=te-plugin-onednn NVTE_PLUGIN_STRICT=1 "$TE_RUN" \
    examples/plugin_dispatch.mlir --random-inputs --seed 1 --explain --check

  echo
  echo "=== the same from Python: te_mlir.Jit().load_plugins('te-plugin-onednn'),"
  echo "=== compared with the native lowering of the same inputs"
  PYTHONPATH=build/python .venv/bin/python - <<'PY'
import numpy as np
import te_mlir

source = open("examples/plugin_dispatch.mlir").read()
jit = te_mlir.Jit()
native = jit.compile(source, name="plugin_dispatch.mlir")
rng = np.random.default_rng(1)
inputs = [rng.uniform(-1, 1, shape).astype(te_mlir.numpy_dtype(dtype))
          for is_output, dtype, shape in native.signature() if not is_output]
reference = native(*inputs)
jit.load_plugins("te-plugin-onednn")
print(te_mlir.format_explain(jit.explain(source, name="plugin_dispatch.mlir")))
for i, (out, ref) in enumerate(zip(jit.compile(source)(*inputs), reference)):
    diff = np.abs(out.astype(np.float32) - ref.astype(np.float32)).max()
    print(f"out{i} {out.dtype}: max |plugin - native| = {diff:.3g}")
PY
fi

verified=0
for example in examples/*.mlir; do
  "$TE_OPT" "$example" -canonicalize >/dev/null
  verified=$((verified + 1))
done
echo
echo "=== te-opt verified all $verified example programs"
echo
echo "=== collectives on MPI: an FP8 all-gather + GEMM on 2 ranks, checked"
echo "=== on each rank against the reference kernel"
# OpenMPI refuses root without these two; the demo may run as root.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun -np 2 --bind-to none "$TE_RUN" examples/fp8_tensor_parallel_linear.mlir \
  --entry column_parallel --random-inputs --check
echo
echo "=== a broken program:"
broken='func.func @gqa(%q: tensor<1x64x6x32xbf16>, %kv: tensor<1x64x4x32xbf16>) {
  %o = te.attention %q, %kv, %kv layout bshd mask causal
      : (tensor<1x64x6x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      -> tensor<1x64x6x32xbf16>
  return
}'
if echo "$broken" | "$TE_OPT" - 2>&1 >/dev/null | head -n 1; then :; fi
