"""te_mlir::cross_entropy and te_mlir::cross_entropy_backward:
te.cross_entropy and its backward as torch custom ops joined by autograd,
and `cross_entropy`, the differentiable function on them."""

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import host


@torch.library.custom_op("te_mlir::cross_entropy", mutates_args=())
def _cross_entropy_op(logits: Tensor, target: Tensor, label_smoothing: float,
                      reduce_loss: bool, ignore_index: int,
                      group_size: int = 0) -> tuple[Tensor, Tensor]:
    """te.cross_entropy: (loss, the logits' f32 gradient for a loss
    gradient of 1, as TE keeps it); the vocabulary split over te groups of
    group_size ranks unless it is 0."""
    return _ops.cross_entropy(host(logits), host(target),
                              label_smoothing=label_smoothing,
                              reduce_loss=reduce_loss,
                              ignore_index=ignore_index, grad_dtype="f32",
                              group_size=group_size or None)


@_cross_entropy_op.register_fake
def _(logits, target, label_smoothing, reduce_loss, ignore_index,
      group_size=0):
    shape = () if reduce_loss else target.shape
    return (logits.new_empty(shape, dtype=torch.float32),
            torch.empty_like(logits, dtype=torch.float32))


@torch.library.custom_op("te_mlir::cross_entropy_backward", mutates_args=())
def _cross_entropy_backward_op(grad: Tensor, dloss: Tensor,
                               dtype: torch.dtype) -> Tensor:
    """te.cross_entropy_backward: the f32 grad times dloss, rounded once to
    the logits' dtype."""
    return _ops.cross_entropy_backward(host(grad), host(dloss), dtype=dtype)


@_cross_entropy_backward_op.register_fake
def _(grad, dloss, dtype):
    return torch.empty_like(grad, dtype=dtype)


def _setup_cross_entropy(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.mark_non_differentiable(output[1])
    ctx.logits_dtype = inputs[0].dtype
    # The second output (the saved gradient) never gets a gradient; left
    # materialized, autograd would fill a zero tensor of the logits' size
    # for it on every backward (a quarter of the op's time at 1024 x 32000).
    ctx.set_materialize_grads(False)


def _cross_entropy_grad(ctx, dloss, _dgrad):
    if dloss is None:
        return None, None, None, None, None, None
    (grad,) = ctx.saved_tensors
    dlogits = _cross_entropy_backward_op(
        grad, dloss.to(torch.float32).contiguous(), ctx.logits_dtype)
    return dlogits, None, None, None, None, None


_cross_entropy_op.register_autograd(_cross_entropy_grad,
                                    setup_context=_setup_cross_entropy)


def cross_entropy(logits, target, *, label_smoothing=0.0, reduce_loss=False,
                  ignore_index=-100, group_size=None):
    """TE's fused cross-entropy (te_mlir.ops.cross_entropy) through
    te_mlir::cross_entropy, differentiable in the logits: the f32 loss of
    every row, or with reduce_loss their mean over the rows not ignored,
    as TE divides; with group_size, the vocabulary split over te's groups
    of that many ranks (logits: this rank's columns)."""
    loss, _grad = _cross_entropy_op(logits.contiguous(), target.contiguous(),
                                    float(label_smoothing), bool(reduce_loss),
                                    int(ignore_index), int(group_size or 0))
    return loss
