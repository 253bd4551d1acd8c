"""te-run's command line: outputs, summaries and one-line errors (exit 2)."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import TE_RUN

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
    assert line == f"te-run: error: {x}: argument 0 must be f32 8, got f32 9"


def test_wrong_input_shape_names_the_files_own_dtype(te_run):
    # The argument is bf16; the file is f32 (which would be rounded to bf16)
    # or raw bits: the message describes the file as it is.
    program = te_run.program(TWO_ENTRIES)
    x = te_run.array(np.zeros((2, 2), np.float32))
    line = error_of(te_run(program, "--entry", "other", "--input", x, check=False))
    assert line == f"te-run: error: {x}: argument 0 must be bf16 4, got f32 2x2"
    bits = te_run.array(np.zeros(3, np.uint16))
    line = error_of(te_run(program, "--entry", "other", "--input", bits, check=False))
    assert line.endswith("must be bf16 4, got ui16 3")
    scalar = te_run.array(np.float64(1.0))
    line = error_of(te_run(program, "--entry", "other", "--input", scalar, check=False))
    assert line.endswith("must be bf16 4, got f64 scalar")


def test_missing_input_file(te_run):
    program = te_run.program(PROGRAM)
    line = error_of(te_run(program, "--input", te_run.tmp / "nope.npy", check=False))
    assert "nope.npy" in line


def test_inputs_that_are_not_regular_files(te_run):
    """A FIFO as --input would block te-run forever (opening one waits for a
    writer), and /dev/zero was reported as "an empty file": neither is a .npy
    file, and each is named for what it is, at once."""
    program = te_run.program(PROGRAM)
    fifo = te_run.tmp / "pipe.npy"
    os.mkfifo(fifo)
    line = error_of(te_run(program, "--input", fifo, check=False, timeout=20))
    assert line.endswith(f"{fifo}: cannot read: it is a FIFO (named pipe), not "
                         "a regular file; give a .npy file"), line
    line = error_of(te_run(program, "--input", "/dev/zero", check=False,
                           timeout=20))
    assert line.endswith("/dev/zero: cannot read: it is a character device, "
                         "not a regular file; give a .npy file"), line
    assert "empty" not in line
    line = error_of(te_run(program, "--input", te_run.tmp, check=False,
                           timeout=20))
    assert "it is a directory, not a .npy file" in line


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
    (["--seed"], "--seed needs a number"),
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
  %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %y = te.all_reduce %d group @tp : tensor<?xf32>
  %s = tensor.cast %y : tensor<?xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}""")
    proc = te_run(program, "--explain", "--random-inputs", check=False)
    assert "te.all_reduce" in proc.stdout
    assert "none: te.all_reduce with dynamic shapes cannot run yet" in proc.stdout
    assert proc.returncode == 2
    assert "te.all_reduce with dynamic shapes cannot run yet" in error_of(proc)


def test_explain_shows_collectives_as_native_calls(te_run):
    program = te_run.program("""
te.process_group @tp size 2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.all_reduce %x group @tp : tensor<4xf32>
  return %y : tensor<4xf32>
}""")
    proc = te_run(program, "--explain", "--emit=mlir", "-o", "-")
    row = next(line.split() for line in proc.stdout.splitlines()
               if line.startswith("te.all_reduce"))
    assert " ".join(row[2:]) == "cpu (native) -"


@pytest.mark.parametrize("text,needle", [
    ("func.func private @f(%x: tensor<4xf32>) -> tensor<f32>\n",
     "no public function to compile"),
    ("func.func @f(%x: tensor<0x4xf32>) -> tensor<f32> {\n"
     "  %a = te.amax %x : tensor<0x4xf32> -> tensor<f32>\n"
     "  return %a : tensor<f32>\n}\n", "with no elements"),
    # 2^64 elements wrap around to 0 in a 64-bit count: the size overflows.
    ("func.func @f(%x: tensor<4294967296x4294967296xbf16>) -> tensor<f32> {\n"
     "  %a = te.amax %x : tensor<4294967296x4294967296xbf16> -> tensor<f32>\n"
     "  return %a : tensor<f32>\n}\n",
     "argument 0 has type 'tensor<4294967296x4294967296xbf16>', whose size "
     "overflows: 4294967296 x 4294967296 elements of 2 bytes"),
    # 2^62 elements count, their 2^64 bytes do not.
    ("func.func @f(%x: tensor<2147483648x2147483648xf32>) -> tensor<f32> {\n"
     "  %a = te.amax %x : tensor<2147483648x2147483648xf32> -> tensor<f32>\n"
     "  return %a : tensor<f32>\n}\n", "whose size overflows"),
    ("func.func @f(%x: tensor<4xf32>) -> tensor<4294967296x4294967296xi8> {\n"
     "  %e = tensor.empty() : tensor<4294967296x4294967296xi8>\n"
     "  return %e : tensor<4294967296x4294967296xi8>\n}\n",
     "result 0 has type 'tensor<4294967296x4294967296xi8>', whose size "
     "overflows"),
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


# --- Options: --opt VALUE and --opt=VALUE, one error line for misuse ------

def both_forms(option, value):
    return [[option, str(value)], [f"{option}={value}"]]


@pytest.mark.parametrize("form", [0, 1])
def test_value_options_take_both_forms(te_run, form):
    program = te_run.program(TWO_ENTRIES)
    x = te_run.array(np.zeros(4, np.float32))
    out = te_run.tmp / f"out-{form}"
    args = [program,
            *both_forms("--entry", "other")[form],
            *both_forms("--input", x)[form],
            *both_forms("--backend", "cpu")[form],
            *both_forms("--output-dir", out)[form],
            *both_forms("--bench", 2)[form]]
    proc = te_run(*args)
    assert "@other: 1 inputs, 1 outputs" in proc.stdout
    assert "bench: 2 runs" in proc.stdout
    assert (out / "out0.npy").exists()


def test_seed_takes_both_forms(te_run):
    program = te_run.program(PROGRAM)
    spaced = te_run(program, "--random-inputs", "--seed", "7").stdout
    joined = te_run(program, "--random-inputs", "--seed=7").stdout
    other = te_run(program, "--random-inputs", "--seed=8").stdout
    assert spaced == joined != other


@pytest.mark.parametrize("form", [0, 1])
def test_plugin_options_take_both_forms(te_run, form):
    # A plugin that does not exist is reported under either spelling: the
    # value reached the loader.
    program = te_run.program(PROGRAM)
    missing = te_run.tmp / "libnope.so"
    line = error_of(te_run(program, "--random-inputs",
                           *both_forms("--te-plugin", missing)[form],
                           env={"NVTE_PLUGIN_STRICT": "1"}, check=False))
    assert str(missing) in line
    line = error_of(te_run(program, "--random-inputs",
                           *both_forms("--runtime-plugin", missing)[form],
                           check=False))
    assert "--runtime-plugin" in line and str(missing) in line


@pytest.mark.parametrize("option", [
    "--entry", "--backend", "--input", "--seed", "--output-dir", "--bench",
    "--te-plugin", "--runtime-plugin", "--emit", "-o"])
def test_missing_values(te_run, option):
    program = te_run.program(PROGRAM)
    # At the end of the command line, and followed by another option.
    line = error_of(te_run(program, option, check=False))
    assert line.startswith(f"te-run: error: {option} needs ")
    line = error_of(te_run(program, option, "--check", check=False))
    assert line.startswith(f"te-run: error: {option} needs ")
    assert line.endswith("(got option --check)")
    if option != "-o":
        line = error_of(te_run(program, f"{option}=", check=False))
        assert line.startswith(f"te-run: error: {option}= needs ")


@pytest.mark.parametrize("args,needle", [
    (["--seed=-1"], "--seed expects a non-negative integer, got '-1'"),
    (["--seed", "1x"], "--seed expects a non-negative integer, got '1x'"),
    (["--seed", "99999999999999999999"], "--seed expects a non-negative integer"),
    (["--bench=3000000000"],
     "--bench expects a non-negative integer up to 2147483647, got '3000000000'"),
    (["--check=yes"], "--check takes no value, got '--check=yes'"),
    (["--verbose=1"], "--verbose takes no value"),
    (["--emit=ll.vm", "-o", "x"],
     "--emit expects a stage name such as mlir, llvm, asm or obj, got 'll.vm'"),
    (["--emit=exe", "-o", "x"], "device 'cpu' is compiled by target cpu "
     "(built-in), which cannot stop at 'exe'; it can emit mlir, module, llvm, asm, obj"),
    (["--emit=mlir"], "--emit needs -o FILE"),
    (["-o", "x.ll"], "-o names the file of --emit"),
    (["--emit=mlir", "-o", "x", "--random-inputs"],
     "--emit compiles without running the program: --random-inputs does not apply"),
    (["--emit=mlir", "-o", "x", "--check"], "--check does not apply"),
])
def test_bad_option_values(te_run, args, needle):
    program = te_run.program(PROGRAM)
    assert needle in error_of(te_run(program, *args, check=False))


# --- --version ---------------------------------------------------------------

def test_version_is_te_mlirs(te_run):
    proc = te_run("--version", env={"LD_DEBUG": "files"})
    lines = [l for l in proc.stdout.splitlines()]
    assert lines[0].startswith("te-mlir ") and "built with LLVM/MLIR" in lines[1]
    # What te-opt --version says of te-mlir, word for word.
    te_opt = Path(TE_RUN).parent / "te-opt"
    if te_opt.exists():
        opt = subprocess.run([str(te_opt), "--version"], capture_output=True,
                             text=True).stdout.splitlines()
        assert lines == opt[opt.index(lines[0]):][:2]
    # No program needed, and no compiler loaded.
    assert "libTECompiler" not in proc.stderr and "libMLIR" not in proc.stderr


# --- -v: cache keys and compile stages ------------------------------------

STAGES = ["mlir-passes", "llvm-translate", "llvm-optimize", "llvm-codegen", "link"]


def verbose_lines(proc):
    return [l for l in proc.stderr.splitlines()
            if l.startswith(("cache key", "compile stage"))]


def test_verbose_miss_then_hit(te_run):
    program = te_run.program(PROGRAM)
    miss = te_run(program, "--random-inputs", "-v")
    lines = verbose_lines(miss)
    assert lines[0].startswith("cache key (source): ")
    source_key = lines[0].split(": ")[1]
    assert re.fullmatch(r"[0-9a-f]{64}", source_key)
    assert re.fullmatch(r"cache key \(canonical\): [0-9a-f]{64} \(computed in "
                        r"[0-9.]+ ms\)", lines[1]), lines[1]
    canonical_key = lines[1].split()[3]
    stages = [re.fullmatch(r"compile stage (\S+): ([0-9.]+) ms", l).group(1)
              for l in lines[2:]]
    assert stages == STAGES
    assert "cache: miss" in miss.stderr
    # The canonical key is the name of the cache entry.
    assert (te_run.cache / f"{canonical_key}.so").exists()

    hit = te_run(program, "--random-inputs", "--verbose")
    assert verbose_lines(hit) == [
        f"cache key (source): {source_key}",
        f"cache key (canonical): {canonical_key} (from the source key's alias)",
        "compile stages: none, the kernel came from the cache"]
    assert "cache: hit (disk)" in hit.stderr


def test_verbose_canonical_hit_computes_only_the_key(te_run):
    # Another spelling of the same program: the source key misses, the
    # canonical key hits, nothing is lowered.
    te_run(te_run.program(PROGRAM), "--random-inputs")
    proc = te_run(te_run.program("// a comment\n" + PROGRAM), "--random-inputs", "-v")
    lines = verbose_lines(proc)
    assert "(computed in" in lines[1]
    assert not [l for l in lines if l.startswith("compile stage ")]
    assert "cache: hit (disk)" in proc.stderr


def test_verbose_check_reports_the_reference_compile(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs", "--check", "-v")
    stages = re.findall(r"^reference compile stage (\S+):", proc.stderr, re.M)
    assert stages == STAGES
    assert "reference cache: miss" in proc.stderr


# --- --emit ----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["mlir", "llvm", "asm", "obj", "module"])
def test_emit_writes_one_stage_and_runs_nothing(te_run, kind):
    program = te_run.program(PROGRAM)
    out = te_run.tmp / f"kernel.{kind}"
    proc = te_run(program, f"--emit={kind}", "-o", out, "-v")
    assert proc.stdout == ""
    data = out.read_bytes()
    if kind == "mlir":
        assert b"llvm.func @scale_up(" in data and b"te.amax" not in data
    elif kind == "llvm":
        assert b"define " in data and b"scale_up__te_packed" in data
        assert b"target triple" in data
    elif kind == "asm":
        assert re.search(rb"^scale_up__te_packed:", data, re.M)
    elif kind == "obj":
        # An ELF relocatable object (e_type 1), not the linked library.
        assert data[:4] == b"\x7fELF" and data[16] == 1
    else:
        # The kernel library the cpu device loads: a shared object (e_type
        # 3) with the manifest.
        assert data[:4] == b"\x7fELF" and data[16] == 3
        assert b"te-kernel-abi 1\nentry scale_up scale_up__te_packed" in data
    stages = re.findall(r"^compile stage (\S+):", proc.stderr, re.M)
    last = {"mlir": 1, "llvm": 3, "asm": 4, "obj": 4, "module": len(STAGES)}[kind]
    assert stages == STAGES[:last]
    # Past the kernel cache: nothing read, nothing stored.
    assert not list(te_run.cache.glob("*.so"))
    assert "cache: not used by --emit" in proc.stderr


def test_emit_to_stdout_and_both_forms(te_run):
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--emit", "mlir", "-o", "-")
    assert "llvm.func @scale_up(" in proc.stdout
    for args in (["-o" + str(te_run.tmp / "a.mlir")],
                 ["-o=" + str(te_run.tmp / "b.mlir")],
                 ["-o", te_run.tmp / "c.mlir"]):
        te_run(program, "--emit=mlir", *args)
    texts = {(te_run.tmp / f"{n}.mlir").read_text() for n in "abc"}
    assert len(texts) == 1


def test_emit_compile_errors(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  %y = te.all_reduce %d group @tp : tensor<?xf32>
  %s = tensor.cast %y : tensor<?xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}
te.process_group @tp size 2
""")
    line = error_of(te_run(program, "--emit=llvm", "-o", te_run.tmp / "x.ll",
                           check=False))
    assert line == (f"te-run: error: {program}:4:8: te.all_reduce with dynamic "
                    "shapes cannot run yet")
    line = error_of(te_run(te_run.program(PROGRAM), "--emit=mlir", "-o", "-",
                           "--backend", "nope", check=False))
    assert "no target produces kernel modules for device 'nope'" in line


# --- TE_DUMP_DIR -------------------------------------------------------------

def test_dump_dir_writes_every_stage_on_a_compile_only(te_run):
    program = te_run.program(PROGRAM, name="amax_prog.mlir")
    dump = te_run.tmp / "dump"
    proc = te_run(program, "--random-inputs", env={"TE_DUMP_DIR": str(dump)})
    assert "cache: miss" in proc.stderr
    files = sorted(p.name for p in (dump / "amax_prog").iterdir())
    # Numbered without gaps, in the order of the stages.
    assert [int(f[:2]) for f in files] == list(range(len(files)))
    names = [f[3:] for f in files]
    assert names[0] == "input.mlir" and names[-3:] == [
        "llvm.ll", "llvm-optimized.ll", "assembly.s"]
    assert "te-dispatch.mlir" in names and "convert-te-to-linalg.mlir" in names
    assert names.index("convert-te-to-linalg.mlir") < names.index(
        "convert-func-to-llvm.mlir")
    text = {n: (dump / "amax_prog" / f).read_text() for n, f in zip(names, files)}
    assert "te.amax" in text["input.mlir"]
    assert "te.amax" not in text["convert-te-to-linalg.mlir"]
    assert "linalg." in text["convert-te-to-linalg.mlir"]
    assert "define" in text["llvm.ll"] and "scale_up__te_packed:" in text["assembly.s"]

    # TE_DUMP_DIR is not in the key: a hit, which compiles and dumps nothing.
    shutil.rmtree(dump)
    proc = te_run(program, "--random-inputs", env={"TE_DUMP_DIR": str(dump)})
    assert "cache: hit (disk)" in proc.stderr and not dump.exists()
    # TE_CACHE_DISABLE=1 forces the compile, and the dump.
    te_run(program, "--random-inputs",
           env={"TE_DUMP_DIR": str(dump), "TE_CACHE_DISABLE": "1"})
    assert sorted(p.name for p in (dump / "amax_prog").iterdir()) == files


def cuda_toolkit():
    """The CUDA toolkit the cuda target compiles with, or a skip."""
    toolkit = (os.environ.get("TE_CUDA_PATH") or os.environ.get("CUDA_HOME")
               or "/usr/local/cuda")
    if not os.access(os.path.join(toolkit, "bin", "ptxas"), os.X_OK):
        pytest.skip(f"no CUDA toolkit (ptxas) at {toolkit}")
    return toolkit


def test_dump_dir_writes_the_cuda_stages_past_mlir(te_run):
    cuda_toolkit()
    program = te_run.program(PROGRAM, name="amax_prog.mlir")
    dump = te_run.tmp / "dump"
    te_run(program, "--backend", "cuda", "--emit=module", "-o",
           te_run.tmp / "kernels.fatbin", env={"TE_DUMP_DIR": str(dump)})
    files = sorted(p.name for p in (dump / "amax_prog.cuda").iterdir())
    assert [int(f[:2]) for f in files] == list(range(len(files)))
    names = [f[3:] for f in files]
    assert names[0] == "input.mlir" and names[-4:] == [
        "manifest.txt", "nvvm.ll", "nvvm-optimized.ll", "ptx.ptx"]
    text = {n: (dump / "amax_prog.cuda" / f).read_text()
            for n, f in zip(names, files)}
    assert "entry scale_up scale_up" in text["manifest.txt"]
    assert "step te_amax_" in text["manifest.txt"]
    for name in ("nvvm.ll", "nvvm-optimized.ll"):
        assert 'target triple = "nvptx64-nvidia-cuda"' in text[name]
    assert ".target sm_80" in text["ptx.ptx"]
    assert ".entry te_amax_" in text["ptx.ptx"]


def test_emit_sass_without_cuobjdump_says_where_it_looked(te_run):
    toolkit = cuda_toolkit()
    # A toolkit with ptxas and without cuobjdump, and a PATH without one.
    kit = te_run.tmp / "kit"
    (kit / "bin").mkdir(parents=True)
    os.symlink(os.path.join(toolkit, "bin", "ptxas"), kit / "bin" / "ptxas")
    if os.path.isdir(os.path.join(toolkit, "nvvm")):
        os.symlink(os.path.join(toolkit, "nvvm"), kit / "nvvm")
    empty = te_run.tmp / "empty"
    empty.mkdir()
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--backend", "cuda", "--emit=sass", "-o", "-",
                  check=False, env={"TE_CUDA_PATH": str(kit),
                                    "PATH": str(empty)})
    assert proc.returncode != 0 and proc.stdout == ""
    assert (f"no cuobjdump in {kit}/bin or on PATH: --emit=sass disassembles "
            "the cubin") in proc.stderr


def test_dump_dir_replaces_an_earlier_dump_and_reports_write_errors(te_run):
    program = te_run.program(PROGRAM, name="p.mlir")
    dump = te_run.tmp / "dump"
    (dump / "p").mkdir(parents=True)
    (dump / "p" / "99-stale.mlir").write_text("")
    (dump / "p" / "notes.txt").write_text("mine")
    te_run(program, "--emit=mlir", "-o", te_run.tmp / "x.mlir",
           env={"TE_DUMP_DIR": str(dump)})
    assert not (dump / "p" / "99-stale.mlir").exists()
    assert (dump / "p" / "notes.txt").read_text() == "mine"
    blocker = te_run.tmp / "file"
    blocker.write_text("")
    line = error_of(te_run(program, "--random-inputs", check=False,
                           env={"TE_DUMP_DIR": str(blocker)}))
    assert "TE_DUMP_DIR: cannot create" in line


# --- Errors: one "error:", located where the problem is ---------------------

def test_compile_errors_say_error_once(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<8xf32>) -> tensor<f32> {
  %s = te.compute_scale %x fp8_type f8E4M3FN : tensor<8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}""")
    line = error_of(te_run(program, check=False))
    assert line.startswith(f"te-run: error: {program}:3:8: 'te.compute_scale' op ")
    assert line.count("error:") == 1


@pytest.mark.parametrize("text,location,needle", [
    ("func.func private @f(%x: tensor<4xf32>) -> tensor<f32>\n", ":1:1: ",
     "the module has no public function to compile as a kernel entry point: "
     "@f is private"),
    ("// nothing here\n", ": ",
     "the module has no public function to compile as a kernel entry point"),
    ("func.func @f(%x: tensor<4xf32>, %n: i32) -> tensor<4xf32> {\n"
     "  return %x : tensor<4xf32>\n}\n", ":1:33: ",
     "kernel @f: argument 1 has type 'i32'"),
])
def test_module_errors_are_located(te_run, text, location, needle):
    program = te_run.program(text)
    line = error_of(te_run(program, "--random-inputs", check=False))
    assert line.startswith(f"te-run: error: {program}{location}{needle}"), line
    assert ":0:0:" not in line and line.count("error:") == 1


def test_cuda_without_a_driver_is_one_clear_error(te_run):
    # The cuda device opens the driver at run time: without one, asking for
    # the device is an error that says so, never a crash.
    program = te_run.program(PROGRAM)
    proc = te_run(program, "--random-inputs", "--backend", "cuda", check=False,
                  env={"TE_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 2
    assert proc.stderr == (
        "te-run: error: cannot open the cuda device: te_device_open: device "
        "'cuda' is not available: no CUDA driver found (/nonexistent/"
        "libcuda.so.1: cannot open shared object file: No such file or "
        "directory); install the NVIDIA driver, or set TE_CUDA_DRIVER to its "
        "libcuda.so.1\n"), proc.stderr
