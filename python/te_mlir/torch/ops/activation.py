"""te_mlir::activation and te_mlir::activation_backward: te.activation
and its backward as torch custom ops joined by autograd, and `activation`,
the differentiable function on them."""

from typing import Optional

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import host


def _params(kind, limit, alpha, linear_offset):
    """te_mlir.ops' keywords for clamped_swiglu's parameters; none for the
    other kinds."""
    if kind != "clamped_swiglu":
        return {}
    return dict(limit=limit, alpha=alpha, linear_offset=linear_offset)


def _out_shape(x, kind):
    shape = list(x.shape)
    if kind in _ops.GATED_ACTIVATIONS:
        shape[-1] //= 2
    return shape


@torch.library.custom_op("te_mlir::activation", mutates_args=())
def _activation_op(x: Tensor, kind: str, limit: Optional[float],
                   alpha: Optional[float],
                   linear_offset: Optional[float]) -> Tensor:
    """te.activation of kind `kind`: y (a gated kind halves the last
    dimension)."""
    return _ops.activation(host(x), kind,
                           **_params(kind, limit, alpha, linear_offset))


@_activation_op.register_fake
def _(x, kind, limit, alpha, linear_offset):
    return x.new_empty(_out_shape(x, kind))


@torch.library.custom_op("te_mlir::activation_backward", mutates_args=())
def _activation_backward_op(grad: Tensor, x: Tensor, kind: str,
                            limit: Optional[float], alpha: Optional[float],
                            linear_offset: Optional[float]) -> Tensor:
    """te.activation_backward: dx."""
    return _ops.activation_backward(
        host(grad), host(x), kind,
        **_params(kind, limit, alpha, linear_offset))


@_activation_backward_op.register_fake
def _(grad, x, kind, limit, alpha, linear_offset):
    return torch.empty_like(x)


def _setup_activation(ctx, inputs, output):
    x, *attrs = inputs
    ctx.save_for_backward(x)
    ctx.attrs = attrs


def _activation_grad(ctx, dy):
    (x,) = ctx.saved_tensors
    dx = _activation_backward_op(dy.to(x.dtype).contiguous(), x, *ctx.attrs)
    return (dx,) + (None,) * len(ctx.attrs)


_activation_op.register_autograd(_activation_grad,
                                 setup_context=_setup_activation)


def activation(x, kind, *, limit=None, alpha=None, linear_offset=None):
    """TE's activation `kind` of x (te_mlir.ops.ACTIVATIONS) through
    te_mlir::activation, differentiable in x; the gated kinds take x's
    last dimension as [activation half, gate half] and halve it.
    clamped_swiglu takes limit, alpha (default 1.702) and linear_offset
    (default 1.0)."""
    _ops._choice("kind", kind, _ops.ACTIVATIONS)
    if kind != "clamped_swiglu" and (limit, alpha, linear_offset) != \
            (None, None, None):
        raise ValueError(f"activation: limit, alpha and linear_offset are "
                         f"the parameters of clamped_swiglu, not {kind}")
    return _activation_op(x.contiguous(), kind, limit, alpha, linear_offset)
