"""FP8 contexts and queries at TE's import path
(transformer_engine.pytorch.fp8): fp8_autocast and autocast with a torch
ProcessGroup for the amax reduction, fp8_model_init, and the
is_*_available queries."""

import contextlib

from .. import recipe as _recipe

__all__ = ["autocast", "fp8_autocast", "fp8_model_init",
           "is_fp8_available", "is_fp8_block_scaling_available",
           "is_mxfp8_available"]


def _group_size(group, what):
    """The amax reduction group as te_mlir.recipe takes it: None for none
    or a one-rank torch ProcessGroup. te's collectives run over te's own
    world, not over torch.distributed's ranks, so a larger group is
    refused rather than reduced over the wrong processes."""
    if group is None or isinstance(group, int):
        return group
    import torch.distributed as dist
    size = dist.get_world_size(group)
    if size == 1:
        return None
    raise NotImplementedError(
        f"{what}: amax reduction over a torch ProcessGroup of {size} ranks "
        "is not supported; te_mlir reduces amaxes with te's collectives "
        "over te's own world (pass None, or run one process per te rank)")


def fp8_autocast(enabled=True, calibrating=False, fp8_recipe=None,
                 fp8_group=None):
    """TE's fp8_autocast: te_mlir.recipe.fp8_autocast, whose fp8_group may
    be a torch ProcessGroup of one rank."""
    return _recipe.fp8_autocast(enabled, calibrating, fp8_recipe,
                                _group_size(fp8_group, "fp8_autocast"))


def autocast(enabled=True, calibrating=False, recipe=None,
             amax_reduction_group=None):
    """TE's newer name of fp8_autocast, with its argument names."""
    return fp8_autocast(enabled, calibrating, recipe, amax_reduction_group)


@contextlib.contextmanager
def fp8_model_init(enabled=True, recipe=None,
                   preserve_high_precision_init_val=False):
    """TE's fp8_model_init. enabled=False changes nothing. Modules made
    inside it with enabled=True would keep only FP8 copies of their
    weights, which te_mlir.torch's modules do not do yet: refused."""
    if enabled:
        raise NotImplementedError(
            "fp8_model_init(enabled=True): te_mlir.torch's modules keep "
            "their weights in high precision and quantize them on every "
            "FP8 step; FP8-only weights are not supported yet")
    yield


def _available(return_reason):
    # Every recipe runs on the CPU, where te emulates the FP8 GEMMs.
    return (True, "") if return_reason else True


def is_fp8_available(return_reason=False):
    """TE's query: True, with "" as the reason when asked; te_mlir runs
    FP8 on the CPU."""
    return _available(return_reason)


def is_mxfp8_available(return_reason=False):
    """TE's query: True (MXFP8 runs on the CPU)."""
    return _available(return_reason)


def is_fp8_block_scaling_available(return_reason=False):
    """TE's query: True (Float8BlockScaling runs on the CPU)."""
    return _available(return_reason)
