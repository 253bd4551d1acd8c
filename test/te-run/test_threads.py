"""Host kernels on several threads: the same results at every thread count,
and the thread count's settings (--threads, TE_NUM_THREADS)."""
import numpy as np
import pytest

from test_cli import error_of

# Programs whose kernels have parallel loops: the blocked and the per-row
# attention forward (a bias tensor takes the per-row path), the per-row
# backward (GQA, dbias broadcast over the batch) and the blocked one, and the
# FP8 quantizations.
PROGRAMS = {
    "attention": """
func.func @f(%q: tensor<2x200x4x32xbf16>, %k: tensor<2x150x2x32xbf16>,
             %v: tensor<2x150x2x32xbf16>)
    -> (tensor<2x200x4x32xbf16>, tensor<2x4x200x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal_bottom_right {return_lse}
      : (tensor<2x200x4x32xbf16>, tensor<2x150x2x32xbf16>, tensor<2x150x2x32xbf16>)
      -> (tensor<2x200x4x32xbf16>, tensor<2x4x200x1xf32>)
  return %o, %lse : tensor<2x200x4x32xbf16>, tensor<2x4x200x1xf32>
}""",
    "attention_bias": """
func.func @f(%q: tensor<2x4x100x16xf32>, %k: tensor<2x4x90x16xf32>,
             %v: tensor<2x4x90x16xf32>, %bias: tensor<1x4x100x90xf32>)
    -> tensor<2x4x100x16xf32> {
  %o = te.attention %q, %k, %v layout bhsd mask no_mask bias post_scale bias_tensor(%bias)
      : (tensor<2x4x100x16xf32>, tensor<2x4x90x16xf32>, tensor<2x4x90x16xf32>,
         tensor<1x4x100x90xf32>) -> tensor<2x4x100x16xf32>
  return %o : tensor<2x4x100x16xf32>
}""",
    "attention_backward": """
func.func @f(%q: tensor<3x70x4x16xf32>, %k: tensor<3x70x2x16xf32>,
             %v: tensor<3x70x2x16xf32>, %o: tensor<3x70x4x16xf32>,
             %do: tensor<3x70x4x16xf32>, %lse: tensor<3x4x70x1xf32>,
             %bias: tensor<1x4x70x70xf32>)
    -> (tensor<3x70x4x16xf32>, tensor<3x70x2x16xf32>, tensor<3x70x2x16xf32>,
        tensor<1x4x70x70xf32>) {
  %dq, %dk, %dv, %dbias = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal bias pre_scale bias_tensor(%bias)
      : (tensor<3x70x4x16xf32>, tensor<3x70x2x16xf32>, tensor<3x70x2x16xf32>,
         tensor<3x70x4x16xf32>, tensor<3x70x4x16xf32>, tensor<3x4x70x1xf32>,
         tensor<1x4x70x70xf32>)
      -> (tensor<3x70x4x16xf32>, tensor<3x70x2x16xf32>, tensor<3x70x2x16xf32>,
          tensor<1x4x70x70xf32>)
  return %dq, %dk, %dv, %dbias : tensor<3x70x4x16xf32>, tensor<3x70x2x16xf32>,
      tensor<3x70x2x16xf32>, tensor<1x4x70x70xf32>
}""",
    "attention_backward_blocked": """
func.func @f(%q: tensor<2x75x4x24xbf16>, %k: tensor<2x70x2x24xbf16>,
             %v: tensor<2x70x2x24xbf16>, %o: tensor<2x75x4x24xbf16>,
             %do: tensor<2x75x4x24xbf16>, %lse: tensor<2x4x75x1xf32>)
    -> (tensor<2x75x4x24xbf16>, tensor<2x70x2x24xbf16>, tensor<2x70x2x24xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal_bottom_right window [20, 0]
      : (tensor<2x75x4x24xbf16>, tensor<2x70x2x24xbf16>, tensor<2x70x2x24xbf16>,
         tensor<2x75x4x24xbf16>, tensor<2x75x4x24xbf16>, tensor<2x4x75x1xf32>)
      -> (tensor<2x75x4x24xbf16>, tensor<2x70x2x24xbf16>, tensor<2x70x2x24xbf16>)
  return %dq, %dk, %dv
      : tensor<2x75x4x24xbf16>, tensor<2x70x2x24xbf16>, tensor<2x70x2x24xbf16>
}""",
    "mxfp8": """
func.func @f(%x: tensor<512x256xbf16>)
    -> (tensor<512x256xf8E4M3FN>, tensor<512x8xf8E8M0FNU>) {
  %d, %s = te.quantize %x mode mxfp8_1x32 usage rowwise
      : tensor<512x256xbf16> -> tensor<512x256xf8E4M3FN>, tensor<512x8xf8E8M0FNU>
  return %d, %s : tensor<512x256xf8E4M3FN>, tensor<512x8xf8E8M0FNU>
}""",
    "per_tensor": """
func.func @f(%x: tensor<512x384xf32>, %scale: tensor<f32>)
    -> (tensor<512x384xf8E4M3FN>, tensor<384x512xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %t, %si, %amax = te.quantize %x scale(%scale) mode per_tensor usage both
      : tensor<512x384xf32>, tensor<f32>
      -> tensor<512x384xf8E4M3FN>, tensor<384x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %t, %si, %amax
      : tensor<512x384xf8E4M3FN>, tensor<384x512xf8E4M3FN>, tensor<f32>, tensor<f32>
}""",
}


def outputs(te_run, program, *args, env=None):
    out = te_run.tmp / f"out{te_run.count}"
    te_run.count += 1
    te_run(program, "--random-inputs", "--seed", "3", "--output-dir", out, *args,
           env=env)
    return [np.load(out / f"out{i}.npy") for i in range(len(list(out.glob("out*.npy"))))]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_results_do_not_depend_on_the_thread_count(te_run, name):
    """Every element is computed by one thread in the same order: the results
    are bit for bit those of one thread, for --threads and TE_NUM_THREADS."""
    program = te_run.program(PROGRAMS[name])
    one = outputs(te_run, program, "--threads", "1")
    for got in (outputs(te_run, program, "--threads", "3"),
                outputs(te_run, program, env={"TE_NUM_THREADS": "2"})):
        assert len(got) == len(one)
        for a, b in zip(one, got):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), name


def test_kernels_have_parallel_loops(te_run):
    """The attention kernel's tiles run in OpenMP regions whose thread count
    the library's te_kernel_set_num_threads sets."""
    program = te_run.program(PROGRAMS["attention"])
    llvm = te_run.tmp / "kernel.ll"
    te_run(program, "--emit=llvm", "-o", llvm)
    text = llvm.read_text()
    assert "@__kmpc_fork_call" in text
    assert "@__kmpc_push_num_threads" in text
    assert "define void @te_kernel_set_num_threads(i32" in text


def test_bad_thread_counts(te_run):
    program = te_run.program(PROGRAMS["mxfp8"])
    line = error_of(te_run(program, "--random-inputs", "--threads", "0", check=False))
    assert "--threads needs a count from 1 to 4096, got 0" in line
    line = error_of(te_run(program, "--random-inputs", "--threads", "5000", check=False))
    assert "--threads" in line and "4096" in line
    proc = te_run(program, "--random-inputs", env={"TE_NUM_THREADS": "lots"})
    assert ("te-mlir: ignoring TE_NUM_THREADS='lots': not a whole number from 1 to "
            "4096; using") in proc.stderr
