"""te_mlir::quantize, te_mlir::dequantize and te_mlir::scaled_matmul: TE's
FP8 casts and GEMM as torch custom ops, on FP8 data as raw bits, and the
functions that view those bits as torch's float8 dtypes."""

from typing import Optional

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import bits, empty, fake, host, scale_type, typed


@torch.library.custom_op("te_mlir::quantize", mutates_args=())
def _quantize_op(x: Tensor, scale: Optional[Tensor], fp8: str, mode: str,
                 usage: str, pow2_scales: Optional[bool],
                 epsilon: float) -> list[Tensor]:
    """te.quantize: [data, scale_inv, columnwise_data,
    columnwise_scale_inv, amax] (FP8 and E8M0 as uint8 bits), empty where
    the mode and usage have no such result (per_tensor's column-wise copy
    shares scale_inv, so its own entry is empty too)."""
    q = _ops.quantize(host(x), fp8, mode, scale=host(scale), usage=usage,
                      pow2_scales=pow2_scales, epsilon=epsilon or None)
    return _quantize_op_results(
        (q.data, q.scale_inv, q.columnwise_data, q.columnwise_scale_inv,
         q.amax), mode, x)


def _quantize_op_results(parts, mode, like):
    """The op's five results from split_quantize_results' parts: raw bits,
    empty for what is absent and for per_tensor's shared column-wise
    scale_inv (an op's outputs may not alias each other)."""
    parts = list(parts)
    if mode == "per_tensor":
        parts[3] = None
    return [bits(t) if t is not None else empty(like) for t in parts]


@_quantize_op.register_fake
def _(x, scale, fp8, mode, usage, pow2_scales, epsilon):
    results = _ops.quantize_results(x.shape, _ops._fp8_name(fp8), mode,
                                    usage)
    return _quantize_op_results(_ops.split_quantize_results(
        [fake(x, dtype, shape) for dtype, shape in results], mode, usage),
        mode, x)


def quantize(x, fp8="e4m3", mode="per_tensor", *, scale=None, usage=None,
             transpose=False, pow2_scales=None, epsilon=None):
    """te_mlir.ops.quantize through te_mlir::quantize: a
    te_mlir.ops.Float8Tensor of torch tensors (float8 dtypes)."""
    fp8 = _ops._fp8_name(fp8)
    usage = _ops._usage(usage, transpose)
    data, si, col, col_si, amax = _quantize_op(x, scale, fp8, mode, usage,
                                               pow2_scales, epsilon or 0.0)
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    scales = scale_type(mode)
    if mode == "per_tensor":
        col_si = si
    return _ops.Float8Tensor(
        typed(data, fp8) if rowwise else None,
        typed(si, scales) if rowwise or mode == "per_tensor" else None,
        typed(col, fp8) if columnwise else None,
        typed(col_si, scales) if columnwise else None,
        amax if mode == "per_tensor" else None, mode, fp8,
        _ops.dtype_name(x.dtype), tuple(x.shape))


@torch.library.custom_op("te_mlir::dequantize", mutates_args=())
def _dequantize_op(data: Tensor, scale_inv: Tensor, fp8: str, mode: str,
                   columnwise: bool, dtype: str) -> Tensor:
    """te.dequantize of FP8 bits (uint8) of type `fp8`."""
    return _ops.dequantize(typed(host(data), fp8), dtype,
                           scale_inv=typed(host(scale_inv),
                                            scale_type(mode)),
                           mode=mode, columnwise=columnwise)


@_dequantize_op.register_fake
def _(data, scale_inv, fp8, mode, columnwise, dtype):
    return fake(data, dtype, data.shape)


def dequantize(q, dtype=None, *, columnwise=False):
    """A Float8Tensor of torch tensors back in high precision, through
    te_mlir::dequantize."""
    data, si = ((q.columnwise_data, q.columnwise_scale_inv) if columnwise
                else (q.data, q.scale_inv))
    if data is None:
        raise ValueError(f"dequantize: {q!r} has no "
                         f"{'column' if columnwise else 'row'}-wise copy")
    return _dequantize_op(bits(data), bits(si), q.fp8, q.mode,
                          columnwise and q.mode == "mxfp8_1x32",
                          _ops.dtype_name(dtype or q.dtype))


@torch.library.custom_op("te_mlir::scaled_matmul", mutates_args=())
def _scaled_matmul_op(a: Tensor, b: Tensor, a_scale_inv: Tensor,
                      b_scale_inv: Tensor, bias: Optional[Tensor],
                      out_scale: Optional[Tensor], a_fp8: str, b_fp8: str,
                      a_mode: str, b_mode: str, transpose_a: bool,
                      transpose_b: bool, gelu: bool,
                      out_dtype: str) -> list[Tensor]:
    """te.scaled_matmul of FP8 bits (uint8) of types a_fp8 and b_fp8 with
    scales in modes a_mode and b_mode (E8M0 scales as uint8 bits):
    [d, amax] (d as bits for an FP8 out_dtype; amax empty unless the
    output is FP8)."""
    out = _ops.scaled_matmul(
        typed(host(a), a_fp8), typed(host(b), b_fp8),
        typed(host(a_scale_inv), scale_type(a_mode)),
        typed(host(b_scale_inv), scale_type(b_mode)), bias=host(bias),
        out_scale=host(out_scale), transpose_a=transpose_a,
        transpose_b=transpose_b, gelu=gelu, scaling=(a_mode, b_mode),
        out_dtype=out_dtype)
    d, amax = out if isinstance(out, tuple) else (out, empty(a))
    return [bits(d), amax]


@_scaled_matmul_op.register_fake
def _(a, b, a_scale_inv, b_scale_inv, bias, out_scale, a_fp8, b_fp8,
      a_mode, b_mode, transpose_a, transpose_b, gelu, out_dtype):
    m, n = _ops.matmul_shape(a.shape, b.shape, transpose_a, transpose_b)
    return [fake(a, out_dtype, (m, n)),
            a.new_empty((), dtype=torch.float32) if out_scale is not None
            else empty(a)]


def scaled_matmul(a, b, *, bias=None, out_scale=None, transpose_a=False,
                  transpose_b=False, gelu=False, out_dtype=torch.bfloat16):
    """The FP8 GEMM of two Float8Tensors (of torch tensors) in any scaling
    mode through te_mlir::scaled_matmul: D, or (D, amax) for an FP8
    out_dtype (per_tensor operands). op(A) = A^T with transpose_a, op(B) =
    B^T with transpose_b, for the tensors as quantized; each operand's copy
    whose scales run along K is used, as te_mlir.ops.scaled_matmul (and
    TE) choose it."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, _ops.Float8Tensor):
            raise TypeError(f"scaled_matmul: {name} must be a Float8Tensor "
                            f"(te_mlir.torch.quantize), got "
                            f"{type(x).__name__}")
    a_data, a_si, transpose_a = _ops.gemm_copy(a, not transpose_a,
                                               transpose_a, "a")
    b_data, b_si, transpose_b = _ops.gemm_copy(b, transpose_b, transpose_b,
                                               "b")
    out = _ops.dtype_name(out_dtype)
    d, amax = _scaled_matmul_op(bits(a_data), bits(b_data), bits(a_si),
                                bits(b_si), bias, out_scale, a.fp8, b.fp8,
                                a.mode, b.mode, transpose_a, transpose_b,
                                gelu, out)
    if out in ("f8E4M3FN", "f8E5M2"):
        return typed(d, out), amax
    return d
