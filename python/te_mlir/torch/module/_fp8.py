"""The FP8 GEMMs of TE's modules under fp8_autocast, shared by Linear,
LayerNormLinear and LayerNormMLP: the quantizers each GEMM keeps, its
forward GEMM and its two backward GEMMs as TE runs them."""

import dataclasses
from enum import Enum

import numpy as np
import torch

from ... import ops as _ops
from ... import recipe as _recipe
from ..ops.norm import norm_backward as _te_norm_backward


class QuantizerState:
    """The quantizers of a module's GEMMs ({gemm: {"input", "weight",
    "grad"}: Quantizer}), kept while the module runs under the same recipe
    or an equal one (TE keeps its FP8 state across recipe objects that
    compare equal)."""

    def __init__(self, gemms):
        self.gemms = tuple(gemms)
        self.recipe = None
        self.quantizers = None

    def get(self, recipe):
        if self.recipe is None or self.recipe != recipe or \
                type(self.recipe) is not type(recipe):
            self.recipe = recipe
            self.quantizers = {gemm: {role: recipe.quantizer(role)
                                      for role in _recipe.ROLES}
                               for gemm in self.gemms}
        return self.quantizers

    def extra_state(self):
        """TE's `_extra_state` of the module: under DelayedScaling (the one
        recipe whose quantizers carry state from step to step) the recipe's
        fields and each quantizer's amax history and scale, as plain values
        and tensors (a checkpoint loads with torch.load(weights_only=True));
        {} before the first FP8 step and under the other recipes."""
        r = self.recipe
        if r is None or not r.delayed():
            return {}
        fields = {f.name: getattr(r, f.name)
                  for f in dataclasses.fields(r)}
        fields = {k: v.name if isinstance(v, Enum) else v
                  for k, v in fields.items()}
        state = {f"{gemm}.{role}": {
            "amax_history": torch.from_numpy(np.array(q.amax_history,
                                                      np.float32)),
            "scale": torch.tensor(float(q.scale))}
            for gemm, roles in self.quantizers.items()
            for role, q in roles.items()}
        return {"recipe": type(r).__name__, "fields": fields,
                "quantizers": state}

    def load_extra_state(self, state):
        """Restores what extra_state() gave, so that training resumes
        bit-exactly under an equal recipe."""
        if isinstance(state, torch.Tensor):
            if state.numel():
                raise ValueError(
                    "_extra_state holds Transformer Engine's serialized FP8 "
                    "metadata (a byte tensor), which te_mlir cannot read; "
                    "load the checkpoint with strict=False, or drop its "
                    "_extra_state entries, and the FP8 state starts afresh")
            state = None
        if not state:
            self.recipe = self.quantizers = None
            return
        try:
            if state.get("recipe") != "DelayedScaling":
                raise ValueError(f"unknown recipe {state.get('recipe')!r}")
            fields = dict(state["fields"])
            fields["fp8_format"] = _recipe.Format[fields["fp8_format"]]
            recipe = _recipe.DelayedScaling(**fields)
            saved = {key: (np.asarray(v["amax_history"], np.float32),
                           np.array(float(v["scale"]), np.float32))
                     for key, v in state["quantizers"].items()}
            self.recipe = None
            for gemm, roles in self.get(recipe).items():
                for role, q in roles.items():
                    q.amax_history, q.scale = saved[f"{gemm}.{role}"]
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            self.recipe = self.quantizers = None
            raise ValueError(
                f"_extra_state is not te_mlir's FP8 state of this module "
                f"({type(e).__name__}: {e}); te_mlir saves DelayedScaling's "
                "histories and scales per GEMM") from None

    def calibrate(self, recipe, gemm, inp, weight):
        """fp8_autocast(enabled=False, calibrating=True) under
        DelayedScaling: records the amaxes of one GEMM's input and weight
        into their histories while the GEMM runs in high precision, as
        TE's calibration does."""
        if not (_recipe.is_fp8_calibrating() and recipe.delayed()):
            return
        q = self.get(recipe)[gemm]
        q["input"].update(_ops.amax(inp.detach()))
        q["weight"].update(_ops.amax(weight.detach()))


class FP8Module(torch.nn.Module):
    """A module whose GEMMs keep FP8 state in `self._fp8` (a
    QuantizerState): it travels in state_dict as `_extra_state`."""

    def get_extra_state(self):
        return self._fp8.extra_state()

    def set_extra_state(self, state):
        self._fp8.load_extra_state(state)


@torch.compiler.disable
def apply(function, *args):
    """function.apply(*args) for an FP8 autograd.Function: its quantizers
    keep Python state and it calls te_mlir.ops on real tensors, so under
    torch.compile it runs eagerly (a graph break) while the rest of the
    model compiles."""
    return function.apply(*args)


def dtype_name(t):
    return _ops.dtype_name(t if isinstance(t, torch.dtype) else t.dtype)


def fprop(xq, wq, bias, out_dtype):
    """y = x W^T (+ bias) on x [N, in] and W [out, in] quantized (TE's TN
    fprop GEMM, each on its copy whose scales run along K)."""
    return _ops.scaled_matmul(
        xq, wq, transpose_b=True, out_dtype=dtype_name(out_dtype),
        bias=bias.detach() if bias is not None else None)


def matrix(q, columnwise, dtype):
    """q's row-wise or column-wise copy, dequantized, in the input's
    orientation (per_tensor and the block modes store the column-wise copy
    transposed; MXFP8 keeps the input's layout)."""
    m = q.dequantize(dtype, columnwise=columnwise)
    return m.T if columnwise and q.mode != "mxfp8_1x32" else m


def backward_gemms(recipe, grad_quantizer, g, x, w, w_dtype):
    """dx and dW of y = x W^T from g = dy [N, out] (high precision), as
    TE's backward runs them: `x` and `w` are what the forward kept, the
    Float8Tensors, or with backward_override "high_precision" the
    high-precision tensors. Under "dequantized" the GEMMs take the
    dequantized operands; otherwise dy is quantized (E5M2 under HYBRID)
    and dgrad dy by W and wgrad dy^T by x run in FP8, each on the copy of
    its operand whose scales run along K."""
    override = recipe.backward_override
    if override in ("high_precision", "dequantized"):
        if override == "dequantized":
            x, w = matrix(x, False, g.dtype), matrix(w, False, g.dtype)
        x, w = x.to(g.dtype), w.to(g.dtype)
        return (_ops.matmul(g, w),
                _ops.matmul(g, x, transpose_a=True).to(w_dtype))
    gq = grad_quantizer(g, usage="both")
    dx = _ops.scaled_matmul(gq, w, out_dtype=dtype_name(g))
    dw = _ops.scaled_matmul(gq, x, transpose_a=True,
                            out_dtype=dtype_name(w_dtype))
    return dx, dw


class FusedNorm:
    """The norm at the head of LayerNormLinear's and LayerNormMLP's FP8
    functions: te.norm of x with its output quantized by `quantizer` in
    the same op (TE's fused norm + cast; both copies, for fprop and
    wgrad), and its backward. keep_output keeps z too (self.z), and then
    the cast is of z as rounded (TE's unfused path)."""

    def __init__(self, x, weight, bias, kind, eps, zero_centered_gamma,
                 quantizer, keep_output):
        self.kind, self.zero_centered_gamma = kind, zero_centered_gamma
        self.x, self.weight = x.detach(), weight.detach()
        self.has_bias = bias is not None
        kw = dict(eps=eps, zero_centered_gamma=zero_centered_gamma,
                  usage="both", keep_output=keep_output, **quantizer.fused())
        if kind == "layernorm":
            out = list(_ops.layer_norm(self.x, self.weight, bias.detach()
                                       if bias is not None else None, **kw))
        else:
            out = list(_ops.rms_norm(self.x, self.weight, **kw))
            out.insert(len(out) - 1, None)
        self.z = out.pop(0) if keep_output else None
        self.zq, self.mu, self.rsigma = out
        quantizer.record(self.zq)

    def output(self, ctx, return_ln_out):
        """The function's second output: z, or an empty placeholder."""
        if return_ln_out:
            return self.z
        placeholder = self.x.new_empty((0,))
        ctx.mark_non_differentiable(placeholder)
        return placeholder

    def backward(self, dz, d_ln_out):
        """(dx, dweight, dbias or None) from the gradient of z, plus that
        of the returned norm output where it has one."""
        if d_ln_out is not None and d_ln_out.numel():
            dz = dz + d_ln_out
        dx, dw, db = _te_norm_backward(
            self.kind, dz.to(self.weight.dtype).contiguous(), self.x,
            self.mu, self.rsigma, self.weight, self.zero_centered_gamma)
        return dx, dw, db if self.has_bias else None
