"""What TE's GEMM modules share here: their constructor arguments that
te_mlir cannot honour, TE's initialization, and the activation dtype."""

import torch

from .._common import compute_dtype, cpu_device

#: TE's default init_method: normal(0, 0.023) (get_default_init_method).
DEFAULT_INIT_STD = 0.023

NORMALIZATIONS = ("LayerNorm", "RMSNorm")


#: The values te_mlir honours of TE's constructor arguments for tensor
#: parallelism, userbuffers and the other features of a multi-GPU run:
#: TE's defaults.
HONOURED = dict(
    sequence_parallel=False, tp_group=None, tp_size=1, parallel_mode=None,
    set_parallel_mode=False,
    fuse_wgrad_accumulation=False, delay_wgrad_compute=False,
    symmetric_ar_type=None, save_original_input=False, ub_overlap_ag=False,
    ub_overlap_rs=False, ub_overlap_rs_dgrad=False, ub_bulk_dgrad=False,
    ub_bulk_wgrad=False, ub_name=None)


def refuse_unsupported(name, **settings):
    """Raises NotImplementedError naming the first of `settings` (TE
    constructor arguments of HONOURED) set to another value than te_mlir
    honours. A tp_group of one rank is honoured too."""
    group = settings.get("tp_group")
    if group is not None:
        import torch.distributed as dist
        if dist.get_world_size(group) == 1:
            settings["tp_group"] = None
    for argument, value in settings.items():
        honoured = HONOURED[argument]
        if argument == "sequence_parallel":
            value = bool(value)  # TE's LayerNorm default is None
        if value != honoured:
            raise NotImplementedError(
                f"{name}({argument}={value!r}): te_mlir.torch runs one "
                f"process's GEMMs without tensor parallelism or userbuffers; "
                f"{argument} must be {honoured!r} (TE's default)")


def new_parameter(shape, dtype, device, init_method=None, zeros=False,
                  tracker=None, tracker_name=None):
    """A parameter of `shape` initialized as TE initializes it: zeros
    (biases), else init_method(tensor) or normal(0, 0.023), inside the
    rng tracker's fork when one is given."""
    param = torch.nn.Parameter(torch.empty(shape, dtype=dtype,
                                           device=device))
    if zeros:
        with torch.no_grad():
            param.zero_()
        return param
    init = init_method or (lambda w: torch.nn.init.normal_(
        w, mean=0.0, std=DEFAULT_INIT_STD))
    with torch.no_grad():
        if tracker is not None:
            fork = tracker().fork
            with fork(tracker_name) if tracker_name else fork():
                init(param)
        else:
            init(param)
    return param


def gemm_parameters(module, out_features, in_features, bias,
                    parameters_split, dtype, device, init_method=None,
                    tracker=None, tracker_name=None):
    """Registers a GEMM's parameters as TE names them: `weight` [out, in]
    and `bias` [out] (None without bias), or with parameters_split (names
    splitting out_features equally, or {name: rows}) `<name>_weight` and
    `<name>_bias` per split, whose rows the GEMM takes concatenated in
    that order (TE's noop_cat)."""
    name = type(module).__name__
    if parameters_split is None:
        splits = {"": out_features}
    elif isinstance(parameters_split, dict):
        splits = {k: int(v) for k, v in parameters_split.items()}
    else:
        names = list(parameters_split)
        if not names or out_features % len(names):
            raise ValueError(f"{name}: parameters_split {names} must split "
                             f"out_features={out_features} equally")
        splits = dict.fromkeys(names, out_features // len(names))
    if sum(splits.values()) != out_features or min(splits.values()) <= 0:
        raise ValueError(f"{name}: parameters_split {splits} must give "
                         f"positive row counts summing to out_features="
                         f"{out_features}")
    prefixes = [split.rstrip("_") + "_" if split else "" for split in splits]
    module._weight_names = [p + "weight" for p in prefixes]
    module._bias_names = [p + "bias" for p in prefixes]
    # TE's order: every weight, then every bias.
    for name, rows in zip(module._weight_names, splits.values()):
        setattr(module, name, new_parameter(
            (rows, in_features), dtype, device, init_method, tracker=tracker,
            tracker_name=tracker_name))
    for name, rows in zip(module._bias_names, splits.values()):
        setattr(module, name, new_parameter((rows,), dtype, device,
                                            zeros=True) if bias else None)
    module.use_bias = bool(bias)


def gemm_weight(module):
    """The GEMM's weight [out, in]: the splits concatenated."""
    weights = [getattr(module, n) for n in module._weight_names]
    return weights[0] if len(weights) == 1 else torch.cat(weights)


def gemm_bias(module, dtype):
    """The GEMM's bias [out] in `dtype`, or None."""
    if not module.use_bias:
        return None
    biases = [getattr(module, n) for n in module._bias_names]
    bias = biases[0] if len(biases) == 1 else torch.cat(biases)
    return bias.to(dtype)


def module_dtype_device(name, params_dtype, device):
    """params_dtype (default torch's default dtype) and the CPU device."""
    return (params_dtype or torch.get_default_dtype(),
            cpu_device(name, device))


def activation_dtype(module, inp):
    """The dtype a GEMM module computes in, as TE's prepare_forward picks
    it: torch.autocast's dtype, else the input's, whose parameters must
    then have it too (a TypeError here; TE asserts it)."""
    dtype = compute_dtype(None)
    if dtype is not None:
        return dtype
    for pname, param in module.named_parameters(recurse=False):
        if param.dtype != inp.dtype:
            raise TypeError(
                f"{type(module).__name__}: the input is {inp.dtype} and "
                f"parameter {pname} is {param.dtype}; TE computes in the "
                "input's dtype and needs the parameters to have it (or run "
                "under torch.autocast)")
    return inp.dtype
