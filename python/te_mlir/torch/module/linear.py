"""Transformer Engine's Linear: te's GEMM, in FP8 under fp8_autocast."""

import torch

from ... import recipe as _recipe
from ..ops.gemm import linear as _te_linear
from . import _base, _fp8

__all__ = ["Linear"]


def check_forward_flags(name, fp8_output, fp8_grad):
    """TE's forward flags that hand FP8 tensors between modules: te_mlir's
    modules take and give high-precision tensors."""
    for flag, value in (("fp8_output", fp8_output), ("fp8_grad", fp8_grad)):
        if value:
            raise NotImplementedError(
                f"{name}.forward({flag}=True): te_mlir.torch modules give "
                "and take high-precision tensors; the FP8 casts happen "
                "inside each module")


class Linear(_fp8.FP8Module):
    """Transformer Engine's Linear: y = x W^T + b, with TE's constructor
    (arguments in TE's order and with its defaults) and forward.

    Outside fp8_autocast the three GEMMs (fprop, dgrad, wgrad with the
    bias gradient) are te's GEMM in the activation dtype. Under every
    recipe (DelayedScaling, Float8CurrentScaling, MXFP8BlockScaling,
    Float8BlockScaling) they are te.scaled_matmul on FP8 operands, as TE
    runs them: forward x (E4M3) by W (E4M3); dgrad dy (E5M2 under HYBRID)
    by W; wgrad dy^T by x, each on the copy of its operand whose scales
    run along K, with the block scales applied per block. The quantizers
    keep their state on the module (`quantizers`): under DelayedScaling
    each tensor's amax history and scale advance every step (x and W in
    forward, dy in backward), across recipe objects that compare equal.
    backward_override "high_precision" runs the backward GEMMs on the
    unquantized tensors, "dequantized" on the dequantized ones, as in TE.
    fp8_autocast(enabled=False, calibrating=True) runs in high precision
    and still records amaxes into DelayedScaling's histories.

    Initialization as TE's: weight normal(0, 0.023) or init_method(weight),
    bias zeros, in params_dtype (default torch's). parameters_split (names,
    or {name: rows}) keeps `<name>_weight` and `<name>_bias` per split of
    out_features, as TE does. The activation dtype is torch.autocast's,
    else the input's (the parameters must then have it). Arguments for
    tensor parallelism and userbuffers are accepted at TE's defaults
    (tp_group of one rank too) and refused otherwise; delay_wgrad_compute,
    fuse_wgrad_accumulation and save_original_input likewise. forward's
    is_first_microbatch changes nothing: the weight is quantized on every
    call, which gives the same values while it is unchanged."""

    def __init__(self, in_features, out_features, sequence_parallel=False,
                 fuse_wgrad_accumulation=False, tp_group=None, tp_size=1,
                 get_rng_state_tracker=None, rng_tracker_name=None,
                 init_method=None, bias=True, return_bias=False,
                 params_dtype=None, parallel_mode=None, parameters_split=None,
                 device="cpu", ub_overlap_ag=False, ub_overlap_rs=False,
                 ub_overlap_rs_dgrad=False, ub_bulk_dgrad=False,
                 ub_bulk_wgrad=False, ub_name=None, delay_wgrad_compute=False,
                 symmetric_ar_type=None, save_original_input=False,
                 name=None):
        super().__init__()
        cls = type(self).__name__
        _base.refuse_unsupported(
            cls,
            sequence_parallel=sequence_parallel, tp_group=tp_group,
            tp_size=tp_size, ub_overlap_ag=ub_overlap_ag,
            ub_overlap_rs=ub_overlap_rs,
            ub_overlap_rs_dgrad=ub_overlap_rs_dgrad,
            ub_bulk_dgrad=ub_bulk_dgrad, ub_bulk_wgrad=ub_bulk_wgrad,
            ub_name=ub_name, fuse_wgrad_accumulation=fuse_wgrad_accumulation,
            parallel_mode=parallel_mode,
            delay_wgrad_compute=delay_wgrad_compute,
            symmetric_ar_type=symmetric_ar_type,
            save_original_input=save_original_input)
        dtype, device = _base.module_dtype_device(cls, params_dtype, device)
        self.in_features, self.out_features = in_features, out_features
        self.return_bias = return_bias
        self.name = name
        _base.gemm_parameters(self, out_features, in_features, bias,
                              parameters_split, dtype, device, init_method,
                              get_rng_state_tracker, rng_tracker_name)
        self._fp8 = _fp8.QuantizerState(["fc"])

    @property
    def quantizers(self):
        """{"input", "weight", "grad"}: the GEMM's quantizers under the
        last recipe (None before the first FP8 or calibrating step)."""
        q = self._fp8.quantizers
        return q["fc"] if q is not None else None

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"bias={self.use_bias}")

    def forward(self, inp, is_first_microbatch=None, fp8_output=False,
                fp8_grad=False):
        check_forward_flags(type(self).__name__, fp8_output, fp8_grad)
        dtype = _base.activation_dtype(self, inp)
        x = inp.to(dtype)
        bias = _base.gemm_bias(self, dtype)
        weight = _base.gemm_weight(self)
        gemm_bias = None if self.return_bias else bias
        recipe = _recipe.get_fp8_recipe()
        if _recipe.is_fp8_enabled():
            y = _fp8.apply(_LinearFunction, x, weight, gemm_bias, recipe,
                           self._fp8.get(recipe)["fc"])
        else:
            self._fp8.calibrate(recipe, "fc", x, weight)
            y = _te_linear(x, weight.to(dtype), gemm_bias)
        return (y, bias) if self.return_bias else y


class _LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, weight, bias, recipe, quantizers):
        x = inp.detach().reshape(-1, inp.shape[-1])
        w = weight.detach()
        xq = quantizers["input"](x, usage="both")
        wq = quantizers["weight"](w, usage="both")
        y = _fp8.fprop(xq, wq, bias, x.dtype)
        ctx.recipe, ctx.quantizers = recipe, quantizers
        ctx.has_bias = bias is not None
        ctx.shapes = inp.shape, weight.dtype
        if recipe.backward_override == "high_precision":
            ctx.save_for_backward(x, w)
        else:
            ctx.fp8 = xq, wq
        return y.reshape(*inp.shape[:-1], y.shape[-1])

    @staticmethod
    def backward(ctx, dy):
        in_shape, w_dtype = ctx.shapes
        g = dy.reshape(-1, dy.shape[-1]).contiguous()
        saved = (ctx.saved_tensors if ctx.recipe.backward_override ==
                 "high_precision" else ctx.fp8)
        dx, dw = _fp8.backward_gemms(ctx.recipe, ctx.quantizers["grad"], g,
                                     *saved, w_dtype)
        # TE's bias gradient is of the high-precision dy (bgrad_quantize).
        db = g.sum(0) if ctx.has_bias else None
        return dx.reshape(in_shape), dw.to(w_dtype), db, None, None
