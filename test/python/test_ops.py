"""te_mlir.ops against the independent numpy/ml_dtypes references of the
te-run tests (test/te-run/fp8_reference.py, attention_backward_reference.py,
written from the ops' contracts, not from any lowering)."""

import os
import sys
import threading
import zlib

import ml_dtypes
import numpy as np
import pytest

import te_mlir
from te_mlir import ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir,
                                "te-run"))
import attention_backward_reference as attn_ref  # noqa: E402
import fp8_reference as fp8_ref  # noqa: E402

E4M3, E5M2 = "f8E4M3FN", "f8E5M2"




def specials(x):
    """x with NaN, +-inf, zero and an out-of-range value planted."""
    x = np.array(x, np.float32)
    flat = x.reshape(-1)
    flat[:5] = [np.nan, np.inf, -np.inf, 0.0, -1e6]
    return x


def bits(a):
    return a.view(np.uint8)


# --- FP8 ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16,
                                   np.float16])
def test_amax(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((33, 70)) * 3).astype(dtype)
    x[4, 5] = np.nan
    got = ops.amax(x)
    assert got.dtype == np.float32 and got.shape == ()
    assert got == fp8_ref.amax_of(x.astype(np.float32))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("pow2", [False, True])
def test_compute_scale(fmt, pow2):
    amax = np.array([[0.0, np.inf, np.nan, 1e-30], [3.0, 448.0, 1e-3, 7.5]],
                    np.float32)
    fmt_name = ops.dtype_name(fmt)
    for eps in (0.0, 1e-2):
        got = ops.compute_scale(amax, fmt, epsilon=eps, pow2_scales=pow2)
        want = fp8_ref.compute_scale(amax, fmt_name, epsilon=eps, pow2=pow2)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
@pytest.mark.parametrize("pow2,eps", [(False, 0.0), (True, 1e-3)])
def test_quantize_current_scaling(fmt, pow2, eps):
    rng = np.random.default_rng(2)
    x = specials(rng.standard_normal((48, 80)) * 5).astype(ml_dtypes.bfloat16)
    q = ops.quantize(x, fmt, transpose=True, pow2_scales=pow2, epsilon=eps)
    xf = x.astype(np.float32)
    amax = fp8_ref.amax_of(xf)
    scale = fp8_ref.compute_scale(amax, fmt, epsilon=eps, pow2=pow2)
    want = fp8_ref.cast_fp8(xf * scale, fmt)
    assert q.mode == "per_tensor" and q.fp8 == fmt and q.dtype == "bf16"
    assert q.amax == amax
    assert q.scale_inv == np.float32(1) / scale
    assert q.columnwise_scale_inv is q.scale_inv
    assert fp8_ref.same_fp8_bits(bits(q.data), want).all()
    assert fp8_ref.same_fp8_bits(bits(q.columnwise_data), want.T).all()


def test_quantize_with_given_scale_and_usage():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    q = ops.quantize(x, "e5m2", scale=np.float32(0.5), usage="columnwise")
    assert q.data is None and q.scale_inv == 2.0
    want = fp8_ref.cast_fp8(x * np.float32(0.5), E5M2)
    assert fp8_ref.same_fp8_bits(bits(q.columnwise_data), want.T).all()
    # A 3-D input has no transposed copy; row-wise works.
    y = ops.quantize(x.reshape(4, 4, 64), scale=1.0)
    assert y.data.shape == (4, 4, 64)
    with pytest.raises(te_mlir.ShapeError, match="2-D"):
        ops.quantize(x.reshape(4, 4, 64), scale=1.0, transpose=True)


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_quantize_mxfp8(fmt):
    rng = np.random.default_rng(4)
    x = specials(rng.standard_normal((64, 96)) *
                 np.exp(rng.uniform(-8, 8, (64, 1)))).astype(np.float32)
    q = ops.quantize(x, fmt, mode="mxfp8_1x32", usage="both")
    data, codes = fp8_ref.mxfp8_quantize(x, fmt)
    cdata, ccodes = fp8_ref.mxfp8_quantize(x, fmt, columnwise=True)
    assert q.scale_inv.dtype == ml_dtypes.float8_e8m0fnu
    assert q.scale_inv.shape == (64, 3) and q.columnwise_scale_inv.shape == (
        2, 96)
    np.testing.assert_array_equal(bits(q.scale_inv), codes)
    np.testing.assert_array_equal(bits(q.columnwise_scale_inv), ccodes)
    assert fp8_ref.same_fp8_bits(bits(q.data), data).all()
    assert fp8_ref.same_fp8_bits(bits(q.columnwise_data), cdata).all()
    with pytest.raises(te_mlir.ShapeError, match="multiple of 32"):
        ops.quantize(x[:, :40], fmt, mode="mxfp8_1x32")


@pytest.mark.parametrize("mode,block", [("block_1x128", (1, 128)),
                                        ("block_128x128", (128, 128))])
@pytest.mark.parametrize("pow2,eps", [(True, 0.0), (False, 1e-4)])
def test_quantize_fp32_blocks(mode, block, pow2, eps):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((130, 300)) * 4).astype(ml_dtypes.bfloat16)
    q = ops.quantize(x, mode=mode, usage="both", pow2_scales=pow2,
                     epsilon=eps)
    xf = x.astype(np.float32)
    data, scale_inv = fp8_ref.fp32_block_quantize(xf, E4M3, *block,
                                                  epsilon=eps, pow2=pow2)
    tdata, tscale_inv = fp8_ref.fp32_block_quantize(xf.T, E4M3, *block,
                                                    epsilon=eps, pow2=pow2)
    np.testing.assert_array_equal(q.scale_inv, scale_inv)
    np.testing.assert_array_equal(q.columnwise_scale_inv, tscale_inv)
    assert fp8_ref.same_fp8_bits(bits(q.data), data).all()
    assert fp8_ref.same_fp8_bits(bits(q.columnwise_data), tdata).all()


@pytest.mark.parametrize("mode", ["per_tensor", "mxfp8_1x32", "block_1x128",
                                  "block_128x128"])
@pytest.mark.parametrize("out", ["f32", "bf16"])
def test_dequantize(mode, out):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((64, 256)) * 3).astype(np.float32)
    q = ops.quantize(x, mode=mode, usage="both")
    for columnwise in (False, True):
        data, si = ((q.columnwise_data, q.columnwise_scale_inv) if columnwise
                    else (q.data, q.scale_inv))
        values = data.astype(np.float32)
        if mode == "per_tensor":
            scales = si
        elif mode == "mxfp8_1x32":
            scales = np.ldexp(np.float32(1), bits(si).astype(np.int32) - 127)
            scales = np.repeat(scales, 32, axis=0 if columnwise else 1)
        else:
            rows = 128 if mode == "block_128x128" else 1
            scales = fp8_ref.expand_blocks(si, data.shape, rows, 128)
        want = (values * scales).astype(np.float32).astype(
            te_mlir.numpy_dtype(out))
        got = q.dequantize(out, columnwise=columnwise)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # Raw data with its scales and mode gives the same.
    raw = ops.dequantize(q.data, "f32", scale_inv=q.scale_inv, mode=mode)
    np.testing.assert_array_equal(raw, q.dequantize("f32"))


@pytest.mark.parametrize("transpose_a,transpose_b", [(False, True),
                                                     (True, False)])
@pytest.mark.parametrize("bias,gelu", [(False, False), (True, True)])
def test_scaled_matmul(transpose_a, transpose_b, bias, gelu):
    rng = np.random.default_rng(7)
    m, n, k = 24, 40, 96
    a = rng.standard_normal((k, m) if transpose_a else (m, k)) * 2
    b = rng.standard_normal((n, k) if transpose_b else (k, n)) / 2
    qa = ops.quantize(a.astype(np.float32))
    qb = ops.quantize(b.astype(np.float32), "e5m2", scale=4.0)
    bias_v = rng.standard_normal(n).astype(np.float32) if bias else None
    got = ops.scaled_matmul(qa, qb, bias=bias_v, transpose_a=transpose_a,
                            transpose_b=transpose_b, gelu=gelu,
                            out_dtype="f32")
    da = qa.data.astype(np.float64) * qa.scale_inv
    db = qb.data.astype(np.float64) * qb.scale_inv
    da = da.T if transpose_a else da
    db = db.T if transpose_b else db
    want = da @ db + (bias_v if bias else 0)
    terms = np.abs(da) @ np.abs(db) + (np.abs(bias_v) if bias else 0)
    if gelu:
        want = fp8_ref_gelu(want)
    # f32 accumulation of k exact products: k ulps of the term magnitudes.
    assert got.shape == (m, n)
    np.testing.assert_array_less(np.abs(got - want), k * 2.0**-23 * terms +
                                 1e-30)
    # bf16 output: one more rounding, half an ulp: 2^-8 relative (8
    # significant bits).
    got16 = ops.scaled_matmul(qa, qb, bias=bias_v, transpose_a=transpose_a,
                              transpose_b=transpose_b, gelu=gelu)
    assert got16.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_less(
        np.abs(got16.astype(np.float64) - want),
        2.0**-8 * np.abs(want) + k * 2.0**-23 * terms + 1e-30)


# The three GEMMs of a Linear layer as TE runs them, on Float8Tensors in
# each block mode: scaled_matmul picks the copy whose scales run along K.
# The reference is the float64 product of the dequantized copies (the
# scales are exact block by block, so the only error is the f32 sums).
GEMM_PASSES = {
    # name: (a is x / dy / dy^T, b is W / W / x; transposes of the logical
    # tensors)
    "fprop": ("x", "w", False, True),
    "dgrad": ("dy", "w", False, False),
    "wgrad": ("dy", "x", True, False),
}


@pytest.mark.parametrize("modes", [("mxfp8_1x32", "mxfp8_1x32"),
                                   ("block_1x128", "block_128x128")])
@pytest.mark.parametrize("gemm", GEMM_PASSES)
def test_scaled_matmul_block_modes(modes, gemm):
    rng = np.random.default_rng(11)
    tokens, d_in, d_out = 64, 160, 96
    x = rng.standard_normal((tokens, d_in)).astype(np.float32)
    w = rng.standard_normal((d_out, d_in)).astype(np.float32) / 4
    dy = rng.standard_normal((tokens, d_out)).astype(np.float32)
    x_mode, w_mode = modes[0], modes[1]
    q = {"x": ops.quantize(x, mode=x_mode, usage="both"),
         "w": ops.quantize(w, mode=w_mode, usage="both"),
         "dy": ops.quantize(dy, "e5m2", mode=x_mode, usage="both")}
    values = {"x": x, "w": w, "dy": dy}
    a_name, b_name, ta, tb = GEMM_PASSES[gemm]
    if gemm == "wgrad" and modes[0] == "block_1x128":
        q["x"] = ops.quantize(x, mode="block_1x128", usage="both")
    got = ops.scaled_matmul(q[a_name], q[b_name], transpose_a=ta,
                            transpose_b=tb, out_dtype="f32")

    def deq(name, k_is_last):
        t = q[name]
        # The copy scaled_matmul reads: its values, dequantized.
        if k_is_last or t.mode == "per_tensor":
            return t.dequantize("f32").astype(np.float64)
        data = t.dequantize("f32", columnwise=True).astype(np.float64)
        return data if t.mode == "mxfp8_1x32" else data.T
    da = deq(a_name, not ta)
    db = deq(b_name, tb)
    da = da.T if ta else da
    db = db.T if tb else db
    want = da @ db
    k = da.shape[1]
    np.testing.assert_array_less(np.abs(got - want),
                                 k * 2.0**-23 * (np.abs(da) @ np.abs(db)) +
                                 1e-30)
    # The quantization error itself stays that of FP8 (sanity: the copy
    # chosen is the right tensor).
    exact = (values[a_name].T if ta else values[a_name]) @ (
        values[b_name].T if tb else values[b_name])
    assert np.abs(got - exact).max() < 0.25 * np.abs(exact).max()


def test_matmul_epilogues():
    """bf16 operands: GELU with the pre-GELU values; dGELU with the bias
    gradient; wgrad accumulating into f32 with BGRADB's."""
    rng = np.random.default_rng(12)
    m, n, k = 20, 36, 48
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    bias_v = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    p = a64 @ w64.T + bias_v.astype(np.float64)
    d, pre = ops.matmul(a, w, bias=bias_v, transpose_b=True, gelu=True,
                        pre_gelu="f32", out_dtype="f32")
    np.testing.assert_allclose(pre, p, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, fp8_ref_gelu(p), rtol=1e-4, atol=1e-5)

    pre_in = rng.standard_normal((m, n)).astype(np.float32)
    d, db = ops.matmul(a, w, transpose_b=True, dgelu_input=pre_in,
                       bias_grad="f32", out_dtype="f32")
    t = np.tanh(np.sqrt(2 / np.pi) * (pre_in + 0.044715 * pre_in**3))
    slope = 0.5 * (1 + t) + 0.5 * pre_in * (1 - t * t) * np.sqrt(2 / np.pi) * (
        1 + 3 * 0.044715 * pre_in**2)
    want = (a64 @ w64.T) * slope
    np.testing.assert_allclose(d, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, want.sum(0), rtol=1e-4, atol=1e-3)

    main_grad = rng.standard_normal((n, k)).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(ml_dtypes.bfloat16)
    dw, dbias = ops.matmul(dy, a, transpose_a=True, accumulate=main_grad,
                           bias_grad="f32", out_dtype="f32")
    np.testing.assert_allclose(
        dw, dy.astype(np.float64).T @ a64 + main_grad, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(dbias, dy.astype(np.float64).sum(0),
                               rtol=1e-5, atol=1e-5)
    assert ops.matmul(a, w, transpose_b=True).dtype == ml_dtypes.bfloat16
    with pytest.raises(te_mlir.DTypeError, match="a is bf16 and b is f16"):
        ops.matmul(a, w.astype(np.float16), transpose_b=True)


def test_scaled_matmul_refuses_what_te_does_not_take():
    x = np.ones((64, 64), np.float32)
    row_only = ops.quantize(x, mode="mxfp8_1x32")
    # dgrad reads W along its first dimension: the column-wise copy.
    with pytest.raises(ValueError, match="columnwise.*usage='columnwise'"):
        ops.scaled_matmul(row_only, row_only)
    with pytest.raises(te_mlir.DTypeError, match="a is f8E4M3FN and b is f32"):
        ops.scaled_matmul(ops.quantize(x).data, x, np.float32(1))
    with pytest.raises(ValueError, match="scaling=.*pair"):
        ops.scaled_matmul(row_only, row_only, transpose_b=True,
                          scaling=("per_tensor",) * 3)


@pytest.mark.parametrize("mode", ["per_tensor", "mxfp8_1x32", "block_128x128"])
@pytest.mark.parametrize("gemm", ["fprop", "dgrad"])
def test_grouped_matmul_float8_tensors(mode, gemm):
    """GroupedLinear's GEMMs with one quantizer per group: each group's
    rows times its weight, from Float8Tensors, against the dequantized
    operands' product (each group's scales are its own)."""
    rng = np.random.default_rng(13)
    splits, d_in, d_out = [9, 0, 30, 25], 160, 96
    tokens = sum(splits)
    starts = np.cumsum([0] + splits[:-1])
    x_mode = "block_1x128" if mode == "block_128x128" else mode
    ws = [rng.standard_normal((d_out, d_in)).astype(np.float32) * (g + 1)
          for g in range(len(splits))]
    wq = [ops.quantize(w, mode=mode, usage="both") for w in ws]
    if gemm == "fprop":
        a = rng.standard_normal((tokens, d_in)).astype(np.float32)
        aq = ops.quantize(a, mode=x_mode, usage="rowwise")
        got = ops.grouped_matmul(aq, wq, splits, transpose_b=True,
                                 out_dtype="f32")
    else:
        a = rng.standard_normal((tokens, d_out)).astype(np.float32)
        aq = ops.quantize(a, "e5m2", mode=x_mode, usage="rowwise")
        got = ops.grouped_matmul(aq, wq, splits, out_dtype="f32")
    da = aq.dequantize("f32").astype(np.float64)
    want = np.zeros_like(got, dtype=np.float64)
    bound = np.zeros_like(want)
    for g, (s, m) in enumerate(zip(starts, splits)):
        if mode == "per_tensor" or gemm == "fprop":
            dw = wq[g].dequantize("f32").astype(np.float64)
        else:  # dgrad reads W along its first dimension: the column-wise copy
            dw = wq[g].dequantize("f32", columnwise=True).astype(np.float64)
            dw = dw if mode == "mxfp8_1x32" else dw.T
        op_b = dw.T if gemm == "fprop" else dw
        want[s:s + m] = da[s:s + m] @ op_b
        bound[s:s + m] = da.shape[1] * 2.0**-23 * (np.abs(da[s:s + m]) @ np.abs(op_b))
    np.testing.assert_array_less(np.abs(got - want), bound + 1e-30)


def test_grouped_matmul_torch_and_refusals():
    import torch
    rng = np.random.default_rng(14)
    x = torch.from_numpy(rng.standard_normal((40, 32)).astype(np.float32))
    ws = torch.from_numpy(rng.standard_normal((3, 16, 32)).astype(np.float32))
    bias = torch.from_numpy(rng.standard_normal((3, 16)).astype(np.float32))
    splits = [10, 20, 10]
    got = ops.grouped_matmul(x.bfloat16(), list(ws.bfloat16()), splits,
                             bias=bias.bfloat16(), transpose_b=True)
    assert got.dtype == torch.bfloat16 and got.shape == (40, 16)
    want = torch.cat([p.bfloat16().float() @ w.bfloat16().float().T + b.bfloat16().float()
                      for p, w, b in zip(x.split(splits), ws, bias)])
    torch.testing.assert_close(got.float(), want, rtol=2**-7, atol=1e-2)
    with pytest.raises(te_mlir.ShapeError, match="2 matrices in b for 3 splits"):
        ops.grouped_matmul(x, list(ws[:2]), splits, transpose_b=True)
    with pytest.raises(te_mlir.DTypeError, match="a is f32 and b is bf16"):
        ops.grouped_matmul(x, ws.bfloat16(), splits, transpose_b=True)
    with pytest.raises(te_mlir.ShapeError, match="inner dimensions differ"):
        ops.grouped_matmul(x, ws, splits)
    with pytest.raises(te_mlir.ShapeError, match="the splits sum to 41"):
        ops.grouped_matmul(x, ws, [10, 20, 11], transpose_b=True)
    with pytest.raises(te_mlir.ShapeError, match=r"splits\[1\] = -1"):
        ops.grouped_matmul(x, ws, [10, -1, 31], transpose_b=True)


def test_grouped_matmul_fp8_refusals():
    """FP8 operands without their scales, Float8Tensors mixed with raw
    matrices or with each other's modes, and scales given twice: each a
    ValueError that says what to pass."""
    rng = np.random.default_rng(15)
    splits = [10, 20, 10]
    x = rng.standard_normal((40, 64)).astype(np.float32)
    ws = [rng.standard_normal((16, 64)).astype(np.float32) for _ in splits]
    xq = ops.quantize(x, usage="rowwise")
    wq = [ops.quantize(w, usage="both") for w in ws]
    raw_w = np.stack([q.data for q in wq])
    with pytest.raises(ValueError, match="FP8 operands need a_scale_inv and "
                       "b_scale_inv"):
        ops.grouped_matmul(xq.data, raw_w, splits, transpose_b=True)
    with pytest.raises(ValueError, match=r"b mixes Float8Tensors \(groups "
                       r"\[0, 2\]\) with raw matrices"):
        ops.grouped_matmul(xq, [wq[0], raw_w[1], wq[2]], splits,
                           transpose_b=True)
    mixed = [wq[0], ops.quantize(ws[1], mode="block_128x128", usage="both"),
             wq[2]]
    with pytest.raises(ValueError, match="share one scaling mode and layout"):
        ops.grouped_matmul(xq, mixed, splits, transpose_b=True)
    with pytest.raises(ValueError, match="b_scale_inv comes from them"):
        ops.grouped_matmul(xq, wq, splits, b_scale_inv=np.ones(3, np.float32),
                           transpose_b=True)
    with pytest.raises(ValueError, match="a_scale_inv comes from it"):
        ops.grouped_matmul(xq, wq, splits, a_scale_inv=np.ones(3, np.float32),
                           transpose_b=True)
    with pytest.raises(ValueError, match="needs its row-wise copy"):
        ops.grouped_matmul(ops.quantize(x, usage="columnwise"), wq, splits,
                           transpose_b=True)


def fp8_ref_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def test_scaled_matmul_fp8_output():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    qa, qw = ops.quantize(a), ops.quantize(w)
    d, d_amax = ops.scaled_matmul(qa, qw, transpose_b=True, out_dtype="e4m3",
                                  out_scale=np.float32(8.0))
    exact = ops.scaled_matmul(qa, qw, transpose_b=True, out_dtype="f32")
    assert d.dtype == ml_dtypes.float8_e4m3fn
    assert d_amax == fp8_ref.amax_of(exact)
    assert fp8_ref.same_fp8_bits(bits(d), fp8_ref.cast_fp8(exact * 8, E4M3)
                                 ).all()


def test_update_delayed_scaling_over_steps():
    history = np.zeros((4, 2), np.float32)
    scale = np.ones(2, np.float32)
    want_h, want_s = history, scale
    for step, amax in enumerate([[1.0, 3.0], [np.nan, 0.5], [8.0, 0.0]]):
        amax = np.array(amax, np.float32)
        history, scale = ops.update_delayed_scaling(history, amax, scale,
                                                    "e4m3", margin=1)
        want_h, want_s = fp8_ref.update_delayed_scaling(want_h, amax, want_s,
                                                        E4M3, margin=1)
        np.testing.assert_array_equal(history, want_h)
        np.testing.assert_array_equal(scale, want_s)
    _, s = ops.update_delayed_scaling(history[:, 0], np.float32(2.0),
                                      np.float32(1.0), amax_algo="most_recent")
    assert s == np.float32(224.0)


@pytest.mark.parametrize("algo", ["max", "most_recent"])
@pytest.mark.parametrize("entries", [(), (3,)])
def test_update_delayed_scaling_with_a_history_of_one(algo, entries):
    """amax_history_len = 1 (TE allows it): the roll leaves the new amax as
    the only entry, and the scale comes from it; NaN, inf and 0 keep the
    previous scale."""
    history = np.zeros((1,) + entries, np.float32)
    scale = np.ones(entries, np.float32)
    want_h, want_s = history, scale
    steps = [4.0, np.nan, 0.0, np.inf, 1e-30, 0.5, -2.0]
    for step, value in enumerate(steps):
        amax = np.full(entries, value, np.float32)
        if entries:
            amax[0] = 3.0  # the entries are independent
        history, scale = ops.update_delayed_scaling(
            history, amax, scale, "e5m2", amax_algo=algo, margin=1)
        want_h, want_s = fp8_ref.update_delayed_scaling(
            want_h, amax, want_s, E5M2, algo, margin=1)
        assert history.shape == (1,) + entries
        np.testing.assert_array_equal(history, want_h, err_msg=str(step))
        np.testing.assert_array_equal(scale, want_s, err_msg=str(step))
    # Only the latest amax counts: after 0.5, then -2 (no usable amax: the
    # scale stays), the scale is (57344 * 2^-1) / 0.5.
    assert history.reshape(-1)[-1] == np.float32(-2.0)
    assert scale.reshape(-1)[-1] == np.float32(57344.0)
    if entries:
        assert scale[0] == np.float32(28672.0) / np.float32(3.0)


# --- Attention -----------------------------------------------------------


def attention_case(layout, rng, b=2, s_q=24, s_kv=24, h_q=4, h_kv=2, d=16):
    shapes = {"bshd": lambda s, h: (b, s, h, d), "sbhd": lambda s, h: (s, b, h, d),
              "bhsd": lambda s, h: (b, h, s, d), "thd": lambda s, h: (s, h, d)}
    q = rng.standard_normal(shapes[layout](s_q, h_q)).astype(np.float32)
    k = rng.standard_normal(shapes[layout](s_kv, h_kv)).astype(np.float32)
    v = rng.standard_normal(shapes[layout](s_kv, h_kv)).astype(np.float32)
    return q, k, v


CASES = {
    "bshd-causal-gqa": dict(layout="bshd", mask="causal"),
    "sbhd-window-postbias": dict(layout="sbhd", mask="no_mask",
                                 window=(5, 3), bias=True),
    "bhsd-padding-learnable": dict(layout="bhsd", mask="padding",
                                   seqlens=True, softmax="learnable"),
    "bshd-alibi-bottom-right": dict(layout="bshd",
                                    mask="causal_bottom_right", alibi=True,
                                    s_q=16),
    "thd-padding-causal": dict(layout="thd", mask="padding_causal"),
    "bshd-arbitrary-off-by-one-prebias": dict(
        layout="bshd", mask="arbitrary", softmax="off_by_one", bias="pre"),
}


def build_case(name):
    spec = dict(CASES[name])
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    layout = spec["layout"]
    s_q = spec.get("s_q", 24)
    q, k, v = attention_case(layout, rng, s_q=s_q)
    kw = dict(layout=layout, mask=spec["mask"], window=spec.get("window"),
              scale=0.3)
    cfg = attn_ref.Config(layout=layout, mask=spec["mask"],
                          window=spec.get("window"), scale=0.3)
    if spec.get("bias"):
        kind = "pre_scale" if spec["bias"] == "pre" else "post_scale"
        bias = rng.standard_normal((1, 4, s_q, 24)).astype(np.float32)
        kw.update(bias=bias, bias_type=kind)
        cfg.bias_kind, cfg.bias = kind, bias
    if spec.get("alibi"):
        slopes = rng.uniform(0.1, 0.5, 4).astype(np.float32)
        kw.update(alibi_slopes=slopes)
        cfg.bias_kind, cfg.alibi_slopes = "alibi", slopes
    if spec.get("softmax"):
        kw.update(softmax=spec["softmax"])
        cfg.softmax = spec["softmax"]
        if spec["softmax"] == "learnable":
            alpha = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
            kw.update(softmax_offset=alpha)
            cfg.softmax_offset = alpha
    if spec.get("seqlens"):
        lq = np.array([24, 9], np.int32)
        lkv = np.array([17, 24], np.int32)
        kw.update(seqlens_q=lq, seqlens_kv=lkv)
        cfg.seqlens_q, cfg.seqlens_kv = lq, lkv
    if layout == "thd":
        cu = np.array([0, 10, 24], np.int32)
        kw.update(cu_seqlens_q=cu, cu_seqlens_kv=cu)
        cfg.cu_seqlens_q = cfg.cu_seqlens_kv = cu
    if spec["mask"] == "arbitrary":
        m = rng.random((2, 1, s_q, 24)) < 0.3
        kw.update(mask_tensor=m)
        cfg.mask_tensor = m
    return q, k, v, kw, cfg


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_forward_and_backward(name):
    q, k, v, kw, cfg = build_case(name)
    o, lse = ops.attention(q, k, v, return_lse=True, **kw)
    want_o, want_lse = attn_ref.forward(q, k, v, cfg)
    assert o.shape == want_o.shape and lse.shape == want_lse.shape
    # f32 throughout: a few hundred roundings of O(1) terms.
    np.testing.assert_allclose(o, want_o, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-5, atol=2e-5)
    d_o = np.random.default_rng(9).standard_normal(o.shape).astype(
        np.float32)
    grads = ops.attention_backward(q, k, v, o, d_o, lse, **kw)
    want = attn_ref.backward(q, k, v, o, d_o, lse, cfg).results()
    assert len(grads) == len(want)
    for got, ref in zip(grads, want):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_attention_bf16_gqa():
    rng = np.random.default_rng(10)
    q, k, v = (a.astype(ml_dtypes.bfloat16)
               for a in attention_case("bshd", rng, h_q=8, h_kv=2))
    o = ops.attention(q, k, v)  # causal by default, as the API promises
    assert o.dtype == ml_dtypes.bfloat16
    want, _ = attn_ref.forward(q, k, v, attn_ref.Config("bshd", "causal"))
    # bf16 result of an f32 computation: half an ulp (2^-8 relative), and
    # probabilities rounded to bf16 before P.V (2^-8 of max |v|).
    err = np.abs(o.astype(np.float64) - want)
    assert (err <= 2.0**-8 * np.abs(want) +
            2.0**-8 * np.abs(v.astype(np.float32)).max()).all()


def test_attention_mixed_dtypes_name_the_arguments():
    """q, k and v of different dtypes (as torch.autocast can leave them)
    are a DTypeError naming each argument's dtype, before any compile;
    so are a backward's o and d_o that are not q's dtype."""
    rng = np.random.default_rng(12)
    q, k, v = attention_case("bshd", rng, h_q=4, h_kv=2)
    with pytest.raises(te_mlir.DTypeError,
                       match=r"attention: q, k and v must have one dtype.*"
                       r"got q f32, k f32, v bf16"):
        ops.attention(q, k, v.astype(ml_dtypes.bfloat16))
    o, lse = ops.attention(q, k, v, return_lse=True)
    with pytest.raises(te_mlir.DTypeError,
                       match=r"attention_backward: o and d_o must have the "
                       r"dtype of q, k and v \(f32\), got d_o bf16"):
        ops.attention_backward(q, k, v, o, o.astype(ml_dtypes.bfloat16), lse)


def test_attention_dropout_needs_a_seed_and_reproduces():
    rng = np.random.default_rng(11)
    q, k, v = attention_case("bshd", rng)
    with pytest.raises(ValueError, match="seed"):
        ops.attention(q, k, v, dropout=0.25)
    a, lse = ops.attention(q, k, v, dropout=0.25, seed=7, return_lse=True)
    b = ops.attention(q, k, v, dropout=0.25, seed=7)
    c = ops.attention(q, k, v, dropout=0.25, seed=8)
    full, full_lse = ops.attention(q, k, v, return_lse=True)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, full)
    # The statistics are those before dropout (another kernel: f32 roundings).
    np.testing.assert_allclose(lse, full_lse, rtol=1e-6)
    grads = ops.attention_backward(q, k, v, a, np.ones_like(a), lse,
                                   dropout=0.25, seed=7)
    assert all(np.isfinite(g).all() for g in grads)


# --- Compile once, errors, concurrency ----------------------------------


def test_one_compile_per_configuration(monkeypatch):
    jit = te_mlir.default_jit()
    compiled = []
    compile_ = jit.compile
    monkeypatch.setattr(jit, "compile", lambda *a, **k: compiled.append(
        a[0]) or compile_(*a, **k))
    ops._forget_programs()
    x = np.ones((3, 5), np.float32)
    for i in range(3):
        assert ops.amax(x * i) == i
    ops.amax(np.ones((3, 5), ml_dtypes.bfloat16))  # a new dtype
    ops.amax(np.ones((3, 6), np.float32))          # a new shape
    assert ops.amax(x) == 1
    assert len(compiled) == 3  # one per configuration
    assert all(src.count("te.amax") == 1 for src in compiled)
    te_mlir.cache.clear(disk=False)  # forgets the loaded programs too
    ops.amax(x)
    assert len(compiled) == 4 and "tensor<3x5xf32>" in compiled[-1]


def test_outputs_are_the_kernels_buffers():
    # f32 results are the runtime's arrays themselves (bf16 and FP8 ones
    # are views of them, as their raw bits).
    amax = ops.amax(np.ones((8, 32), np.float32))
    scale = ops.compute_scale(np.ones(4, np.float32))
    for y in (amax, scale):
        assert y.dtype == np.float32 and not y.flags.owndata
        assert y.base is not None and y.ctypes.data % 64 == 0


def test_errors_are_typed():
    x = np.ones((4, 32), np.float32)
    with pytest.raises(te_mlir.DTypeError, match="f32 or f16 or bf16"):
        ops.amax(np.ones(4, np.int32))
    with pytest.raises(te_mlir.DTypeError, match="e4m3"):
        ops.quantize(x, "f16")
    with pytest.raises(ValueError, match="mode='mxfp9'.*per_tensor"):
        ops.quantize(x, mode="mxfp9")
    with pytest.raises(ValueError, match="layout='bsdh'"):
        ops.attention(x, x, x, layout="bsdh")
    with pytest.raises(te_mlir.ShapeError, match="inner dimensions"):
        q = ops.quantize(x)
        ops.scaled_matmul(q, q)
    with pytest.raises(ValueError, match="out_scale"):
        ops.scaled_matmul(q, q, transpose_b=True, out_dtype="e4m3")
    q4 = np.ones((1, 8, 2, 16), np.float32)
    # The verifier's diagnostic, with where it points.
    with pytest.raises(te_mlir.CompileError, match="window") as info:
        ops.attention(q4, q4, q4, mask="causal", window=(2, 1))
    assert info.value.location and "te_mlir.ops.te.attention" in str(
        info.value)
    with pytest.raises(te_mlir.CompileError, match="head"):
        ops.attention(q4, np.ones((1, 8, 3, 16), np.float32), q4)
    with pytest.raises(ValueError, match="pre_scale needs bias"):
        ops.attention_backward(q4, q4, q4, q4, q4, np.ones((1, 2, 8, 1),
                                                          np.float32),
                               bias_type="pre_scale")
    with pytest.raises(ValueError, match="transpose=True.*rowwise"):
        ops.quantize(x, transpose=True, usage="rowwise")
    # Float attributes are finite f32 numbers, refused by name before any
    # IR is written (NaN would be an IR syntax error).
    for what, call in (
            ("scale", lambda v: ops.attention(q4, q4, q4, scale=v)),
            ("dropout", lambda v: ops.attention(q4, q4, q4, dropout=v,
                                                seed=1)),
            ("epsilon", lambda v: ops.quantize(x, epsilon=v)),
            ("epsilon", lambda v: ops.quantize(x, mode="block_1x128",
                                               epsilon=v)),
            ("epsilon", lambda v: ops.compute_scale(np.float32(2),
                                                    epsilon=v))):
        for bad in (float("nan"), float("inf"), -np.inf, np.float32("nan"),
                    1e39):
            with pytest.raises(ValueError, match=f"{what}=.*finite"):
                call(bad)
    # Integer attributes are integers: 1.9 is not truncated to 1.
    for window in ((1.9, 0), (1.0, 0), (0, np.float32(2)), ("1", 0)):
        with pytest.raises(TypeError, match=r"window=.*expected an integer"):
            ops.attention(q4, q4, q4, mask="no_mask", window=window)
    with pytest.raises(ValueError, match=r"window=.*\(left, right\)"):
        ops.attention(q4, q4, q4, mask="no_mask", window=(1, 2, 3))
    with pytest.raises(TypeError, match="margin=1.5"):
        ops.update_delayed_scaling(np.zeros(2, np.float32), np.float32(1),
                                   np.float32(1), margin=1.5)
    with pytest.raises(TypeError, match="seed=0.5"):
        ops.attention(q4, q4, q4, dropout=0.5, seed=0.5)
    # numpy integers are integers.
    ops.attention(q4, q4, q4, mask="no_mask",
                  window=(np.int64(2), np.int32(0)))
    # A negative seed is a 64-bit pattern like any other.
    ops.attention(q4, q4, q4, dropout=0.5, seed=-1)


def test_concurrent_calls_compile_once_and_agree():
    rng = np.random.default_rng(12)
    xs = [rng.standard_normal((7, 9 + i % 3)).astype(np.float32)
          for i in range(24)]
    results = [None] * len(xs)

    def work(i):
        results[i] = ops.amax(xs[i])
    threads = [threading.Thread(target=work, args=(i,))
               for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(xs, results):
        assert r == fp8_ref.amax_of(x)


# --- Normalization ---------------------------------------------------------


@pytest.mark.parametrize("zero_centered", [False, True])
def test_norms_against_torch_autograd(zero_centered):
    """layer_norm and rms_norm in f32 with their backwards, against torch's
    functional norms and autograd (an independent implementation; TE's
    zero-centered gamma is torch's weight + 1). f32 sums over 96 elements:
    agreement to a few f32 ulps of the values' scale."""
    import torch
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 5, 96)) * 3 + 1).astype(np.float32)
    weight = (rng.standard_normal(96) * 0.2 +
              (0 if zero_centered else 1)).astype(np.float32)
    bias = rng.standard_normal(96).astype(np.float32)
    dz = rng.standard_normal(x.shape).astype(np.float32)
    add = rng.standard_normal(x.shape).astype(np.float32)
    eps = 1e-5
    g = weight + (1 if zero_centered else 0)

    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(g, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(bias, dtype=torch.float64, requires_grad=True)
    tz = torch.nn.functional.layer_norm(tx, (96,), tw, tb, eps)
    tz.backward(torch.tensor(dz, dtype=torch.float64))
    z, mu, rsigma = ops.layer_norm(x, weight, bias, eps=eps,
                                   zero_centered_gamma=zero_centered)
    assert z.shape == x.shape and mu.shape == rsigma.shape == (2, 5)
    np.testing.assert_allclose(z, tz.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mu, x.astype(np.float64).mean(-1), rtol=1e-5,
                               atol=1e-6)
    dx, dw, db = ops.layer_norm_backward(dz, x, mu, rsigma, weight,
                                         zero_centered_gamma=zero_centered)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-5, atol=1e-5)

    tx.grad = None
    tw = torch.tensor(g, dtype=torch.float64, requires_grad=True)
    tz = torch.nn.functional.rms_norm(tx, (96,), tw, eps)
    tz.backward(torch.tensor(dz, dtype=torch.float64))
    z, rsigma = ops.rms_norm(x, weight, eps=eps,
                             zero_centered_gamma=zero_centered)
    np.testing.assert_allclose(z, tz.detach().numpy(), rtol=1e-5, atol=1e-5)
    dx, dw = ops.rms_norm_backward(dz, x, rsigma, weight, add=add,
                                   zero_centered_gamma=zero_centered)
    np.testing.assert_allclose(dx, tx.grad.numpy() + add, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_norms_take_torch_bf16_and_refuse_bad_shapes():
    import torch
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    w = torch.ones(64, dtype=torch.bfloat16)
    z, rsigma = ops.rms_norm(x, w)
    assert z.dtype == torch.bfloat16 and rsigma.dtype == torch.float32
    want = torch.nn.functional.rms_norm(x.double(), (64,), eps=1e-5)
    # One rounding to bf16 (2^-8 relative) of values below 8 in magnitude.
    torch.testing.assert_close(z.double(), want, rtol=2 ** -8, atol=2 ** -8)
    with pytest.raises(te_mlir.ShapeError, match=r"weight must have shape "
                                                 r"\[64\]"):
        ops.rms_norm(x, torch.ones(32, dtype=torch.bfloat16))
    with pytest.raises(te_mlir.ShapeError, match=r"x must have rank >= 2"):
        ops.layer_norm(torch.ones(64), torch.ones(64))
    with pytest.raises(te_mlir.CompileError, match=r"'gamma' must be"):
        ops.layer_norm(x, torch.ones(64))
