"""Transformer Engine's LayerNormLinear: te.norm, then te's GEMM; in FP8
under fp8_autocast with the norm's output cast in the norm itself."""

import torch

from ... import recipe as _recipe
from ..ops.gemm import linear as _te_linear
from ..ops.norm import norm as _te_norm
from . import _base, _fp8
from .linear import check_forward_flags

__all__ = ["LayerNormLinear"]


def norm_kind(name, normalization):
    """te.norm's kind for TE's `normalization` argument."""
    if normalization not in _base.NORMALIZATIONS:
        raise ValueError(f"{name}: normalization must be 'LayerNorm' or "
                         f"'RMSNorm', got {normalization!r}")
    return "layernorm" if normalization == "LayerNorm" else "rmsnorm"


def norm_parameters(module, hidden, kind, zero_centered_gamma, dtype,
                    device):
    """layer_norm_weight (ones, zeros when zero-centered) and
    layer_norm_bias (zeros; LayerNorm only), as TE names them."""
    init = torch.zeros if zero_centered_gamma else torch.ones
    module.layer_norm_weight = torch.nn.Parameter(
        init(hidden, dtype=dtype, device=device))
    module.layer_norm_bias = (torch.nn.Parameter(
        torch.zeros(hidden, dtype=dtype, device=device))
        if kind == "layernorm" else None)


def norm_front(module, inp, width, what):
    """The input checked to have `width` (named `what`) as its last
    dimension: (the activation dtype, x [rows, width] in it, the norm's
    weight and bias in it)."""
    if inp.shape[-1] != width:
        raise ValueError(f"{type(module).__name__}: the input's last "
                         f"dimension is {inp.shape[-1]}, expected "
                         f"{what}={width}")
    dtype = _base.activation_dtype(module, inp)
    bias = module.layer_norm_bias
    return (dtype, inp.to(dtype).reshape(-1, width),
            module.layer_norm_weight.to(dtype),
            bias.to(dtype) if bias is not None else None)


def results(module, y, inp, width, bias, ln_out):
    """forward's return as TE's: out [..., width], then the bias when
    return_bias, then the norm's output when return_layernorm_output."""
    out = [y.reshape(*inp.shape[:-1], width)]
    if module.return_bias:
        out.append(bias)
    if module.return_layernorm_output:
        out.append(ln_out.reshape(inp.shape))
    return out[0] if len(out) == 1 else tuple(out)


class LayerNormLinear(_fp8.FP8Module):
    """Transformer Engine's LayerNormLinear: y = norm(x) W^T + b, with
    TE's constructor (arguments in TE's order and with its defaults),
    parameters (layer_norm_weight, layer_norm_bias, weight, bias) and
    forward.

    normalization "LayerNorm" or "RMSNorm" (no layer_norm_bias), eps,
    zero_centered_gamma as te.norm takes them. forward returns out, then
    the bias when return_bias (not added to out), then the norm's output
    (in the activation dtype) when return_layernorm_output; a gradient
    reaching that output is added to the norm's input gradient, as in TE.

    Outside fp8_autocast the norm is te.norm and the GEMMs te's GEMM in
    the activation dtype. Under a recipe the norm quantizes its own output
    for the GEMM (TE's fused norm + cast: under DelayedScaling the cast is
    of the norm's f32 values; with return_layernorm_output, and under the
    other recipes, of the output as rounded, TE's unfused path), and the
    GEMMs run in FP8 as Linear's do, the backward ending in
    te.norm_backward. Arguments for tensor parallelism and userbuffers are
    accepted at TE's defaults and refused otherwise, as in Linear."""

    def __init__(self, in_features, out_features, eps=1e-5,
                 sequence_parallel=False, fuse_wgrad_accumulation=False,
                 tp_group=None, tp_size=1, get_rng_state_tracker=None,
                 init_method=None, bias=True, normalization="LayerNorm",
                 return_bias=False, params_dtype=None, parallel_mode=None,
                 return_layernorm_output=False,
                 return_layernorm_output_gathered=False,
                 parameters_split=None, zero_centered_gamma=False,
                 device="cpu", ub_overlap_ag=False, ub_overlap_rs=False,
                 ub_overlap_rs_dgrad=False, ub_bulk_wgrad=False,
                 ub_bulk_dgrad=False, ub_name=None, delay_wgrad_compute=False,
                 symmetric_ar_type=None, name=None):
        super().__init__()
        cls = type(self).__name__
        _base.refuse_unsupported(
            cls,
            sequence_parallel=sequence_parallel, tp_group=tp_group,
            tp_size=tp_size, ub_overlap_ag=ub_overlap_ag,
            ub_overlap_rs=ub_overlap_rs,
            ub_overlap_rs_dgrad=ub_overlap_rs_dgrad,
            ub_bulk_wgrad=ub_bulk_wgrad, ub_bulk_dgrad=ub_bulk_dgrad,
            ub_name=ub_name, fuse_wgrad_accumulation=fuse_wgrad_accumulation,
            parallel_mode=parallel_mode,
            delay_wgrad_compute=delay_wgrad_compute,
            symmetric_ar_type=symmetric_ar_type)
        self.kind = norm_kind(cls, normalization)
        dtype, device = _base.module_dtype_device(cls, params_dtype, device)
        self.in_features, self.out_features = in_features, out_features
        self.eps = float(eps)
        self.normalization = normalization
        self.zero_centered_gamma = bool(zero_centered_gamma)
        self.return_bias = return_bias
        self.return_layernorm_output = return_layernorm_output
        # Gathered across tensor-parallel ranks: one rank, the same output.
        self.return_layernorm_output_gathered = \
            return_layernorm_output_gathered
        self.name = name
        norm_parameters(self, in_features, self.kind,
                        self.zero_centered_gamma, dtype, device)
        _base.gemm_parameters(self, out_features, in_features, bias,
                              parameters_split, dtype, device, init_method,
                              get_rng_state_tracker, None)
        self._fp8 = _fp8.QuantizerState(["fc"])

    @property
    def quantizers(self):
        q = self._fp8.quantizers
        return q["fc"] if q is not None else None

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"normalization={self.normalization}, "
                f"bias={self.use_bias}")

    def forward(self, inp, is_first_microbatch=None, fp8_output=False,
                fp8_grad=False):
        check_forward_flags(type(self).__name__, fp8_output, fp8_grad)
        dtype, x, ln_w, ln_b = norm_front(self, inp, self.in_features,
                                          "in_features")
        bias = _base.gemm_bias(self, dtype)
        weight = _base.gemm_weight(self)
        gemm_bias = None if self.return_bias else bias
        recipe = _recipe.get_fp8_recipe()
        if _recipe.is_fp8_enabled():
            y, ln_out = _fp8.apply(
                _LayerNormLinearFunction, x, ln_w, ln_b, weight, gemm_bias,
                recipe, self._fp8.get(recipe)["fc"], self.kind, self.eps,
                self.zero_centered_gamma, self.return_layernorm_output)
        else:
            ln_out = _te_norm(x, ln_w, ln_b, self.kind, self.eps,
                              self.zero_centered_gamma)
            self._fp8.calibrate(recipe, "fc", ln_out, weight)
            y = _te_linear(ln_out, weight.to(dtype), gemm_bias)
        return results(self, y, inp, self.out_features, bias, ln_out)


class _LayerNormLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, ln_w, ln_b, weight, bias, recipe, quantizers, kind,
                eps, zero_centered_gamma, return_ln_out):
        high = recipe.backward_override == "high_precision"
        ctx.norm = norm = _fp8.FusedNorm(
            x, ln_w, ln_b, kind, eps, zero_centered_gamma,
            quantizers["input"], return_ln_out or high)
        w = weight.detach()
        wq = quantizers["weight"](w, usage="both")
        y = _fp8.fprop(norm.zq, wq, bias, x.dtype)
        ctx.recipe, ctx.quantizers = recipe, quantizers
        ctx.has_bias, ctx.w_dtype = bias is not None, weight.dtype
        ctx.gemm = (norm.z, w) if high else (norm.zq, wq)
        return y, norm.output(ctx, return_ln_out)

    @staticmethod
    def backward(ctx, dy, d_ln_out):
        g = dy.contiguous()
        dz, dw = _fp8.backward_gemms(ctx.recipe, ctx.quantizers["grad"], g,
                                     *ctx.gemm, ctx.w_dtype)
        dx, dgamma, dbeta = ctx.norm.backward(dz, d_ln_out)
        db = g.sum(0) if ctx.has_bias else None
        return (dx, dgamma, dbeta, dw, db) + (None,) * 6
