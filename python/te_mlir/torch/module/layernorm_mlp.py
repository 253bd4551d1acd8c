"""Transformer Engine's LayerNormMLP: te.norm, fc1, te.activation, fc2;
in FP8 under fp8_autocast with the norm's and the activation's outputs
cast in those ops."""

import torch

from ... import ops as _ops
from ... import recipe as _recipe
from ..ops.activation import activation as _te_activation
from ..ops.gemm import linear as _te_linear
from ..ops.norm import norm as _te_norm
from . import _base, _fp8
from .layernorm_linear import norm_front, norm_kind, norm_parameters, \
    results

__all__ = ["LayerNormMLP"]

#: TE's activation names, te.activation's kinds.
ACTIVATIONS = _ops.ACTIVATIONS


def _activation_keywords(name, activation, params):
    """te's keywords for TE's activation_params (clamped_swiglu's limit,
    alpha and glu_linear_offset; TE's default limit is 7.0)."""
    params = dict(params or {})
    if activation != "clamped_swiglu":
        if params:
            raise ValueError(f"{name}: activation_params {sorted(params)} "
                             f"are clamped_swiglu's, not {activation}'s")
        return {}
    unknown = set(params) - {"limit", "alpha", "glu_linear_offset"}
    if unknown:
        raise ValueError(f"{name}: unknown activation_params "
                         f"{sorted(unknown)} (clamped_swiglu takes limit, "
                         "alpha and glu_linear_offset)")
    return dict(limit=float(params.get("limit", 7.0)),
                alpha=float(params.get("alpha", 1.702)),
                linear_offset=float(params.get("glu_linear_offset", 1.0)))


class LayerNormMLP(_fp8.FP8Module):
    """Transformer Engine's LayerNormMLP: fc2(act(fc1(norm(x)))), with
    TE's constructor (arguments in TE's order and with its defaults),
    parameters (layer_norm_weight, layer_norm_bias, fc1_weight, fc1_bias,
    fc2_weight, fc2_bias) and forward.

    activation: gelu, qgelu, relu, srelu, silu, or the gated geglu,
    qgeglu, reglu, sreglu, swiglu, glu (a sigmoid gate) and
    clamped_swiglu (activation_params limit, alpha, glu_linear_offset),
    whose fc1 is [2 * ffn_hidden_size, hidden_size]: rows [0, ffn) the
    activated half, [ffn, 2 ffn) the linear half, as in TE. forward returns out, then fc2's bias when
    return_bias (not added), then the norm's output when
    return_layernorm_output. Initialization as TE's: fc1 by init_method,
    fc2 by output_layer_init_method, each normal(0, 0.023) by default,
    biases zeros.

    Outside fp8_autocast: te.norm, te's GEMM with fc1's bias in its
    epilogue, te.activation, te's GEMM. Under a recipe, the norm quantizes
    its output for fc1 and the activation its output for fc2 (TE's fused
    casts), the four forward and backward GEMMs run in FP8 as Linear's,
    and the backward's d-activation is te.activation_backward with the
    quantize of fc1's gradient (and its bias gradient for the plain kinds,
    TE's quantize_dbias_d*) fused; then te.norm_backward. checkpoint,
    seq_length and micro_batch_size change nothing here. Arguments for
    tensor parallelism and userbuffers are accepted at TE's defaults and
    refused otherwise."""

    def __init__(self, hidden_size, ffn_hidden_size, eps=1e-5,
                 sequence_parallel=False, return_bias=False,
                 get_rng_state_tracker=None, tp_group=None, tp_size=1,
                 init_method=None, bias=True, normalization="LayerNorm",
                 activation="gelu", activation_params=None,
                 output_layer_init_method=None,
                 fuse_wgrad_accumulation=False, params_dtype=None,
                 return_layernorm_output=False,
                 return_layernorm_output_gathered=False, seq_length=None,
                 micro_batch_size=None, set_parallel_mode=False,
                 zero_centered_gamma=False, device="cpu",
                 ub_overlap_ag=False, name=None, ub_overlap_rs=False,
                 ub_overlap_rs_dgrad=False, ub_bulk_dgrad=False,
                 ub_bulk_wgrad=False, delay_wgrad_compute=False,
                 symmetric_ar_type=None, checkpoint=False):
        super().__init__()
        cls = type(self).__name__
        _base.refuse_unsupported(
            cls,
            sequence_parallel=sequence_parallel, tp_group=tp_group,
            tp_size=tp_size, ub_overlap_ag=ub_overlap_ag,
            ub_overlap_rs=ub_overlap_rs,
            ub_overlap_rs_dgrad=ub_overlap_rs_dgrad,
            ub_bulk_dgrad=ub_bulk_dgrad, ub_bulk_wgrad=ub_bulk_wgrad,
            fuse_wgrad_accumulation=fuse_wgrad_accumulation,
            set_parallel_mode=set_parallel_mode,
            delay_wgrad_compute=delay_wgrad_compute,
            symmetric_ar_type=symmetric_ar_type)
        if activation not in ACTIVATIONS:
            raise ValueError(f"{cls}: unknown activation {activation!r}; "
                             f"one of {', '.join(ACTIVATIONS)}")
        self.kind = norm_kind(cls, normalization)
        dtype, device = _base.module_dtype_device(cls, params_dtype, device)
        self.hidden_size, self.ffn_hidden_size = hidden_size, ffn_hidden_size
        self.eps = float(eps)
        self.normalization = normalization
        self.activation = activation
        self.activation_params = activation_params
        self._act = _activation_keywords(cls, activation, activation_params)
        self.zero_centered_gamma = bool(zero_centered_gamma)
        self.return_bias = return_bias
        self.return_layernorm_output = return_layernorm_output
        self.return_layernorm_output_gathered = \
            return_layernorm_output_gathered
        self.checkpoint = checkpoint
        self.name = name
        norm_parameters(self, hidden_size, self.kind,
                        self.zero_centered_gamma, dtype, device)
        fc1_rows = ffn_hidden_size * (
            2 if activation in _ops.GATED_ACTIVATIONS else 1)
        tracker = get_rng_state_tracker
        self.fc1_weight = _base.new_parameter(
            (fc1_rows, hidden_size), dtype, device, init_method,
            tracker=tracker)
        self.fc1_bias = (_base.new_parameter((fc1_rows,), dtype, device,
                                             zeros=True) if bias else None)
        self.fc2_weight = _base.new_parameter(
            (hidden_size, ffn_hidden_size), dtype, device,
            output_layer_init_method, tracker=tracker)
        self.fc2_bias = (_base.new_parameter((hidden_size,), dtype, device,
                                             zeros=True) if bias else None)
        self._fp8 = _fp8.QuantizerState(["fc1", "fc2"])

    @property
    def quantizers(self):
        """{"fc1", "fc2"}: each GEMM's {"input", "weight", "grad"}
        quantizers under the last recipe (None before the first)."""
        return self._fp8.quantizers

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, "
                f"ffn_hidden_size={self.ffn_hidden_size}, "
                f"normalization={self.normalization}, "
                f"activation={self.activation}, "
                f"bias={self.fc1_bias is not None}")

    def forward(self, inp, is_first_microbatch=None):
        dtype, x, ln_w, ln_b = norm_front(self, inp, self.hidden_size,
                                          "hidden_size")
        cast = lambda p: p.to(dtype) if p is not None else None
        fc1_b, fc2_b = cast(self.fc1_bias), cast(self.fc2_bias)
        gemm2_bias = None if self.return_bias else fc2_b
        recipe = _recipe.get_fp8_recipe()
        if _recipe.is_fp8_enabled():
            y, ln_out = _fp8.apply(
                _LayerNormMLPFunction, x, ln_w, ln_b, self.fc1_weight, fc1_b,
                self.fc2_weight, gemm2_bias, recipe, self._fp8.get(recipe),
                self.kind, self.eps, self.zero_centered_gamma,
                self.activation, self._act, self.return_layernorm_output)
        else:
            ln_out = _te_norm(x, ln_w, ln_b, self.kind, self.eps,
                              self.zero_centered_gamma)
            self._fp8.calibrate(recipe, "fc1", ln_out, self.fc1_weight)
            h = _te_linear(ln_out, self.fc1_weight.to(dtype), fc1_b)
            a = _te_activation(h, self.activation, **self._act)
            self._fp8.calibrate(recipe, "fc2", a, self.fc2_weight)
            y = _te_linear(a, self.fc2_weight.to(dtype), gemm2_bias)
        return results(self, y, inp, self.hidden_size, fc2_b, ln_out)


class _LayerNormMLPFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, ln_w, ln_b, w1, b1, w2, b2, recipe, quantizers,
                kind, eps, zero_centered_gamma, act, act_params,
                return_ln_out):
        high = recipe.backward_override == "high_precision"
        q1, q2 = quantizers["fc1"], quantizers["fc2"]
        ctx.norm = norm = _fp8.FusedNorm(
            x, ln_w, ln_b, kind, eps, zero_centered_gamma, q1["input"],
            return_ln_out or high)
        w1, w2 = w1.detach(), w2.detach()
        w1q = q1["weight"](w1, usage="both")
        h = _fp8.fprop(norm.zq, w1q, b1, x.dtype)
        # The activation casts its own output for fc2 (TE's fused act +
        # cast); high_precision's backward needs that output too.
        outs = _ops.activation(h, act, **act_params, usage="both",
                               keep_output=high, **q2["input"].fused())
        a, aq = outs if high else (None, outs)
        q2["input"].record(aq)
        w2q = q2["weight"](w2, usage="both")
        y = _fp8.fprop(aq, w2q, b2, x.dtype)
        ctx.recipe, ctx.quantizers = recipe, quantizers
        ctx.act, ctx.act_params = act, act_params
        ctx.has_b1, ctx.has_b2 = b1 is not None, b2 is not None
        ctx.dtypes = w1.dtype, w2.dtype
        ctx.h = h
        ctx.fc1 = (norm.z, w1) if high else (norm.zq, w1q)
        ctx.fc2 = (a, w2) if high else (aq, w2q)
        return y, norm.output(ctx, return_ln_out)

    @staticmethod
    def backward(ctx, dy, d_ln_out):
        recipe, (q1, q2) = ctx.recipe, (ctx.quantizers["fc1"],
                                        ctx.quantizers["fc2"])
        w1_dtype, w2_dtype = ctx.dtypes
        g = dy.contiguous()
        da, dw2 = _fp8.backward_gemms(recipe, q2["grad"], g, *ctx.fc2,
                                      w2_dtype)
        db2 = g.sum(0) if ctx.has_b2 else None
        da = da.to(ctx.h.dtype).contiguous()
        gated = ctx.act in _ops.GATED_ACTIVATIONS
        db1 = None
        if recipe.backward_override in ("high_precision", "dequantized"):
            dh = _ops.activation_backward(da, ctx.h, ctx.act,
                                          **ctx.act_params)
            db1 = dh.sum(0) if ctx.has_b1 else None
            dz, dw1 = _fp8.backward_gemms(recipe, q1["grad"], dh, *ctx.fc1,
                                          w1_dtype)
        else:
            # TE's fused d-activation + dbias + quantize of fc1's gradient
            # (for the gated kinds dbias is the sum of the kept dh).
            fused_dbias = ctx.has_b1 and not gated
            outs = _ops.activation_backward(
                da, ctx.h, ctx.act, **ctx.act_params, dbias=fused_dbias,
                usage="both", keep_output=ctx.has_b1 and gated,
                **q1["grad"].fused())
            outs = list(outs) if isinstance(outs, tuple) else [outs]
            if ctx.has_b1 and gated:
                db1 = outs.pop(0).sum(0)
            dhq = outs.pop(0)
            if fused_dbias:
                db1 = outs.pop(0)
            q1["grad"].record(dhq)
            zq, w1q = ctx.fc1
            dz = _ops.scaled_matmul(dhq, w1q, out_dtype=_fp8.dtype_name(da))
            dw1 = _ops.scaled_matmul(dhq, zq, transpose_a=True,
                                     out_dtype=_fp8.dtype_name(w1_dtype))
        dx, dgamma, dbeta = ctx.norm.backward(dz, d_ln_out)
        return (dx, dgamma, dbeta, dw1, db1, dw2, db2) + (None,) * 8
