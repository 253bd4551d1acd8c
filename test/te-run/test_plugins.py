"""te-run with plugins: the fixture plugins of test/Plugin/fixtures lower
some ops, native lowers the rest, the results are the native ones bit for
bit, --explain shows who lowered what, and the plugins key the cache."""
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import TE_RUN

FIXTURES = Path(os.environ.get(
    "TE_PLUGIN_FIXTURES",
    Path(TE_RUN).resolve().parents[1] / "test" / "Plugin" / "fixtures"))
GOOD = FIXTURES / "libte-fixture-good.so"
SECOND = FIXTURES / "libte-fixture-second.so"
INVALID_IR = FIXTURES / "libte-fixture-invalid-ir.so"

PROGRAM = """
func.func @step(%x: tensor<4x8xf32>, %y: tensor<8xbf16>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %a = te.amax %x : tensor<4x8xf32> -> tensor<f32>
  %b = te.amax %y : tensor<8xbf16> -> tensor<f32>
  %d, %si, %am = te.quantize %x scale(%s) mode per_tensor
      : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %a, %b, %d, %si, %am
      : tensor<f32>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>
}
"""

pytestmark = pytest.mark.skipif(not GOOD.exists(),
                                reason=f"plugin fixtures not built ({GOOD})")


def cache_line(proc):
    return [l for l in proc.stderr.splitlines() if l.startswith("cache:")][0]


def outputs(directory):
    return [np.load(directory / f"out{i}.npy") for i in range(5)]


def inputs(te_run):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 8)) * 100).astype(np.float32)
    x[1, 3] = -900.0          # saturates in e4m3
    y = rng.standard_normal(8).astype(np.float32)
    return [te_run.array(x), te_run.array(y), te_run.array(np.float32(0.5))]


def run(te_run, program, out, *extra, env=None):
    args = [program, "--output-dir", out]
    for path in inputs(te_run):
        args += ["--input", path]
    return te_run(*args, *extra, env=env)


def test_plugin_results_equal_native(te_run):
    program = te_run.program(PROGRAM)
    run(te_run, program, te_run.tmp / "native")
    run(te_run, program, te_run.tmp / "plugin", f"--te-plugin={GOOD}")
    for native, plugin in zip(outputs(te_run.tmp / "native"),
                              outputs(te_run.tmp / "plugin")):
        assert native.dtype == plugin.dtype
        np.testing.assert_array_equal(native, plugin)
    # The amax the plugin computed is the true one.
    assert outputs(te_run.tmp / "plugin")[0] == np.float32(900.0)


def test_explain_shows_plugin_and_native(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--explain", "--random-inputs",
                  env={"NVTE_PLUGIN": str(GOOD)})
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["op", "location", "backend", "declined", "/",
                                "notes"]
    rows = [line.split() for line in lines[1:]]
    assert rows[0] == ["te.amax", f"{program}:4:8", "plugin", "fixture/amax",
                       "-"]
    assert rows[1][:4] == ["te.amax", f"{program}:5:8", "cpu", "(native)"]
    assert " ".join(rows[1][4:]) == "fixture/amax: only f32 inputs, got bf16"
    assert rows[2] == ["te.quantize", f"{program}:6:18", "plugin",
                       "fixture/quantize", "-"]


def test_plugins_key_the_cache(te_run):
    program = te_run.program(PROGRAM)
    out = te_run.tmp / "out"
    assert cache_line(run(te_run, program, out)) == "cache: miss"
    assert cache_line(run(te_run, program, out)) == "cache: hit (disk)"
    # Another plugin list is another kernel...
    assert cache_line(run(te_run, program, out,
                          env={"NVTE_PLUGIN": str(GOOD)})) == "cache: miss"
    assert cache_line(run(te_run, program, out,
                          env={"NVTE_PLUGIN": str(GOOD)})) == "cache: hit (disk)"
    # ...and so is another priority order, or a policy.
    both = f"{SECOND},{GOOD}"
    assert cache_line(run(te_run, program, out,
                          env={"NVTE_PLUGIN": both})) == "cache: miss"
    assert cache_line(run(te_run, program, out,
                          env={"NVTE_PLUGIN": str(GOOD),
                               "NVTE_PLUGIN_POLICY": "amax=native"})) == "cache: miss"
    # Without plugins, the first entry is still there.
    assert cache_line(run(te_run, program, out)) == "cache: hit (disk)"


def test_invalid_plugin_lowering_warns_and_falls_back(te_run):
    program = te_run.program(PROGRAM)
    run(te_run, program, te_run.tmp / "native")
    proc = run(te_run, program, te_run.tmp / "plugin",
               env={"NVTE_PLUGIN": str(INVALID_IR)})
    assert ("invalid_ir/amax could not lower te.amax" in proc.stderr
            and "using the native lowering" in proc.stderr), proc.stderr
    for native, plugin in zip(outputs(te_run.tmp / "native"),
                              outputs(te_run.tmp / "plugin")):
        np.testing.assert_array_equal(native, plugin)


def test_strict_fallback_is_an_error(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs", check=False,
                  env={"NVTE_PLUGIN": str(INVALID_IR), "NVTE_PLUGIN_STRICT": "1"})
    assert proc.returncode == 2
    assert "NVTE_PLUGIN_STRICT=1 forbids the fallback" in proc.stderr
    assert "Traceback" not in proc.stderr and "Stack dump" not in proc.stderr


def test_empty_plugin_option_is_a_usage_error(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--te-plugin=", check=False)
    assert proc.returncode == 2
    assert "te-run: error: --te-plugin= needs a list of plugins" in proc.stderr


TARGET = FIXTURES / "libte-fixture-target.so"
DEVICE = FIXTURES / "libte-fixture-device.so"
SERIALIZE_FAILS = FIXTURES / "libte-fixture-target-serialize-fails.so"


def test_plugin_target_stages_emit_and_dumps(te_run):
    program = te_run.program(PROGRAM, name="step.mlir")
    dump = te_run.tmp / "dump"
    env = {"NVTE_PLUGIN": str(TARGET), "TE_DUMP_DIR": str(dump)}
    # The fixture target builds on te-mlir's host library: its stages show.
    proc = te_run(program, "--random-inputs", "--backend", "fixture",
                  "--runtime-plugin", DEVICE, "-v", env=env)
    assert [l.split()[2].rstrip(":") for l in proc.stderr.splitlines()
            if l.startswith("compile stage ")] == [
        "mlir-passes", "llvm-translate", "llvm-optimize", "llvm-codegen", "link"]
    # Dumps of another device have their own directory.
    assert (dump / "step.fixture" / "00-input.mlir").exists()
    assert not (dump / "step").exists()
    # --emit=mlir is the target pipeline's output; the LLVM stages are the
    # cpu target's, refused for a target whose serializer names none.
    out = te_run.tmp / "step.lowered.mlir"
    te_run(program, "--backend=fixture", "--emit=mlir", "-o", out, env=env)
    assert "llvm.func @step(" in out.read_text() and "te.amax" not in out.read_text()
    proc = te_run(program, "--backend=fixture", "--emit=obj", "-o",
                  te_run.tmp / "x.o", env=env, check=False)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"te-run: error: {program}: device 'fixture' is compiled by target "
        "fixture (plugin fixture_target 2.1), which cannot stop at 'obj'; it "
        "can emit mlir, module\n")


def test_target_errors_name_the_file_not_line_zero(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs", "--backend", "fixture",
                  "--runtime-plugin", DEVICE, check=False,
                  env={"NVTE_PLUGIN": str(SERIALIZE_FAILS)})
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"te-run: error: {program}: fixture assembler: out of "
                        "registers"), proc.stderr
    assert ":0:0:" not in proc.stderr
