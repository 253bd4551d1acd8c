"""te-run's command line: outputs, summaries and one-line errors (exit 2)."""
import numpy as np
import pytest

PROGRAM = """
func.func @scale_up(%x: tensor<8xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<8xf32> -> tensor<f32>
  return %a : tensor<f32>
}
"""
TWO_ENTRIES = PROGRAM + """
func.func @other(%x: tensor<4xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<4xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
"""


def error_of(proc):
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("te-run: error:")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Stack dump" not in proc.stderr
    return lines[0]


def test_runs_and_summarizes(te_run):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.array([1, -9.5, 3, 0, 2, 1, 1, 1], np.float32))
    proc = te_run(program, "--input", x)
    assert "@scale_up: 1 inputs, 1 outputs" in proc.stdout
    assert "out0: f32[]  min 9.5  max 9.5" in proc.stdout
    assert "compile:" in proc.stderr and "cache: miss" in proc.stderr


def test_random_inputs_are_deterministic(te_run):
    program = te_run.program(PROGRAM)
    a = te_run(program, "--random-inputs", "--seed", "5").stdout
    b = te_run(program, "--random-inputs", "--seed", "5").stdout
    c = te_run(program, "--random-inputs", "--seed", "6").stdout
    assert a == b and a != c


def test_bench_reports_times(te_run):
    program = te_run.program(PROGRAM)
    out = te_run(program, "--random-inputs", "--bench", "5").stdout
    assert "bench: 5 runs  min" in out and "median" in out and "GB/s" in out


def test_entry_selection(te_run):
    program = te_run.program(TWO_ENTRIES)
    line = error_of(te_run(program, "--random-inputs", check=False))
    assert "several entry functions (scale_up, other)" in line
    assert "@other" in te_run(program, "--entry", "other", "--random-inputs").stdout
    line = error_of(te_run(program, "--entry", "nope", "--random-inputs", check=False))
    assert "unknown entry" in line and "nope" in line


def test_missing_file(te_run):
    line = error_of(te_run(te_run.tmp / "absent.mlir", check=False))
    assert "cannot read" in line and "absent.mlir" in line


def test_bad_ir(te_run):
    program = te_run.program("func.func @f( {")
    line = error_of(te_run(program, check=False))
    assert "error:" in line and str(program) in line


def test_invalid_op_is_a_verifier_error(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<8xf32>) -> tensor<f32> {
  %s = te.compute_scale %x fp8_type f8E4M3FN : tensor<8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}""")
    line = error_of(te_run(program, check=False))
    assert "te.compute_scale" in line


def test_wrong_input_dtype(te_run):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.arange(8, dtype=np.int32))
    line = error_of(te_run(program, "--input", x, check=False))
    assert "i32" in line and "f32" in line


def test_wrong_input_shape(te_run):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.zeros(9, np.float32))
    line = error_of(te_run(program, "--input", x, check=False))
    assert "must be f32[8]" in line and "f32[9]" in line


def test_missing_input_file(te_run):
    program = te_run.program(PROGRAM)
    line = error_of(te_run(program, "--input", te_run.tmp / "nope.npy", check=False))
    assert "nope.npy" in line


def test_input_count(te_run):
    program = te_run.program(PROGRAM)
    x = te_run.array(np.zeros(8, np.float32))
    line = error_of(te_run(program, "--input", x, "--input", x, check=False))
    assert "takes 1 inputs, got 2" in line
    line = error_of(te_run(program, check=False))
    assert "--random-inputs" in line


@pytest.mark.parametrize("args,needle", [
    (["--bench", "x"], "--bench expects a non-negative integer"),
    (["--backend", "tpu"], "cannot open the tpu device: te_device_open: no device named 'tpu' is registered"),
    (["--backend", ""], "--backend needs a device name"),
    (["--runtime-plugin="], "--runtime-plugin= needs a list of runtime plugins"),
    (["--frobnicate"], "unknown option --frobnicate"),
    (["--seed"], "--seed needs a value"),
])
def test_bad_options(te_run, args, needle):
    program = te_run.program(PROGRAM)
    assert needle in error_of(te_run(program, *args, check=False))


def test_outputs_as_raw_bits_or_f32(te_run):
    program = te_run.program("""
func.func @q(%x: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<4xf32>, tensor<f32> -> tensor<4xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<4xf8E4M3FN>, tensor<f32>, tensor<f32>
}""")
    inputs = [np.array([1, 2, 448, 1000], np.float32), np.array(1, np.float32)]
    raw = te_run.run_kernel(program, inputs)[0]
    f32 = te_run.run_kernel(program, inputs, outputs_f32=True)[0]
    assert raw.dtype == np.uint8 and list(raw) == [0x38, 0x40, 0x7E, 0x7E]
    assert f32.dtype == np.float32 and list(f32) == [1, 2, 448, 448]


def test_explain_names_the_backend_of_each_op(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--explain", "--random-inputs")
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert rows[0] == ["op", "location", "backend", "declined", "/", "notes"]
    assert rows[1][0] == "te.amax" and rows[1][1] == f"{program}:3:8"
    # No plugin asked: the notes column is "-".
    assert " ".join(rows[1][2:]) == "cpu (native) -"


def test_explain_says_why_an_op_is_not_lowered(te_run):
    program = te_run.program("""
te.process_group @tp size 2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.all_reduce %x group @tp : tensor<4xf32>
  return %y : tensor<4xf32>
}""")
    proc = te_run(program, "--explain", "--random-inputs", check=False)
    assert "te.all_reduce" in proc.stdout
    assert "none: te.all_reduce has no CPU lowering yet" in proc.stdout
    assert proc.returncode == 2
    assert "te.all_reduce has no CPU lowering yet" in error_of(proc)


@pytest.mark.parametrize("text,needle", [
    ("func.func private @f(%x: tensor<4xf32>) -> tensor<f32>\n",
     "no public function to compile"),
    ("func.func @f(%x: tensor<0x4xf32>) -> tensor<f32> {\n"
     "  %a = te.amax %x : tensor<0x4xf32> -> tensor<f32>\n"
     "  return %a : tensor<f32>\n}\n", "with no elements"),
    ("func.func @f(%x: tensor<?xf32>) -> tensor<f32> {\n"
     "  %a = te.amax %x : tensor<?xf32> -> tensor<f32>\n"
     "  return %a : tensor<f32>\n}\n", "statically shaped tensors"),
    ("func.func @f(%x: i32) -> i32 {\n  return %x : i32\n}\n",
     "statically shaped tensors"),
])
def test_signatures_that_cannot_be_kernels(te_run, text, needle):
    program = te_run.program(text)
    line = error_of(te_run(program, "--random-inputs", check=False))
    assert needle in line
