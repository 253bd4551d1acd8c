"""te_mlir::matmul: TE's GEMM on high-precision operands (te.scaled_matmul
without scales) as a torch custom op, and `linear`, y = x W^T + b, the
differentiable function whose three GEMMs (fprop, dgrad, wgrad with the
bias gradient in its epilogue) run on it, as TE's Linear runs them
outside FP8."""

from typing import Optional

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import empty, host


@torch.library.custom_op("te_mlir::matmul", mutates_args=())
def _matmul_op(a: Tensor, b: Tensor, bias: Optional[Tensor],
               transpose_a: bool, transpose_b: bool,
               bias_grad: bool) -> tuple[Tensor, Tensor]:
    """te.scaled_matmul of f32, f16 or bf16 operands of one type: (D,
    the row sums of op(A) in D's type with bias_grad, else empty)."""
    out = _ops.matmul(host(a), host(b), bias=host(bias),
                      transpose_a=transpose_a, transpose_b=transpose_b,
                      bias_grad=a.dtype if bias_grad else None)
    return tuple(out) if bias_grad else (out, empty(a))


@_matmul_op.register_fake
def _(a, b, bias, transpose_a, transpose_b, bias_grad):
    m, n = _ops.matmul_shape(a.shape, b.shape, transpose_a, transpose_b)
    return (a.new_empty((m, n)),
            a.new_empty((m,)) if bias_grad else empty(a))


@torch.library.custom_op("te_mlir::linear", mutates_args=())
def _linear_op(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """y = x W^T + b on x [N, in], W [out, in] (TE's TN fprop GEMM)."""
    y, _ = _matmul_op(x, weight, bias, False, True, False)
    return y


@_linear_op.register_fake
def _(x, weight, bias):
    return x.new_empty((x.shape[0], weight.shape[0]))


def _setup_linear(ctx, inputs, output):
    x, weight, bias = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _linear_grad(ctx, dy):
    x, weight = ctx.saved_tensors
    dy = dy.to(x.dtype).contiguous()
    # dgrad: dy [N, out] by W [out, in] (NN); wgrad: dy^T [out, N] by x
    # [N, in] (NT), with the bias gradient (dy's column sums) from its
    # epilogue, as TE's wgrad GEMM gives it.
    dx, _ = _matmul_op(dy, weight, None, False, False, False)
    dw, db = _matmul_op(dy, x, None, True, False, ctx.has_bias)
    return dx, dw, db if ctx.has_bias else None


_linear_op.register_autograd(_linear_grad, setup_context=_setup_linear)


def linear(x, weight, bias=None):
    """y = x W^T + b over x's last dimension through te_mlir::linear,
    differentiable in x, weight and bias; x, weight and bias of one
    dtype."""
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    y = _linear_op(rows, weight.contiguous(),
                   bias.contiguous() if bias is not None else None)
    return y.reshape(*x.shape[:-1], weight.shape[0])
