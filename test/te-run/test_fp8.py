"""FP8 ops compiled for the CPU against numpy/ml_dtypes, through te-run."""
import subprocess

import ml_dtypes
import numpy as np
import pytest

from conftest import TE_RUN

from fp8_reference import (FORMATS, amax_of, cast_fp8, compute_scale,
                           same_fp8_bits, update_delayed_scaling)

QUANTIZE = """
func.func @quantize(%x: tensor<{n}x{src}>, %s: tensor<f32>)
    -> (tensor<{n}x{fmt}>, tensor<f32>, tensor<f32>) {{
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<{n}x{src}>, tensor<f32> -> tensor<{n}x{fmt}>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<{n}x{fmt}>, tensor<f32>, tensor<f32>
}}
"""

# The per-tensor quantize has two lowerings: one pass over the input (the
# cast and amax in vectors of 16 along the rows of a tensor of rank >= 2
# whose last dimension is a multiple of 16) and two loops (anything else).
# The bit-exact tests run on both: each input as a 1-D tensor and as rows
# of ROW.
ROW = 64
LAYOUTS = ("two_loops", "one_pass")


def quantize_case(te_run, layout, x, src, fmt):
    """The quantize program for the elements of `x` laid out as `layout`,
    with `x` padded (by repeating its first element) to whole rows for
    one_pass."""
    if layout == "one_pass":
        pad = (-x.size) % ROW
        x = np.concatenate([x, np.repeat(x[:1], pad)]).reshape(-1, ROW)
    dims = "x".join(map(str, x.shape))
    return te_run.program(QUANTIZE.format(n=dims, src=src, fmt=fmt)), x


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_every_bf16_pattern(te_run, fmt, layout):
    bits = np.arange(1 << 16, dtype=np.uint16)
    program, bits = quantize_case(te_run, layout, bits, "bf16", fmt)
    x = (bits.astype(np.uint32) << 16).view(np.float32)
    data, scale_inv, amax = te_run.run_kernel(
        program, [bits, np.array(1.0, np.float32)])
    assert data.dtype == np.uint8
    ok = same_fp8_bits(data, cast_fp8(x, fmt))
    assert ok.all(), f"{(~ok).sum()} mismatches, first at bf16 0x{bits[~ok][0]:04x}"
    assert scale_inv == np.float32(1.0)
    # The patterns include NaN, which TE's fmaxf reduction skips, and inf.
    assert amax == amax_of(x) == np.inf


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_random_f32_with_scale(te_run, fmt, layout):
    rng = np.random.default_rng(7)
    fp8_max = FORMATS[fmt][1]
    x = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * 100,
        rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40,
                  fp8_max, -fp8_max, fp8_max * 1.0001, 3e38], np.float32),
    ])
    # Exact ties between neighbouring FP8 values, once the scale is applied.
    codes = np.arange(0, 0x7E, dtype=np.uint8).view(FORMATS[fmt][0]).astype(np.float32)
    ties = ((codes[:-1].astype(np.float64) + codes[1:]) / 2).astype(np.float32)
    # And one f32 step to either side of each tie, which must round away
    # from it (the subnormal codes round by an f32 addition).
    ties = np.concatenate([ties, np.nextafter(ties, np.float32(0)),
                           np.nextafter(ties, np.float32(np.inf))])
    scale = np.float32(4.0)
    x = np.concatenate([x, ties / scale, -ties / scale]).astype(np.float32)
    program, x = quantize_case(te_run, layout, x, "f32", fmt)
    data, scale_inv, amax = te_run.run_kernel(program, [x, np.array(scale)])
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = (x * scale).astype(np.float32)
    ok = same_fp8_bits(data, cast_fp8(scaled, fmt))
    assert ok.all(), f"{(~ok).sum()} mismatches, first for {x[~ok][0]!r}"
    assert scale_inv == np.float32(1.0) / scale
    assert amax == amax_of(x)
    # Without the infinities, amax is the largest finite magnitude; the NaN
    # elements still quantize to NaN.
    finite = np.where(np.isinf(x), np.float32(0), x)
    data, _, amax = te_run.run_kernel(program, [finite, np.array(scale)])
    assert amax == amax_of(finite) == np.nanmax(np.abs(finite))
    assert np.isnan(data.view(FORMATS[fmt][0])[np.isnan(finite)].astype(np.float32)).all()


def test_quantize_transposed_copy_and_amax(te_run):
    program = te_run.program("""
func.func @cast_transpose(%x: tensor<48x80xbf16>, %s: tensor<f32>)
    -> (tensor<48x80xf8E4M3FN>, tensor<80x48xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<48x80xbf16>, tensor<f32>
      -> tensor<48x80xf8E4M3FN>, tensor<80x48xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %dt, %si, %a : tensor<48x80xf8E4M3FN>, tensor<80x48xf8E4M3FN>, tensor<f32>, tensor<f32>
}
""")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((48, 80)) * 30).astype(ml_dtypes.bfloat16)
    scale = np.float32(2.5)
    data, data_t, scale_inv, amax = te_run.run_kernel(
        program, [x.astype(np.float32), np.array(scale)])
    want = cast_fp8(x.astype(np.float32) * scale, "f8E4M3FN")
    assert (data == want.view(np.uint8)).all()
    assert (data_t == data.T).all()
    assert amax == np.abs(x.astype(np.float32)).max()
    assert scale_inv == np.float32(1) / scale


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out", ["f32", "bf16", "f16"])
def test_dequantize_every_code(te_run, fmt, out):
    program = te_run.program(f"""
func.func @dequantize(%d: tensor<256x{fmt}>, %s: tensor<f32>) -> tensor<256x{out}> {{
  %x = te.dequantize %d, %s mode per_tensor : tensor<256x{fmt}>, tensor<f32> -> tensor<256x{out}>
  return %x : tensor<256x{out}>
}}
""")
    codes = np.arange(256, dtype=np.uint8)
    scale_inv = np.float32(0.375)
    (result,) = te_run.run_kernel(program, [codes, np.array(scale_inv)],
                                  outputs_f32=True)
    values = codes.view(FORMATS[fmt][0]).astype(np.float32) * scale_inv
    target = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[out]
    want = values.astype(target).astype(np.float32)
    assert np.array_equal(result, want, equal_nan=True)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out,nan_bits", [("bf16", 0x7FC0), ("f16", 0x7E00)])
def test_dequantize_nan_is_one_pattern(te_run, fmt, out, nan_bits):
    # Every target writes the same NaN (the GPU's cvt would give 0x7FFF,
    # x86 would keep the sign), so CPU and GPU outputs agree bit for bit.
    program = te_run.program(f"""
func.func @dequantize(%d: tensor<256x{fmt}>, %s: tensor<f32>) -> tensor<256x{out}> {{
  %x = te.dequantize %d, %s mode per_tensor : tensor<256x{fmt}>, tensor<f32> -> tensor<256x{out}>
  return %x : tensor<256x{out}>
}}
""")
    codes = np.arange(256, dtype=np.uint8)
    (result,) = te_run.run_kernel(program, [codes, np.array(np.float32(2))])
    bits = result.view(np.uint16)
    nan = np.isnan(codes.view(FORMATS[fmt][0]).astype(np.float32))
    assert nan.sum() >= 2  # both signs
    assert (bits[nan] == nan_bits).all(), [hex(v) for v in bits[nan]]
    assert not np.isnan(bits[~nan].view(np.float16 if out == "f16" else ml_dtypes.bfloat16).astype(np.float32)).any()


def test_amax(te_run):
    program = te_run.program("""
func.func @amax(%x: tensor<3x1000xf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<3x1000xf16> -> tensor<f32>
  return %a : tensor<f32>
}
""")
    x = np.random.default_rng(5).standard_normal((3, 1000)).astype(np.float16)
    x[1, 17] = -np.float16(60000)
    (amax,) = te_run.run_kernel(program, [x])
    assert amax == np.float32(60000)
    # NaN elements do not make amax NaN (TE reduces with fmaxf).
    x[0, 3] = np.nan
    x[2, 999] = -np.nan
    (amax,) = te_run.run_kernel(program, [x])
    assert amax == np.float32(60000) == amax_of(x)
    (amax,) = te_run.run_kernel(program, [np.full((3, 1000), np.nan, np.float16)])
    assert amax == np.float32(0)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_amax_vector_rows(te_run, dtype):
    """Rows of a multiple of 16 elements take the vector reduction: the same
    NaN-skipping maximum, infinities included, in every lane and row."""
    np_type = {"f16": np.float16, "f32": np.float32}[dtype]
    program = te_run.program(f"""
func.func @amax(%x: tensor<4x1024x{dtype}>) -> tensor<f32> {{
  %a = te.amax %x : tensor<4x1024x{dtype}> -> tensor<f32>
  return %a : tensor<f32>
}}
""")
    rng = np.random.default_rng(7)
    for row, col in ((0, 0), (1, 15), (2, 1000), (3, 1023)):
        x = rng.standard_normal((4, 1024)).astype(np_type)
        x[row, col] = -np_type(60000)
        x[(row + 1) % 4, (col + 7) % 1024] = np.nan
        (amax,) = te_run.run_kernel(program, [x])
        assert amax == np.float32(60000) == amax_of(x), (row, col)
    x[3, 5] = -np.inf
    (amax,) = te_run.run_kernel(program, [x])
    assert amax == np.float32(np.inf)
    (amax,) = te_run.run_kernel(program, [np.full((4, 1024), np.nan, np_type)])
    assert amax == np.float32(0)


@pytest.mark.parametrize("shape", [(8, 32), (16, 32), (1, 7), (5, 64)])
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_amax_small_shapes_compile(te_run, shape, dtype):
    # Small amax loops once made LLVM's loop-idiom recognizer spin forever
    # on the NaN test (8x32 and 16x32 bf16): each must compile and run.
    dims = "x".join(map(str, shape))
    program = te_run.program(f"""
func.func @amax(%x: tensor<{dims}x{dtype}>) -> tensor<f32> {{
  %a = te.amax %x : tensor<{dims}x{dtype}> -> tensor<f32>
  return %a : tensor<f32>
}}
""")
    np_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[dtype]
    x = np.random.default_rng(11).standard_normal(shape).astype(np_type)
    x.flat[-1] = np.nan
    out = te_run.tmp / "out"
    proc = subprocess.run(
        # bf16 travels as its uint16 bits, as numpy has no bf16 in .npy.
        [TE_RUN, str(program), "--input",
         str(te_run.array(x.view(np.uint16) if dtype == "bf16" else x)),
         "--output-dir", str(out)],
        capture_output=True, text=True, env=te_run.env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out / "out0.npy") == amax_of(x)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("pow2", [False, True])
def test_compute_scale_special_values(te_run, fmt, pow2):
    amax = np.array([0.0, np.inf, np.nan, 1e-30, 1.0, 7.0, 3e-39, 448.0,
                     57344.0, 1e-3, 123.456, 1e-12], np.float32)
    epsilon = 1e-20
    attrs = "epsilon 1.0e-20" + (" pow2_scales" if pow2 else "")
    program = te_run.program(f"""
func.func @scale(%amax: tensor<12xf32>) -> tensor<12xf32> {{
  %s = te.compute_scale %amax fp8_type {fmt} {attrs} : tensor<12xf32> -> tensor<12xf32>
  return %s : tensor<12xf32>
}}
""")
    (scale,) = te_run.run_kernel(program, [amax])
    want = compute_scale(amax, fmt, epsilon=np.float32(epsilon), pow2=pow2)
    assert np.array_equal(scale.view(np.uint32), want.view(np.uint32)), (scale, want)


# length 1 is TE's amax_history_len=1: the new amax is the whole history.
@pytest.mark.parametrize("length", [4, 1])
@pytest.mark.parametrize("algo,margin", [("max", 0), ("most_recent", 1), ("max", 3)])
def test_delayed_scaling_over_steps(te_run, algo, margin, length):
    fmt = "f8E4M3FN"
    h = f"tensor<{length}x3xf32>"
    program = te_run.program(f"""
func.func @update(%h: {h}, %amax: tensor<3xf32>, %s: tensor<3xf32>)
    -> ({h}, tensor<3xf32>) {{
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %s fp8_type {fmt}
      amax_algo {algo} margin {margin}
      : {h}, tensor<3xf32>, tensor<3xf32> -> {h}, tensor<3xf32>
  return %h2, %s2 : {h}, tensor<3xf32>
}}
""")
    history = np.zeros((length, 3), np.float32)
    scale = np.ones(3, np.float32)
    steps = [
        [1.0, 0.0, 2.0],        # zero amax keeps the previous scale
        [3.5, 0.5, np.inf],     # inf keeps it too
        [0.25, 1e-38, 1.0],     # tiny amax: scale overflows to FLT_MAX
        [0.0, 0.0, np.nan],     # NaN keeps the previous scale (most_recent)
        [np.nan, 0.0, 0.5],     # max skips the NaN entries of the history
        [10.0, 2.0, 4.0],
        [0.5, 0.5, 0.5],        # the max over the history still sees 10
    ]
    for amax in steps:
        amax = np.array(amax, np.float32)
        got_history, got_scale = te_run.run_kernel(program, [history, amax, scale])
        history, scale = update_delayed_scaling(history, amax, scale, fmt,
                                                algo=algo, margin=margin)
        assert np.array_equal(got_history, history, equal_nan=True)
        assert np.array_equal(got_scale.view(np.uint32), scale.view(np.uint32)), (
            amax, got_scale, scale)
    # --check compiles it through the reference pipeline too.
    proc = te_run(program, "--random-inputs", "--check")
    assert proc.stdout.count(": ok") == 2, proc.stdout
