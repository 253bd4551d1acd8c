"""TE's cross-entropy loss at its import path
(transformer_engine.pytorch.cross_entropy): parallel_cross_entropy,
through te.cross_entropy."""

import warnings

from .. import ops as _ops
from .ops.cross_entropy import cross_entropy

__all__ = ["parallel_cross_entropy"]


def _vocab_group(group):
    """The size of the te group that stands for torch ProcessGroup `group`
    (None for none or one rank). te's collectives run over te's own world
    (MPI's under mpirun), so torch's must be the same processes in the same
    order, and the group a block of consecutive ranks, as te.process_group
    lays its groups out (TE's tensor-parallel groups are)."""
    if group is None:
        return None
    import torch.distributed as dist
    size = dist.get_world_size(group)
    if size < 0:
        raise ValueError("parallel_cross_entropy: this process is not a "
                         "rank of dist_process_group")
    if size == 1:
        return None
    te_rank, te_size = _ops.world()
    torch_world = ((dist.get_rank(), dist.get_world_size())
                   if dist.is_initialized() else None)
    if torch_world != (te_rank, te_size):
        raise NotImplementedError(
            f"parallel_cross_entropy: dist_process_group has {size} ranks, "
            "and te_mlir splits the vocabulary over te's own world (MPI's, "
            f"here rank {te_rank} of {te_size}), which must be "
            "torch.distributed's: "
            + ("torch.distributed is not initialized" if torch_world is None
               else f"torch's is rank {torch_world[0]} of {torch_world[1]}")
            + "; run one process per rank under mpirun and initialize "
            "torch.distributed with te_mlir.ops.world()'s rank and size")
    ranks = list(dist.get_process_group_ranks(group))
    start = te_rank - te_rank % size
    if ranks != list(range(start, start + size)):
        raise NotImplementedError(
            f"parallel_cross_entropy: dist_process_group holds ranks "
            f"{ranks}; te_mlir splits the vocabulary over blocks of "
            f"{size} consecutive ranks starting at a multiple of {size} "
            f"(te.process_group's layout), which for rank {te_rank} is "
            f"{list(range(start, start + size))}")
    return size


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

    dist_process_group: the vocabulary split over its ranks (inp holds
    this rank's V columns, classes [r V, (r + 1) V); target the whole
    vocabulary's classes), through te's collectives: the group must be
    consecutive ranks of a torch.distributed world that is te's (one
    process per rank under mpirun). As TE's, with label smoothing each
    rank's loss holds its own columns' share of the smoothing term."""
    if _input is not None:
        warnings.warn("The '_input' parameter is deprecated. Please use "
                      "'inp' instead.", FutureWarning, stacklevel=2)
        inp = _input
    loss = cross_entropy(inp, target, label_smoothing=label_smoothing,
                         reduce_loss=reduce_loss, ignore_index=ignore_idx,
                         group_size=_vocab_group(dist_process_group))
    return loss.reshape(1) if reduce_loss else loss
