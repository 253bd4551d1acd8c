"""te_mlir::norm and te_mlir::norm_backward: te.norm (LayerNorm, RMSNorm)
and its backward as torch custom ops joined by autograd, and `norm`, the
differentiable function on them."""

from typing import Optional

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import empty, host


@torch.library.custom_op("te_mlir::norm", mutates_args=())
def _norm_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], kind: str,
             eps: float, zero_centered_gamma: bool) -> tuple[Tensor, Tensor,
                                                              Tensor]:
    """te.norm on x [N, H]: (z, mu, rsigma); mu is empty for rmsnorm."""
    x, weight, bias = host(x), host(weight), host(bias)
    if kind == "layernorm":
        return _ops.layer_norm(x, weight, bias, eps=eps,
                               zero_centered_gamma=zero_centered_gamma)
    z, rsigma = _ops.rms_norm(x, weight, eps=eps,
                              zero_centered_gamma=zero_centered_gamma)
    return z, empty(x), rsigma


@_norm_op.register_fake
def _(x, weight, bias, kind, eps, zero_centered_gamma):
    rows = x.new_empty(x.shape[:-1], dtype=torch.float32)
    mean = rows if kind == "layernorm" else empty(x)
    return torch.empty_like(x), mean, torch.empty_like(rows)


def norm_backward(kind, dz, x, mu, rsigma, weight, zero_centered_gamma):
    """te.norm_backward through te_mlir.ops: (dx, dweight, dbias or None
    for rmsnorm)."""
    if kind == "layernorm":
        return _ops.layer_norm_backward(
            dz, x, mu, rsigma, weight,
            zero_centered_gamma=zero_centered_gamma)
    dx, dw = _ops.rms_norm_backward(dz, x, rsigma, weight,
                                    zero_centered_gamma=zero_centered_gamma)
    return dx, dw, None


@torch.library.custom_op("te_mlir::norm_backward", mutates_args=())
def _norm_backward_op(dz: Tensor, x: Tensor, mu: Tensor, rsigma: Tensor,
                      weight: Tensor, kind: str,
                      zero_centered_gamma: bool) -> tuple[Tensor, Tensor,
                                                          Tensor]:
    """te.norm_backward: (dx, dweight, dbias); dbias is empty for
    rmsnorm."""
    dx, dw, db = norm_backward(kind, *map(host, (dz, x, mu, rsigma,
                                                 weight)),
                               zero_centered_gamma)
    return dx, dw, db if db is not None else empty(x)


@_norm_backward_op.register_fake
def _(dz, x, mu, rsigma, weight, kind, zero_centered_gamma):
    dbias = torch.empty_like(weight) if kind == "layernorm" else empty(x)
    return torch.empty_like(x), torch.empty_like(weight), dbias


def _setup_norm(ctx, inputs, output):
    x, weight, bias, kind, _eps, zero_centered_gamma = inputs
    _z, mu, rsigma = output
    ctx.save_for_backward(x, weight, mu, rsigma)
    ctx.kind, ctx.zero_centered_gamma = kind, zero_centered_gamma
    ctx.has_bias = bias is not None


def _norm_grad(ctx, dz, _dmu, _drsigma):
    x, weight, mu, rsigma = ctx.saved_tensors
    dx, dw, db = _norm_backward_op(dz.to(weight.dtype).contiguous(), x, mu,
                                   rsigma, weight, ctx.kind,
                                   ctx.zero_centered_gamma)
    return dx, dw, db if ctx.has_bias else None, None, None, None


_norm_op.register_autograd(_norm_grad, setup_context=_setup_norm)


def norm(x, weight, bias=None, kind="layernorm", eps=1e-5,
         zero_centered_gamma=False):
    """te.norm of x [rows, hidden] through te_mlir::norm, differentiable
    in x, weight and bias: z (LayerNorm with kind="layernorm", RMSNorm,
    which takes no bias, with kind="rmsnorm")."""
    _ops._choice("kind", kind, ("layernorm", "rmsnorm"))
    if kind == "rmsnorm" and bias is not None:
        raise ValueError("norm: RMSNorm has no bias")
    z, _mu, _rsigma = _norm_op(x, weight, bias, kind, float(eps),
                               bool(zero_centered_gamma))
    return z
