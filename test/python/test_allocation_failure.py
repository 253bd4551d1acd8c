"""A kernel whose temporary cannot be allocated raises te_mlir's
DeviceError (TE_ERROR_OUT_OF_MEMORY, with the size and the op's location)
and the interpreter goes on; it used to die of SIGSEGV inside the kernel.
The memory limit (RLIMIT_AS) is set in a child interpreter only."""

import os
import subprocess
import sys
import textwrap

import pytest

resource = pytest.importorskip("resource")

# 2 GB of address space holds the interpreter, numpy, the JIT and LLVM, but
# not the kernel's 4 GiB temporary.
LIMIT = 2_000_000_000

PROGRAM = """
func.func @large_temporary(%x: tensor<f32>) -> tensor<f32> {
  %empty = tensor.empty() : tensor<1073741824xf32>
  %value = tensor.extract %x[] : tensor<f32>
  %filled = linalg.fill ins(%value : f32) outs(%empty : tensor<1073741824xf32>) -> tensor<1073741824xf32>
  %amax = te.amax %filled : tensor<1073741824xf32> -> tensor<f32>
  return %amax : tensor<f32>
}
"""

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import te_mlir
    from te_mlir.errors import DeviceError
    module = te_mlir.compile(sys.argv[1], name="large.mlir")
    try:
        module(np.array(-3.0, np.float32))
    except DeviceError as error:
        print("raised:", error)
    # The interpreter and the runtime still work.
    print("after:", float(np.float32(2) * 3))
    """)


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_failed_temporary_raises_device_error(tmp_path):
    env = dict(os.environ, TE_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", CHILD, PROGRAM], env=env,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=limit_address_space)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "raised:" in proc.stdout, output
    assert "TE_ERROR_OUT_OF_MEMORY" in proc.stdout, output
    assert "4294967360 bytes" in proc.stdout, output
    assert "large.mlir:3:12" in proc.stdout, output
    assert "after: 6.0" in proc.stdout, output
