"""te-run --explain alone: the lowering table without running anything."""
PROGRAM = """
func.func @f(%x: tensor<16xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<16xf32> -> tensor<f32>
  return %a : tensor<f32>
}
"""


def test_explain_needs_no_inputs(te_run):
    """Before, --explain went on to run the program and failed for want of
    inputs after printing the table."""
    proc = te_run(te_run.program(PROGRAM), "--explain")
    assert proc.returncode == 0
    assert "cpu (native)" in proc.stdout
    # Nothing ran: no cache outcome, no results.
    assert "cache:" not in proc.stderr and not list(te_run.tmp.glob("out*"))


def test_explain_for_cuda_needs_no_gpu(te_run):
    """The cuda table without a GPU or driver: the compiler is asked, no
    device is opened."""
    env = {"TE_CUDA_DRIVER": "/nonexistent/libcuda.so.1",
           "TE_CUDA_ARCH": "sm_90a"}
    proc = te_run(te_run.program(PROGRAM), "--backend", "cuda", "--explain",
                  env=env)
    assert proc.returncode == 0, proc.stderr
    assert "cuda (native)" in proc.stdout


def test_explain_alone_fails_when_an_op_has_no_lowering(te_run):
    program = te_run.program("""
te.process_group @tp size 2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %y = te.all_reduce %d group @tp : tensor<?xf32>
  %s = tensor.cast %y : tensor<?xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}""")
    proc = te_run(program, "--explain", check=False)
    assert proc.returncode == 2
    assert "none: te.all_reduce with dynamic shapes cannot run yet" in proc.stdout


def test_explain_with_inputs_still_runs(te_run):
    proc = te_run(te_run.program(PROGRAM), "--explain", "--random-inputs")
    assert "cpu (native)" in proc.stdout and "cache: miss" in proc.stderr
