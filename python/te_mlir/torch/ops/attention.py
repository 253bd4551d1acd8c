"""te_mlir::attention and te_mlir::attention_backward: te.attention and its
backward as torch custom ops, joined by autograd, and `dot_product_attention`,
the differentiable function on them."""

import math
from typing import Optional, Sequence

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import empty, host

# The attention ops' tensor inputs after q, k, v, in this order, each
# optional: the keyword arguments of te_mlir.ops.attention of those names.
_OPTIONAL = ("bias", "alibi_slopes", "softmax_offset", "cu_seqlens_q",
             "cu_seqlens_kv", "seq_offsets_q", "seq_offsets_kv", "seqlens_q",
             "seqlens_kv", "mask_tensor")
# Then the attributes.
_ATTRIBUTES = ("layout", "mask", "window", "bottom_right_diagonal", "scale",
               "bias_type", "softmax", "dropout", "seed")


def _ops_kwargs(optional, attributes):
    """te_mlir.ops.attention's keyword arguments from the ops' optional
    tensors and attributes."""
    kw = {name: host(t) for name, t in zip(_OPTIONAL, optional)}
    kw.update(zip(_ATTRIBUTES, attributes))
    kw["window"] = tuple(kw["window"]) if kw["window"] else None
    kw["seed"] = kw["seed"] if kw["dropout"] else None
    return kw


@torch.library.custom_op("te_mlir::attention", mutates_args=())
def _attention_op(
        q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
        alibi_slopes: Optional[Tensor], softmax_offset: Optional[Tensor],
        cu_seqlens_q: Optional[Tensor], cu_seqlens_kv: Optional[Tensor],
        seq_offsets_q: Optional[Tensor], seq_offsets_kv: Optional[Tensor],
        seqlens_q: Optional[Tensor], seqlens_kv: Optional[Tensor],
        mask_tensor: Optional[Tensor], layout: str, mask: str,
        window: Optional[Sequence[int]],
        bottom_right_diagonal: Optional[bool], scale: Optional[float],
        bias_type: str, softmax: str, dropout: float,
        seed: int) -> tuple[Tensor, Tensor]:
    """te.attention: (o, lse)."""
    args = locals()
    return _ops.attention(
        host(q), host(k), host(v), return_lse=True,
        **_ops_kwargs([args[n] for n in _OPTIONAL],
                      [args[n] for n in _ATTRIBUTES]))


@_attention_op.register_fake
def _(q, k, v, *rest):
    layout = rest[len(_OPTIONAL)]
    o, lse = _ops.attention_result_shapes(layout, q.shape, v.shape)
    return q.new_empty(o), q.new_empty(lse, dtype=torch.float32)


@torch.library.custom_op("te_mlir::attention_backward", mutates_args=())
def _attention_backward_op(
        q: Tensor, k: Tensor, v: Tensor, o: Tensor, d_o: Tensor, lse: Tensor,
        bias: Optional[Tensor], alibi_slopes: Optional[Tensor],
        softmax_offset: Optional[Tensor], cu_seqlens_q: Optional[Tensor],
        cu_seqlens_kv: Optional[Tensor], seq_offsets_q: Optional[Tensor],
        seq_offsets_kv: Optional[Tensor], seqlens_q: Optional[Tensor],
        seqlens_kv: Optional[Tensor], mask_tensor: Optional[Tensor],
        layout: str, mask: str, window: Optional[Sequence[int]],
        bottom_right_diagonal: Optional[bool], scale: Optional[float],
        bias_type: str, softmax: str, dropout: float,
        seed: int) -> list[Tensor]:
    """te.attention_backward: [dq, dk, dv, dbias, d_softmax_offset], the
    last two empty when the configuration has no such parameter."""
    args = locals()
    grads = list(_ops.attention_backward(
        *(host(t) for t in (q, k, v, o, d_o, lse)),
        **_ops_kwargs([args[n] for n in _OPTIONAL],
                      [args[n] for n in _ATTRIBUTES])))
    dq, dk, dv = grads[:3]
    rest = grads[3:]
    dbias = rest.pop(0) if _has_bias_grad(bias, bias_type) else empty(q)
    d_offset = rest.pop(0) if softmax_offset is not None else empty(q)
    return [dq, dk, dv, dbias, d_offset]


def _has_bias_grad(bias, bias_type):
    return bias is not None and bias_type in ("pre_scale", "post_scale")


@_attention_backward_op.register_fake
def _(q, k, v, o, d_o, lse, bias, alibi_slopes, softmax_offset, *rest):
    bias_type = rest[len(_OPTIONAL) - 3 + _ATTRIBUTES.index("bias_type")]
    return [q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            bias.new_empty(bias.shape) if _has_bias_grad(bias, bias_type)
            else empty(q),
            softmax_offset.new_empty(softmax_offset.shape)
            if softmax_offset is not None else empty(q)]


_TENSOR_INPUTS = 3 + len(_OPTIONAL)


def _setup_attention(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:_TENSOR_INPUTS], *output)
    ctx.attrs = inputs[_TENSOR_INPUTS:]
    ctx.mark_non_differentiable(output[1])


def _attention_grad(ctx, d_o, _d_lse):
    saved = ctx.saved_tensors
    q, k, v = saved[:3]
    optional = saved[3:_TENSOR_INPUTS]
    o, lse = saved[_TENSOR_INPUTS:]
    dq, dk, dv, dbias, d_offset = _attention_backward_op(
        q, k, v, o, d_o.contiguous(), lse, *optional, *ctx.attrs)
    bias, _, offset = optional[:3]
    bias_type = ctx.attrs[_ATTRIBUTES.index("bias_type")]
    grads = (dq, dk, dv, dbias if _has_bias_grad(bias, bias_type) else None,
             None, d_offset if offset is not None else None)
    return grads + (None,) * (_TENSOR_INPUTS + len(_ATTRIBUTES) - len(grads))


_attention_op.register_autograd(_attention_grad,
                                setup_context=_setup_attention)


def dot_product_attention(q, k, v, *, layout="bshd", mask="causal", window=None,
              bottom_right_diagonal=None, scale=None, bias=None,
              bias_type=None, alibi_slopes=None, softmax="vanilla",
              softmax_offset=None, dropout=0.0, seed=None,
              cu_seqlens_q=None, cu_seqlens_kv=None, seq_offsets_q=None,
              seq_offsets_kv=None, seqlens_q=None, seqlens_kv=None,
              mask_tensor=None, return_lse=False):
    """te_mlir.ops.attention on torch tensors, differentiable (in q, k, v,
    a pre/post-scale bias and the learnable softmax offset) through
    te_mlir::attention_backward. A dropout without a seed draws one from
    torch's generator (torch.manual_seed makes it reproducible)."""
    bias_type = _ops.bias_type_of(bias_type, bias, alibi_slopes)
    if dropout and seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    optional = dict(bias=bias, alibi_slopes=alibi_slopes,
                    softmax_offset=softmax_offset, cu_seqlens_q=cu_seqlens_q,
                    cu_seqlens_kv=cu_seqlens_kv, seq_offsets_q=seq_offsets_q,
                    seq_offsets_kv=seq_offsets_kv, seqlens_q=seqlens_q,
                    seqlens_kv=seqlens_kv, mask_tensor=mask_tensor)
    o, lse = _attention_op(
        q, k, v, *(optional[n] for n in _OPTIONAL), layout,
        mask or "no_mask", list(window) if window is not None else None,
        bottom_right_diagonal, scale, bias_type, softmax.replace("-", "_"),
        float(dropout), int(seed or 0))
    return (o, lse) if return_lse else o


def default_alibi_slopes(num_heads):
    """TE's default ALiBi slopes (get_alibi): 2^(-8i/n) for the largest
    power of two n <= num_heads, then the odd powers of 2^(-4/n) for the
    heads beyond it; f32 [num_heads]."""
    n = 2 ** math.floor(math.log2(num_heads))
    slopes = torch.pow(2.0 ** (-8.0 / n), torch.arange(1, 1 + n))
    if n < num_heads:
        extra = torch.pow(2.0 ** (-4.0 / n),
                          torch.arange(1, 1 + 2 * (num_heads - n), 2))
        slopes = torch.cat([slopes, extra])
    return slopes.to(torch.float32)

