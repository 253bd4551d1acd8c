"""te-run on inputs that once crashed or aborted it: zero-size problems,
outputs that cannot be written, inline assembly, and a CUDA compile whose
kernel deduplication read a freed op. Each must compute or fail with a
clear error and a status, never a signal."""
import os
import shutil
import signal
import subprocess

import numpy as np
import pytest

import host_cpu
from conftest import ROOT

EXAMPLES = ROOT / "examples"
PTXAS = os.path.join(os.environ.get("TE_CUDA_PATH", "/usr/local/cuda"),
                     "bin", "ptxas")


def error_lines(proc):
    return [line for line in proc.stderr.splitlines() if "error" in line]


def assert_clean_failure(proc):
    """A non-zero status (not a signal), an error, and no LLVM abort."""
    assert proc.returncode > 0, proc.stderr
    assert "LLVM ERROR" not in proc.stderr
    assert "Stack dump" not in proc.stderr
    assert error_lines(proc), proc.stderr


# --- zero-size problems -----------------------------------------------------

# Kernels take and return tensors with at least one element (the kernel
# ABI says so with a clear error), so the empty problems below arise inside
# the program, from zero-size slices of its arguments, as an empty
# micro-batch does.

def ttype(shape, dtype):
    return "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"


def sliced(name, full, shape, dtype):
    zeros = ", ".join("0" * len(shape))
    ones = ", ".join(["1"] * len(shape))
    sizes = ", ".join(map(str, shape))
    return (f"  %{name}s = tensor.extract_slice %{name}[{zeros}] [{sizes}] "
            f"[{ones}] : {ttype(full, dtype)} to {ttype(shape, dtype)}\n")


def test_zero_size_helpers_agree():
    assert sliced("q", (2, 3), (2, 0), "f32") == (
        "  %qs = tensor.extract_slice %q[0, 0] [2, 0] [1, 1] : "
        "tensor<2x3xf32> to tensor<2x0xf32>\n")


@pytest.mark.parametrize("q,kv", [
    ((2, 0, 4, 8), (2, 6, 4, 8)),    # no queries
    ((0, 5, 4, 8), (0, 6, 4, 8)),    # no batch entries
    ((2, 5, 0, 8), (2, 6, 1, 8)),    # no query heads
    ((2, 0, 4, 8), (2, 0, 4, 8)),    # neither queries nor keys
])
@pytest.mark.parametrize("mask", ["no_mask", "causal", "causal_bottom_right"])
@pytest.mark.parametrize("reference", [False, True])
def test_attention_without_rows_runs(te_run, q, kv, mask, reference):
    full_q, full_kv = (2, 5, 4, 8), (2, 6, 4, 8)
    lse = (q[0], q[2], q[1], 1)
    program = te_run.program(f"""
func.func @f(%q: {ttype(full_q, "f32")}, %k: {ttype(full_kv, "f32")},
             %v: {ttype(full_kv, "f32")}) -> {ttype(full_q, "f32")} {{
{sliced("q", full_q, q, "f32")}{sliced("k", full_kv, kv, "f32")}\
{sliced("v", full_kv, kv, "f32")}
  %o, %lse = te.attention %qs, %ks, %vs layout bshd mask {mask} {{return_lse}}
      : ({ttype(q, "f32")}, {ttype(kv, "f32")}, {ttype(kv, "f32")})
      -> ({ttype(q, "f32")}, {ttype(lse, "f32")})
  %r = tensor.insert_slice %o into %q[0, 0, 0, 0] [{", ".join(map(str, q))}]
      [1, 1, 1, 1] : {ttype(q, "f32")} into {ttype(full_q, "f32")}
  return %r : {ttype(full_q, "f32")}
}}
""")
    x = np.arange(np.prod(full_q), dtype=np.float32).reshape(full_q)
    kv_in = np.ones(full_kv, np.float32)
    (r,) = te_run.run_kernel(program, [x, kv_in, kv_in])
    np.testing.assert_array_equal(r, x)
    if reference:
        te_run(program, "--random-inputs", "--check")


@pytest.mark.parametrize("softmax,expected", [
    ("vanilla", -np.inf), ("off_by_one", 0.0), ("learnable", None)])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_attention_without_keys_is_zero_with_the_empty_rows_lse(
        te_run, softmax, expected, dtype):
    q, full_kv, kv = (2, 3, 4, 8), (2, 6, 4, 8), (2, 0, 4, 8)
    lse = (2, 4, 3, 1)
    alpha_arg = ", %alpha: tensor<1x4x1x1xf32>" if expected is None else ""
    alpha_op = " softmax_offset(%alpha)" if expected is None else ""
    alpha_type = ", tensor<1x4x1x1xf32>" if expected is None else ""
    program = te_run.program(f"""
func.func @f(%q: {ttype(q, dtype)}, %k: {ttype(full_kv, dtype)},
             %v: {ttype(full_kv, dtype)}{alpha_arg})
    -> ({ttype(q, dtype)}, {ttype(lse, "f32")}) {{
{sliced("k", full_kv, kv, dtype)}{sliced("v", full_kv, kv, dtype)}
  %o, %lse = te.attention %q, %ks, %vs layout bshd mask causal
      softmax {softmax}{alpha_op} {{return_lse}}
      : ({ttype(q, dtype)}, {ttype(kv, dtype)}, {ttype(kv, dtype)}{alpha_type})
      -> ({ttype(q, dtype)}, {ttype(lse, "f32")})
  return %o, %lse : {ttype(q, dtype)}, {ttype(lse, "f32")}
}}
""")
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(q, dtype=np.float32),
              rng.standard_normal(full_kv, dtype=np.float32),
              rng.standard_normal(full_kv, dtype=np.float32)]
    alpha = np.array([0.5, -1.0, 2.0, 0.0], np.float32).reshape(1, 4, 1, 1)
    if expected is None:
        inputs.append(alpha)
        expected = np.broadcast_to(alpha, lse)
    o, l = te_run.run_kernel(program, inputs, outputs_f32=True)
    assert o.shape == q and np.all(o == 0)
    np.testing.assert_array_equal(l, np.broadcast_to(expected, lse))
    te_run(program, "--random-inputs", "--check")


def test_thd_without_key_tokens(te_run):
    program = te_run.program(f"""
func.func @f(%q: tensor<5x4x8xf32>, %k: tensor<3x4x8xf32>,
             %v: tensor<3x4x8xf32>, %cq: tensor<3xi32>, %ckv: tensor<3xi32>)
    -> (tensor<5x4x8xf32>, tensor<5x4x1xf32>) {{
{sliced("k", (3, 4, 8), (0, 4, 8), "f32")}{sliced("v", (3, 4, 8), (0, 4, 8), "f32")}
  %o, %lse = te.attention %q, %ks, %vs layout thd mask padding
      cu_seqlens(%cq, %ckv) {{return_lse}}
      : (tensor<5x4x8xf32>, tensor<0x4x8xf32>, tensor<0x4x8xf32>,
         tensor<3xi32>, tensor<3xi32>) -> (tensor<5x4x8xf32>, tensor<5x4x1xf32>)
  return %o, %lse : tensor<5x4x8xf32>, tensor<5x4x1xf32>
}}
""")
    o, lse = te_run.run_kernel(
        program, [np.ones((5, 4, 8), np.float32), np.ones((3, 4, 8), np.float32),
                  np.ones((3, 4, 8), np.float32),
                  np.array([0, 2, 5], np.int32), np.zeros(3, np.int32)])
    assert np.all(o == 0) and np.all(lse == -np.inf)


def test_backward_without_queries_has_zero_gradients(te_run):
    program = te_run.program(f"""
func.func @f(%q: tensor<2x3x4x8xf32>, %k: tensor<2x6x4x8xf32>,
             %v: tensor<2x6x4x8xf32>, %lse: tensor<2x4x3x1xf32>)
    -> (tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>) {{
{sliced("q", (2, 3, 4, 8), (2, 0, 4, 8), "f32")}\
{sliced("lse", (2, 4, 3, 1), (2, 4, 0, 1), "f32")}
  %dq, %dk, %dv = te.attention_backward %qs, %k, %v, %qs, %qs, %lses
      layout bshd mask causal
      : (tensor<2x0x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>,
         tensor<2x0x4x8xf32>, tensor<2x0x4x8xf32>, tensor<2x4x0x1xf32>)
      -> (tensor<2x0x4x8xf32>, tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>)
  return %dk, %dv : tensor<2x6x4x8xf32>, tensor<2x6x4x8xf32>
}}
""")
    rng = np.random.default_rng(0)
    dk, dv = te_run.run_kernel(
        program, [rng.standard_normal((2, 3, 4, 8), dtype=np.float32),
                  rng.standard_normal((2, 6, 4, 8), dtype=np.float32),
                  rng.standard_normal((2, 6, 4, 8), dtype=np.float32),
                  np.zeros((2, 4, 3, 1), np.float32)])
    assert np.all(dk == 0) and np.all(dv == 0)
    te_run(program, "--random-inputs", "--check")


def test_amax_of_an_empty_tensor_is_zero(te_run):
    program = te_run.program(f"""
func.func @f(%x: tensor<2x16xbf16>) -> tensor<f32> {{
{sliced("x", (2, 16), (0, 16), "bf16")}
  %a = te.amax %xs : tensor<0x16xbf16> -> tensor<f32>
  return %a : tensor<f32>
}}
""")
    (amax,) = te_run.run_kernel(program, [np.full((2, 16), 3, np.float32)])
    assert amax.shape == () and amax == 0


def test_zero_size_arguments_are_refused_by_the_kernel_abi(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<0x16xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<0x16xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
""")
    proc = te_run(program, "--random-inputs", check=False)
    assert_clean_failure(proc)
    assert "with no elements; kernels take and return tensors" in proc.stderr


# --- kernels for another processor ------------------------------------------

# TE_CPU_ARCH compiles for a processor other than the host. Where the host
# lacks its features, the runtime refuses the library and names them
# (te/ABI/HostFeatures.h): its code would stop at an illegal instruction.
@pytest.mark.skipif(not host_cpu.X86, reason="TE_CPU_ARCH names here are x86's")
@pytest.mark.parametrize("arch,first_missing", [
    ("x86-64-v4", "avx512f"), ("sapphirerapids", "amx_tile")])
def test_kernels_for_another_processor_are_refused(te_run, arch, first_missing):
    if host_cpu.runs_here(arch):
        pytest.skip(f"this host runs {arch} code")
    if first_missing in host_cpu.host_flags():
        first_missing = sorted(host_cpu.ARCH_FLAGS[arch] -
                               host_cpu.host_flags())[0]
    program = te_run.program("""
func.func @f(%a: tensor<40x64xbf16>, %b: tensor<24x64xbf16>) -> tensor<40x24xbf16> {
  %d = te.scaled_matmul %a, %b transpose_b : tensor<40x64xbf16>, tensor<24x64xbf16> -> tensor<40x24xbf16>
  return %d : tensor<40x24xbf16>
}
""")
    proc = te_run(program, "--random-inputs", env={"TE_CPU_ARCH": arch},
                  check=False)
    assert_clean_failure(proc)
    assert "processor features this process cannot use" in proc.stderr
    assert "illegal instruction" in proc.stderr
    # LLVM's names of Linux's flags: amx_tile is amx-tile, avx512_bf16
    # avx512bf16.
    llvm_name = first_missing.replace("avx512_", "avx512").replace("_", "-")
    assert llvm_name in proc.stderr, proc.stderr
    # On this host the same program runs.
    te_run(program, "--random-inputs")


def test_head_dimension_zero_is_refused_by_the_verifier(te_run):
    program = te_run.program("""
func.func @f(%q: tensor<2x4x4x0xf32>, %k: tensor<2x4x4x0xf32>,
             %v: tensor<2x4x4x0xf32>) -> tensor<2x4x4x0xf32> {
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<2x4x4x0xf32>, tensor<2x4x4x0xf32>, tensor<2x4x4x0xf32>)
      -> tensor<2x4x4x0xf32>
  return %o : tensor<2x4x4x0xf32>
}
""")
    proc = te_run(program, "--random-inputs", check=False)
    assert_clean_failure(proc)
    assert "head dimensions d_qk (0) and d_v (0) must be at least 1" in \
        proc.stderr


@pytest.mark.skipif(not os.access(PTXAS, os.X_OK), reason="no ptxas")
def test_zero_size_attention_compiles_for_cuda(te_run):
    program = te_run.program(f"""
func.func @f(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x6x4x8xbf16>,
             %v: tensor<2x6x4x8xbf16>) -> tensor<2x5x4x8xbf16> {{
{sliced("k", (2, 6, 4, 8), (2, 0, 4, 8), "bf16")}\
{sliced("v", (2, 6, 4, 8), (2, 0, 4, 8), "bf16")}
  %o = te.attention %q, %ks, %vs layout bshd
      : (tensor<2x5x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>)
      -> tensor<2x5x4x8xbf16>
  return %o : tensor<2x5x4x8xbf16>
}}
""")
    out = te_run.tmp / "k.ptx"
    te_run(program, "--backend", "cuda", "--emit=ptx", "-o", out,
           env={"TE_CUDA_ARCH": "sm_90a"})
    assert out.stat().st_size > 0


# --- outputs that cannot be written -----------------------------------------

@pytest.mark.parametrize("kind", ["asm", "obj", "llvm", "mlir"])
def test_emit_to_a_full_device_is_an_error(te_run, kind):
    proc = te_run(EXAMPLES / "attention_forward.mlir", f"--emit={kind}",
                  "-o", "/dev/full", check=False)
    assert_clean_failure(proc)
    assert "/dev/full" in proc.stderr and "No space left" in proc.stderr


def limited_file_size(blocks):
    """A preexec function: files larger than `blocks` KiB cannot be
    written, and writing past the limit fails instead of killing."""
    def apply():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (blocks * 1024, blocks * 1024))
    return apply


def test_temporary_object_file_that_cannot_be_written(te_run):
    tmp = te_run.tmp / "scratch"
    tmp.mkdir()
    env = dict(te_run.env, TE_CACHE_DISABLE="1", TMPDIR=str(tmp))
    proc = subprocess.run(
        [os.environ.get("TE_RUN", str(ROOT / "build/bin/te-run")),
         str(EXAMPLES / "fp8_current_scaling.mlir"), "--random-inputs"],
        capture_output=True, text=True, env=env, timeout=300,
        preexec_fn=limited_file_size(4))
    assert_clean_failure(proc)
    assert "cannot write the temporary object file" in proc.stderr
    # Nothing left behind.
    assert not [p for p in tmp.rglob("*") if p.is_file()], list(tmp.rglob("*"))


def test_an_llvm_fatal_error_is_a_compile_error(te_run):
    # x86 cannot select an NVVM intrinsic: LLVM reports it as a fatal
    # error, which the compiler turns into this compile's error.
    program = te_run.program("""
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %c = arith.sitofp %t : i32 to f32
  %i = arith.constant 0 : index
  %e = tensor.insert %c into %x[%i] : tensor<4xf32>
  return %e : tensor<4xf32>
}
""")
    for args in (["--random-inputs"], ["--emit=obj", "-o", te_run.tmp / "o"]):
        proc = te_run(program, *args, check=False)
        assert_clean_failure(proc)
        assert "LLVM failed while compiling: Cannot select: intrinsic " \
            "%llvm.nvvm.read.ptx.sreg.tid.x" in proc.stderr
    assert not (te_run.tmp / "o").exists()


# --- inline assembly --------------------------------------------------------

def test_inline_assembly_is_refused_where_it_is_written(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<4xf32>) -> tensor<f32> {
  llvm.inline_asm has_side_effects "nop", "" : () -> ()
  %a = te.amax %x : tensor<4xf32> -> tensor<f32>
  return %a : tensor<f32>
}
""")
    for args in (["--random-inputs"], ["--emit=obj", "-o", te_run.tmp / "o"]):
        proc = te_run(program, *args, check=False)
        assert_clean_failure(proc)
        assert f"{program}:3:3" in proc.stderr
        assert "inline assembly cannot be compiled for the host" in proc.stderr
    # The LLVM IR stage still shows it.
    te_run(program, "--emit=llvm", "-o", te_run.tmp / "x.ll")
    assert "asm sideeffect" in (te_run.tmp / "x.ll").read_text()


# --- a CUDA compile that deduplicates kernels -------------------------------

@pytest.mark.skipif(not os.access(PTXAS, os.X_OK), reason="no ptxas")
def test_ring_attention_for_cuda_ends_without_a_signal(te_run):
    # The ring's identical attention steps share one kernel module; the
    # duplicates' kernels were read after they were erased. glibc's
    # MALLOC_PERTURB_ fills freed memory, so such a read crashes in every
    # run instead of one in ten.
    env = {"TE_CUDA_ARCH": "sm_80", "MALLOC_PERTURB_": "165"}
    for _ in range(3):
        proc = te_run(EXAMPLES / "ring_attention.mlir", "--backend", "cuda",
                      "--emit=cubin", "-o", te_run.tmp / "x.cubin", env=env,
                      check=False)
        assert proc.returncode >= 0, proc.stderr
        assert "Stack dump" not in proc.stderr
