"""Compiles that LLVM cannot finish raise te_mlir.CompileError, and the
interpreter goes on: an LLVM fatal error (here: an NVVM intrinsic in host
code, which the x86 code generator cannot select) and a temporary object
file that cannot be written used to end the process with status 1 and no
exception. Each runs in a child interpreter (the file-size limit is the
child's own)."""

import os
import subprocess
import sys
import textwrap

import pytest

resource = pytest.importorskip("resource")

NVVM_IN_HOST_CODE = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %c = arith.sitofp %t : i32 to f32
  %i = arith.constant 0 : index
  %e = tensor.insert %c into %x[%i] : tensor<4xf32>
  return %e : tensor<4xf32>
}
"""

GOOD = """
func.func @g(%x: tensor<4xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<4xf32> -> tensor<f32>
  return %a : tensor<f32>
}
"""

CHILD = textwrap.dedent("""
    import resource, signal, sys
    import numpy as np
    import te_mlir
    if sys.argv[3] == "limit":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, hard))
    try:
        te_mlir.compile(sys.argv[1], name="bad.mlir")
        print("compiled")
    except te_mlir.CompileError as error:
        print("raised:", str(error).replace("\\n", " | "))
    if sys.argv[3] == "limit":
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    # The compiler and the runtime still work in this process.
    module = te_mlir.compile(sys.argv[2], name="good.mlir")
    (amax,) = module(np.array([1, -5, 2, 0], np.float32))
    print("after:", float(np.asarray(amax)))
""")


def run_child(tmp_path, program, mode):
    env = dict(os.environ, TE_CACHE_DISABLE="1", TMPDIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-c", CHILD, program, GOOD, mode],
        capture_output=True, text=True, env=env, timeout=300)


def test_an_llvm_fatal_error_raises_compile_error(tmp_path):
    proc = run_child(tmp_path, NVVM_IN_HOST_CODE, "none")
    assert proc.returncode == 0, proc.stderr
    assert "LLVM ERROR" not in proc.stderr
    assert ("raised: error: LLVM failed while compiling: Cannot select: "
            "intrinsic %llvm.nvvm.read.ptx.sreg.tid.x") in proc.stdout
    assert "after: 5.0" in proc.stdout


def test_an_unwritable_object_file_raises_compile_error(tmp_path):
    proc = run_child(tmp_path, GOOD, "limit")
    assert proc.returncode == 0, proc.stderr
    assert "LLVM ERROR" not in proc.stderr
    assert "raised:" in proc.stdout and \
        "cannot write the temporary object file" in proc.stdout
    assert "after: 5.0" in proc.stdout
    # Nothing left in TMPDIR.
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
