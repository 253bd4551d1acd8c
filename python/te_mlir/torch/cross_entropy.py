"""TE's cross-entropy loss at its import path
(transformer_engine.pytorch.cross_entropy): parallel_cross_entropy,
through te.cross_entropy."""

import warnings

from .ops.cross_entropy import cross_entropy

__all__ = ["parallel_cross_entropy"]


def parallel_cross_entropy(inp, target, label_smoothing=0.0,
                           reduce_loss=False, dist_process_group=None,
                           ignore_idx=-100, is_cg_capturable=False, *,
                           _input=None):
    """Transformer Engine's parallel_cross_entropy: the f32 loss of every
    token of inp [B, SQ, V] (or [SQ, B, V]) against target [B, SQ], with
    label smoothing and ignore_idx, or with reduce_loss their mean over the
    tokens not ignored, as TE divides, of shape (1,) as TE's (a sum
    divided by its one-element count); differentiable in inp (the gradient
    kept in f32 and rounded once to inp's dtype, as TE). is_cg_capturable
    (CUDA graphs) changes nothing on the CPU.

    dist_process_group: a vocabulary split over ranks is not supported
    yet; a group of one rank is the whole vocabulary and is accepted."""
    if _input is not None:
        warnings.warn("The '_input' parameter is deprecated. Please use "
                      "'inp' instead.", FutureWarning, stacklevel=2)
        inp = _input
    if dist_process_group is not None:
        import torch.distributed as dist
        if dist.get_world_size(dist_process_group) != 1:
            raise NotImplementedError(
                "parallel_cross_entropy: dist_process_group with more than "
                "one rank (a vocabulary split over ranks) is not supported "
                "by te_mlir.torch yet; pass the whole vocabulary's logits "
                "with dist_process_group=None")
    loss = cross_entropy(inp, target, label_smoothing=label_smoothing,
                         reduce_loss=reduce_loss, ignore_index=ignore_idx)
    return loss.reshape(1) if reduce_loss else loss
