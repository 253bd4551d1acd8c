"""te.scaled_matmul (FP8 GEMM with epilogues) against a float64 reference.

The kernel accumulates exact FP8 products in f32, so the error bound is
f32 summation error: K * 2^-24 relative to sum |a_ik b_kj|, plus the final
rounding of the output type."""
import ml_dtypes
import numpy as np
import pytest

from fp8_reference import FORMATS, cast_fp8, same_fp8_bits

M, N, K = 24, 40, 64


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def program(a_fmt, b_fmt, out, transpose_a, transpose_b, bias, gelu_on):
    a_shape = f"{K}x{M}" if transpose_a else f"{M}x{K}"
    b_shape = f"{N}x{K}" if transpose_b else f"{K}x{N}"
    args = [f"%a: tensor<{a_shape}x{a_fmt}>", f"%b: tensor<{b_shape}x{b_fmt}>",
            "%sa: tensor<f32>", "%sb: tensor<f32>"]
    types = [f"tensor<{a_shape}x{a_fmt}>", f"tensor<{b_shape}x{b_fmt}>",
             "tensor<f32>", "tensor<f32>"]
    clauses = ""
    if bias:
        args.append(f"%bias: tensor<{N}xbf16>")
        types.append(f"tensor<{N}xbf16>")
        clauses += " bias(%bias)"
    fp8_out = out in FORMATS
    results = [f"tensor<{M}x{N}x{out}>"] + (["tensor<f32>"] if fp8_out else [])
    if fp8_out:
        args.append("%so: tensor<f32>")
        types.append("tensor<f32>")
        clauses += " out_scale(%so)"
    flags = "".join(f" {f}" for f, on in (("transpose_a", transpose_a),
                                          ("transpose_b", transpose_b),
                                          ("gelu", gelu_on)) if on)
    names = "%d, %amax" if fp8_out else "%d"
    return f"""
func.func @gemm({", ".join(args)}) -> ({", ".join(results)}) {{
  {names} = te.scaled_matmul %a, %b scales(%sa, %sb){clauses}{flags}
      : {", ".join(types)} -> {", ".join(results)}
  return {names} : {", ".join(results)}
}}"""


@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (False, True),
                                                     (True, False), (True, True)])
@pytest.mark.parametrize("out", ["f32", "bf16", "f16", "f8E4M3FN"])
@pytest.mark.parametrize("bias,gelu_on", [(False, False), (True, True)])
def test_scaled_matmul(te_run, transpose_a, transpose_b, out, bias, gelu_on):
    rng = np.random.default_rng(17)
    a = cast_fp8(rng.standard_normal((M, K)) * 8, "f8E4M3FN")
    b = cast_fp8(rng.standard_normal((K, N)) * 8, "f8E5M2" if out == "f16" else "f8E4M3FN")
    sa, sb, so = np.float32(0.125), np.float32(0.5), np.float32(4.0)
    bias_v = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    prog = te_run.program(program("f8E4M3FN", "f8E5M2" if out == "f16" else "f8E4M3FN",
                                  out, transpose_a, transpose_b, bias, gelu_on))
    inputs = [(a.T if transpose_a else a).view(np.uint8).copy(),
              (b.T if transpose_b else b).view(np.uint8).copy(),
              np.array(sa), np.array(sb)]
    if bias:
        inputs.append(bias_v.view(np.uint16))
    if out in FORMATS:
        inputs.append(np.array(so))
    results = te_run.run_kernel(prog, inputs, outputs_f32=out not in FORMATS)

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = (a64 @ b64) * (np.float64(sa) * np.float64(sb))
    bound = K * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64)) * np.float64(sa * sb)
    if bias:
        exact = exact + bias_v.astype(np.float64)
    if gelu_on:
        bound = bound * 1.2 + 1e-6  # gelu's slope is at most ~1.13
        exact = gelu(exact)
    if out in FORMATS:
        data, amax = results
        d32 = exact.astype(np.float32)
        # amax of D before the output scale, within the accumulation bound.
        assert abs(amax - np.abs(exact).max()) <= bound.max() + 1e-6
        if gelu_on:
            # expf may differ from numpy's by an ulp, flipping a rare
            # rounding decision: compare with the exact value's cast.
            agree = same_fp8_bits(data, cast_fp8(d32 * so, out))
            assert agree.mean() > 0.98, agree.mean()
            return
        # Without transcendental functions the kernel's f32 arithmetic can be
        # replayed exactly: products are exact, the sum runs over k in order.
        A = (a.astype(np.float32))
        B = (b.astype(np.float32))
        acc = np.zeros((M, N), np.float32)
        for kk in range(K):
            acc = (acc + A[:, kk, None] * B[None, kk, :]).astype(np.float32)
        value = (acc * np.float32(sa * sb)).astype(np.float32)
        if bias:
            value = (value + bias_v.astype(np.float32)).astype(np.float32)
        assert amax == np.abs(value).max()
        assert same_fp8_bits(data, cast_fp8((value * so).astype(np.float32), out)).all()
        return
    (d,) = results
    rounding = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}[out]
    tolerance = bound + np.abs(exact) * rounding + 1e-30
    assert (np.abs(d - exact) <= tolerance).all(), np.abs(d - exact).max()
