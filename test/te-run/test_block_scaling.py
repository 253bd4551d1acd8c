"""MXFP8 and fp32 block scaling (quantize and dequantize) against numpy."""
import ml_dtypes
import numpy as np
import pytest

from fp8_reference import (FORMATS, fp32_block_quantize, mxfp8_quantize,
                           same_fp8_bits)


def mlir_type(shape, element):
    return "tensor<" + "x".join(map(str, shape)) + "x" + element + ">"


def quantize_program(shape, mode, usage, result_types, attrs=""):
    x = mlir_type(shape, "f32")
    results = ", ".join(result_types)
    names = ", ".join(f"%r{i}" for i in range(len(result_types)))
    return f"""
func.func @q(%x: {x}) -> ({results}) {{
  {names} = te.quantize %x mode {mode} usage {usage} {attrs} : {x} -> {results}
  return {names} : {results}
}}
"""


def with_specials(x):
    """Blocks of zeros, an infinity, a NaN (which the block amax skips) and
    huge values among normal data."""
    x = x.copy()
    flat = x.reshape(-1)
    flat[:32] = 0
    flat[40] = np.inf
    flat[130] = np.nan
    flat[70] = -3e38
    flat[100] = 1e-30
    return x


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [(64, 64), (2, 64, 96)])
def test_mxfp8_rowwise_and_columnwise(te_run, fmt, shape):
    rng = np.random.default_rng(11)
    x = with_specials((rng.standard_normal(shape) * 50).astype(np.float32))
    row_scales = shape[:-1] + (shape[-1] // 32,)
    col_scales = shape[:-2] + (shape[-2] // 32, shape[-1])
    types = [mlir_type(shape, fmt), mlir_type(row_scales, "f8E8M0FNU"),
             mlir_type(shape, fmt), mlir_type(col_scales, "f8E8M0FNU")]
    program = te_run.program(quantize_program(shape, "mxfp8_1x32", "both", types))
    data, scales, data_col, scales_col = te_run.run_kernel(program, [x])
    x2d = x.reshape(-1, shape[-1])
    want, want_e = mxfp8_quantize(x2d, fmt)
    assert np.array_equal(scales.reshape(want_e.shape), want_e)
    assert same_fp8_bits(data.reshape(x2d.shape), want).all()
    want, want_e = mxfp8_quantize(x2d, fmt, columnwise=True)
    assert np.array_equal(scales_col.reshape(want_e.shape), want_e)
    assert same_fp8_bits(data_col.reshape(x2d.shape), want).all()


def test_mxfp8_nan_block(te_run):
    x = np.ones((1, 64), np.float32)
    x[0, 5] = np.nan
    types = [mlir_type((1, 64), "f8E4M3FN"), mlir_type((1, 2), "f8E8M0FNU")]
    program = te_run.program(quantize_program((1, 64), "mxfp8_1x32", "rowwise", types))
    data, scales = te_run.run_kernel(program, [x])
    # The NaN element does not take part in its block's amax (TE reduces
    # with fmaxf): both blocks get the scale of amax 1, 1 / 448 rounded up to
    # 2^-8, and only the NaN element quantizes to NaN.
    assert list(scales[0]) == [119, 119]
    assert list(mxfp8_quantize(x, "f8E4M3FN")[1][0]) == [119, 119]
    values = data[0].view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert np.isnan(values[5]) and (np.delete(values, 5) == 256).all()
    # A block of NaN only has amax 0 (the smallest scale), and stays NaN.
    x[0, :32] = np.nan
    data, scales = te_run.run_kernel(program, [x])
    assert list(scales[0]) == [0, 119]
    assert np.isnan(data[0, :32].view(ml_dtypes.float8_e4m3fn).astype(np.float32)).all()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode,block", [("block_1x128", (1, 128)),
                                        ("block_128x128", (128, 128))])
@pytest.mark.parametrize("pow2,epsilon", [(True, 0.0), (False, 1e-3)])
# (200, 300): partial blocks at both edges; (130, 256): rows of whole 1x128
# blocks, which are quantized in one pass over the input.
@pytest.mark.parametrize("shape", [(200, 300), (130, 256)])
def test_fp32_blocks(te_run, fmt, mode, block, pow2, epsilon, shape):
    rng = np.random.default_rng(5)
    x = with_specials((rng.standard_normal(shape) * 10).astype(np.float32))
    x[-50:, -128:] = 1e-5  # blocks whose amax is below epsilon
    br, bc = block
    row_scales = (-(-shape[0] // br), -(-shape[1] // bc))
    col_scales = (-(-shape[1] // br), -(-shape[0] // bc))
    types = [mlir_type(shape, fmt), mlir_type(row_scales, "f32"),
             mlir_type(shape[::-1], fmt), mlir_type(col_scales, "f32")]
    attrs = ("" if pow2 else "pow2_scales false ") + (f"epsilon {epsilon:.6e}" if epsilon else "")
    program = te_run.program(quantize_program(shape, mode, "both", types, attrs))
    data, scale_inv, data_t, scale_inv_t = te_run.run_kernel(program, [x])
    eps = np.float32(epsilon)
    want, want_si = fp32_block_quantize(x, fmt, br, bc, epsilon=eps, pow2=pow2)
    assert np.array_equal(scale_inv.view(np.uint32), want_si.view(np.uint32))
    assert same_fp8_bits(data, want).all()
    want, want_si = fp32_block_quantize(x.T, fmt, br, bc, epsilon=eps, pow2=pow2)
    assert np.array_equal(scale_inv_t.view(np.uint32), want_si.view(np.uint32))
    assert same_fp8_bits(data_t, want).all()


@pytest.mark.parametrize("mode,scale_shape,attrs", [
    ("mxfp8_1x32", (64, 2), ""),
    ("mxfp8_1x32", (2, 64), "columnwise"),
    ("block_1x128", (64, 1), ""),
    ("block_128x128", (1, 1), ""),
])
@pytest.mark.parametrize("out", ["f32", "bf16"])
def test_dequantize_blocks(te_run, mode, scale_shape, attrs, out):
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    data = codes.view(ml_dtypes.float8_e4m3fn)
    if mode.startswith("mxfp8"):
        scale_type = "f8E8M0FNU"
        e = rng.integers(100, 150, scale_shape, dtype=np.uint8)
        e.flat[0] = 255  # a NaN scale
        scales_in = e
        scale_values = np.where(e == 255, np.nan, np.ldexp(1.0, e.astype(np.int64) - 127))
    else:
        scale_type = "f32"
        scales_in = (rng.random(scale_shape) * 4).astype(np.float32)
        scale_values = scales_in
    br = 64 // scale_shape[0]
    bc = 64 // scale_shape[1]
    per_element = np.repeat(np.repeat(scale_values, br, 0), bc, 1)
    program = te_run.program(f"""
func.func @dq(%d: tensor<64x64xf8E4M3FN>, %s: {mlir_type(scale_shape, scale_type)}) -> tensor<64x64x{out}> {{
  %x = te.dequantize %d, %s mode {mode} {attrs}
      : tensor<64x64xf8E4M3FN>, {mlir_type(scale_shape, scale_type)} -> tensor<64x64x{out}>
  return %x : tensor<64x64x{out}>
}}""")
    (result,) = te_run.run_kernel(program, [codes, scales_in], outputs_f32=True)
    with np.errstate(invalid="ignore"):
        values = (data.astype(np.float32) * per_element.astype(np.float32)).astype(np.float32)
    target = np.float32 if out == "f32" else ml_dtypes.bfloat16
    assert np.array_equal(result, values.astype(target).astype(np.float32), equal_nan=True)
