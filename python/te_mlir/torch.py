"""te_mlir for PyTorch: custom ops, and DotProductAttention with TE's
argument names.

    import te_mlir.torch as tet
    attn = tet.DotProductAttention(num_attention_heads=8, kv_channels=64,
                                   qkv_format="bshd", attn_mask_type="causal")
    out = attn(q, k, v)          # [b, s, h * d], differentiable

The ops are registered with torch.library under the namespace te_mlir:
te_mlir::attention and te_mlir::attention_backward (forward and backward,
joined by autograd), te_mlir::quantize, te_mlir::dequantize and
te_mlir::scaled_matmul. Each has a fake-tensor kernel, so torch.compile
traces them, and each runs te_mlir.ops (one compile per configuration).
Importing this module imports torch; `import te_mlir` alone does not.

Tensors are CPU tensors (the runtime's cpu device), read in place; the
outputs are the buffers the kernels wrote.
"""

from typing import Optional, Sequence

import torch
from torch import Tensor

from . import ops as _ops
from . import recipe as _recipe
from .errors import DeviceError

__all__ = ["DotProductAttention", "attention", "dequantize", "quantize",
           "scaled_matmul"]

_TORCH_DTYPES = {name: getattr(torch, attr)
                 for name, attr in _ops._TORCH_DTYPES.items()}


def _host(t):
    """t as the ops take it: detached (DLPack refuses tensors that require
    grad), on the CPU."""
    if t is None:
        return None
    if t.device.type != "cpu":
        raise DeviceError(
            f"te_mlir.torch takes CPU tensors; got one on {t.device}. The "
            "runtime's cuda device cannot take torch's device memory yet: "
            "move the tensor with .cpu(), or compile a program for "
            "te_mlir.Device('cuda') with te_mlir.compile")
    return t.detach()


def _empty(like):
    """The placeholder of an absent optional output."""
    return like.new_empty((0,), dtype=torch.float32)


# --- Attention -----------------------------------------------------------


def _attention_kwargs(layout, mask, window, bottom_right_diagonal, scale,
                      bias_type, softmax, dropout, seed):
    return dict(layout=layout, mask=mask,
                window=tuple(window) if window else None,
                bottom_right_diagonal=bottom_right_diagonal, scale=scale,
                bias_type=bias_type, softmax=softmax, dropout=dropout,
                seed=seed if dropout else None)


@torch.library.custom_op("te_mlir::attention", mutates_args=())
def _attention_op(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                  alibi_slopes: Optional[Tensor],
                  softmax_offset: Optional[Tensor],
                  cu_seqlens_q: Optional[Tensor],
                  cu_seqlens_kv: Optional[Tensor],
                  seqlens_q: Optional[Tensor], seqlens_kv: Optional[Tensor],
                  mask_tensor: Optional[Tensor], layout: str, mask: str,
                  window: Optional[Sequence[int]],
                  bottom_right_diagonal: Optional[bool],
                  scale: Optional[float], bias_type: str, softmax: str,
                  dropout: float, seed: int) -> tuple[Tensor, Tensor]:
    """te.attention: (o, lse)."""
    return _ops.attention(
        _host(q), _host(k), _host(v), bias=_host(bias),
        alibi_slopes=_host(alibi_slopes),
        softmax_offset=_host(softmax_offset),
        cu_seqlens_q=_host(cu_seqlens_q), cu_seqlens_kv=_host(cu_seqlens_kv),
        seqlens_q=_host(seqlens_q), seqlens_kv=_host(seqlens_kv),
        mask_tensor=_host(mask_tensor), return_lse=True,
        **_attention_kwargs(layout, mask, window, bottom_right_diagonal,
                            scale, bias_type, softmax, dropout, seed))


@_attention_op.register_fake
def _(q, k, v, bias, alibi_slopes, softmax_offset, cu_seqlens_q,
      cu_seqlens_kv, seqlens_q, seqlens_kv, mask_tensor, layout, mask, window,
      bottom_right_diagonal, scale, bias_type, softmax, dropout, seed):
    o, lse = _ops.attention_result_shapes(layout, q.shape, v.shape)
    return q.new_empty(o), q.new_empty(lse, dtype=torch.float32)


@torch.library.custom_op("te_mlir::attention_backward", mutates_args=())
def _attention_backward_op(
        q: Tensor, k: Tensor, v: Tensor, o: Tensor, d_o: Tensor, lse: Tensor,
        bias: Optional[Tensor], alibi_slopes: Optional[Tensor],
        softmax_offset: Optional[Tensor], cu_seqlens_q: Optional[Tensor],
        cu_seqlens_kv: Optional[Tensor], seqlens_q: Optional[Tensor],
        seqlens_kv: Optional[Tensor], mask_tensor: Optional[Tensor],
        layout: str, mask: str, window: Optional[Sequence[int]],
        bottom_right_diagonal: Optional[bool], scale: Optional[float],
        bias_type: str, softmax: str, dropout: float,
        seed: int) -> list[Tensor]:
    """te.attention_backward: [dq, dk, dv, dbias, d_softmax_offset], the
    last two empty when the configuration has no such parameter."""
    grads = list(_ops.attention_backward(
        _host(q), _host(k), _host(v), _host(o), _host(d_o), _host(lse),
        bias=_host(bias), alibi_slopes=_host(alibi_slopes),
        softmax_offset=_host(softmax_offset),
        cu_seqlens_q=_host(cu_seqlens_q), cu_seqlens_kv=_host(cu_seqlens_kv),
        seqlens_q=_host(seqlens_q), seqlens_kv=_host(seqlens_kv),
        mask_tensor=_host(mask_tensor),
        **_attention_kwargs(layout, mask, window, bottom_right_diagonal,
                            scale, bias_type, softmax, dropout, seed)))
    dq, dk, dv = grads[:3]
    rest = grads[3:]
    dbias = rest.pop(0) if _has_bias_grad(bias, bias_type) else _empty(q)
    d_offset = rest.pop(0) if softmax_offset is not None else _empty(q)
    return [dq, dk, dv, dbias, d_offset]


def _has_bias_grad(bias, bias_type):
    return bias is not None and bias_type in ("pre_scale", "post_scale")


@_attention_backward_op.register_fake
def _(q, k, v, o, d_o, lse, bias, alibi_slopes, softmax_offset, cu_seqlens_q,
      cu_seqlens_kv, seqlens_q, seqlens_kv, mask_tensor, layout, mask, window,
      bottom_right_diagonal, scale, bias_type, softmax, dropout, seed):
    return [q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            bias.new_empty(bias.shape) if _has_bias_grad(bias, bias_type)
            else _empty(q),
            softmax_offset.new_empty(softmax_offset.shape)
            if softmax_offset is not None else _empty(q)]


_TENSOR_INPUTS = 11  # q ... mask_tensor: the attention op's tensor inputs


def _setup_attention(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:_TENSOR_INPUTS], *output)
    ctx.attrs = inputs[_TENSOR_INPUTS:]
    ctx.mark_non_differentiable(output[1])


def _attention_grad(ctx, d_o, _d_lse):
    (q, k, v, bias, alibi, offset, cu_q, cu_kv, len_q, len_kv, mask_t, o,
     lse) = ctx.saved_tensors
    dq, dk, dv, dbias, d_offset = _attention_backward_op(
        q, k, v, o, d_o.contiguous(), lse, bias, alibi, offset, cu_q, cu_kv,
        len_q, len_kv, mask_t, *ctx.attrs)
    layout, mask, window, brd, scale, bias_type = ctx.attrs[:6]
    return (dq, dk, dv, dbias if _has_bias_grad(bias, bias_type) else None,
            None, d_offset if offset is not None else None) + (None,) * (
                _TENSOR_INPUTS - 6 + len(ctx.attrs))


_attention_op.register_autograd(_attention_grad,
                                setup_context=_setup_attention)


def attention(q, k, v, *, layout="bshd", mask="causal", window=None,
              bottom_right_diagonal=None, scale=None, bias=None,
              bias_type=None, alibi_slopes=None, softmax="vanilla",
              softmax_offset=None, dropout=0.0, seed=None,
              cu_seqlens_q=None, cu_seqlens_kv=None, seqlens_q=None,
              seqlens_kv=None, mask_tensor=None, return_lse=False):
    """te_mlir.ops.attention on torch tensors, differentiable (in q, k, v,
    a pre/post-scale bias and the learnable softmax offset) through
    te_mlir::attention_backward. A dropout without a seed draws one from
    torch's generator (torch.manual_seed makes it reproducible)."""
    if bias_type is None:
        bias_type = ("alibi" if alibi_slopes is not None else
                     "post_scale" if bias is not None else "no_bias")
    if dropout and seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    o, lse = _attention_op(
        q, k, v, bias, alibi_slopes, softmax_offset, cu_seqlens_q,
        cu_seqlens_kv, seqlens_q, seqlens_kv, mask_tensor, layout,
        mask or "no_mask", list(window) if window is not None else None,
        bottom_right_diagonal, scale, bias_type, softmax.replace("-", "_"),
        float(dropout), int(seed or 0))
    return (o, lse) if return_lse else o


class DotProductAttention(torch.nn.Module):
    """Transformer Engine's DotProductAttention, on te_mlir's attention.

    The constructor and forward take TE's argument names: qkv_format
    (sbhd, bshd or thd), attn_mask_type (no_mask, padding, causal,
    causal_bottom_right, padding_causal, padding_causal_bottom_right,
    arbitrary), window_size, bottom_right_diagonal, num_gqa_groups,
    attention_dropout, softmax_scale and softmax_type (vanilla,
    off-by-one, learnable, whose offset is this module's parameter
    softmax_offset, zeros at first as in TE). forward returns the output
    with the heads folded into the hidden size, as TE does: [s, b, h*d],
    [b, s, h*d] or [t, h*d].

    attention_mask: for the padding masks of sbhd/bshd, a pair of bool
    tensors ([b, 1, 1, s_q], [b, 1, 1, s_kv]) or one for both (True
    excludes a position), from which the per-sequence lengths are taken;
    for arbitrary, a bool tensor broadcastable to [b, h, s_q, s_kv]. thd
    takes cu_seqlens_q / cu_seqlens_kv. Tensor-parallel, context-parallel
    and FP8 attention are TE features this module does not have."""

    def __init__(self, num_attention_heads, kv_channels, num_gqa_groups=None,
                 attention_dropout=0.0, qkv_format="sbhd",
                 attn_mask_type="causal", window_size=None,
                 bottom_right_diagonal=None, softmax_scale=None,
                 softmax_type="vanilla", layer_number=None,
                 attention_type="self"):
        super().__init__()
        _ops._choice("qkv_format", qkv_format, ("sbhd", "bshd", "thd"))
        self.num_attention_heads = num_attention_heads
        self.kv_channels = kv_channels
        self.num_gqa_groups = num_gqa_groups or num_attention_heads
        if num_attention_heads % self.num_gqa_groups:
            raise ValueError("num_attention_heads must be a multiple of "
                             "num_gqa_groups")
        self.attention_dropout = float(attention_dropout)
        self.qkv_format = qkv_format
        self.attn_mask_type = attn_mask_type
        self.window_size = window_size
        self.bottom_right_diagonal = bottom_right_diagonal
        self.softmax_scale = softmax_scale
        self.softmax_type = softmax_type.replace("-", "_")
        self.layer_number = layer_number
        self.attention_type = attention_type
        if self.softmax_type == "learnable":
            self.softmax_offset = torch.nn.Parameter(
                torch.zeros(1, num_attention_heads, 1, 1))
        else:
            self.softmax_offset = None

    def extra_repr(self):
        return (f"heads={self.num_attention_heads}, "
                f"gqa_groups={self.num_gqa_groups}, "
                f"qkv_format={self.qkv_format}, "
                f"attn_mask_type={self.attn_mask_type}, "
                f"softmax_type={self.softmax_type}")

    def forward(self, query_layer, key_layer, value_layer,
                attention_mask=None, qkv_format=None, cu_seqlens_q=None,
                cu_seqlens_kv=None, attn_mask_type=None, window_size=None,
                bottom_right_diagonal=None,
                core_attention_bias_type="no_bias",
                core_attention_bias=None, alibi_slopes=None):
        fmt = qkv_format or self.qkv_format
        mask = attn_mask_type or self.attn_mask_type
        window = window_size if window_size is not None else self.window_size
        if window is not None and tuple(window) == (-1, -1):
            window = None
        brd = (bottom_right_diagonal if bottom_right_diagonal is not None
               else self.bottom_right_diagonal)
        seqlens_q = seqlens_kv = mask_tensor = None
        if "padding" in mask and fmt != "thd":
            if attention_mask is None:
                raise ValueError(f"attn_mask_type {mask} with qkv_format "
                                 f"{fmt} needs attention_mask")
            q_mask, kv_mask = (attention_mask if isinstance(
                attention_mask, (tuple, list)) else
                (attention_mask, attention_mask))
            seqlens_q = (~q_mask).reshape(q_mask.shape[0], -1).sum(
                -1).to(torch.int32)
            seqlens_kv = (~kv_mask).reshape(kv_mask.shape[0], -1).sum(
                -1).to(torch.int32)
        elif mask == "arbitrary":
            mask_tensor = attention_mask
        bias = core_attention_bias
        bias_type = core_attention_bias_type
        if alibi_slopes is not None:
            bias_type = "alibi"
        dropout = self.attention_dropout if self.training else 0.0
        out = attention(
            query_layer, key_layer, value_layer, layout=fmt, mask=mask,
            window=window, bottom_right_diagonal=brd,
            scale=self.softmax_scale, bias=bias, bias_type=bias_type,
            alibi_slopes=alibi_slopes, softmax=self.softmax_type,
            softmax_offset=self.softmax_offset, dropout=dropout,
            cu_seqlens_q=cu_seqlens_q, cu_seqlens_kv=cu_seqlens_kv,
            seqlens_q=seqlens_q, seqlens_kv=seqlens_kv,
            mask_tensor=mask_tensor)
        return out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1])


# --- FP8 -----------------------------------------------------------------
#
# The ops carry FP8 data and E8M0 scales as their raw bits, uint8 tensors
# (as TE's Float8Tensor keeps its data), with the FP8 type named by a
# string: torch computes nothing on float8 tensors on the CPU, not even
# the comparisons opcheck makes. The Python functions view them as
# torch's float8 dtypes.

_RAW = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu)


def _bits(t):
    """An FP8 or E8M0 tensor's raw bits (a view); other tensors as they
    are."""
    return t.view(torch.uint8) if t is not None and t.dtype in _RAW else t


def _typed(t, te_dtype):
    """Raw bits viewed as `te_dtype` (a te FP8 or E8M0 type name)."""
    return t.view(_TORCH_DTYPES[te_dtype]) if t.dtype == torch.uint8 else t


def _fake(like, te_dtype, shape):
    dtype = _TORCH_DTYPES[te_dtype]
    return like.new_empty(shape, dtype=torch.uint8 if dtype in _RAW
                          else dtype)


@torch.library.custom_op("te_mlir::quantize", mutates_args=())
def _quantize_op(x: Tensor, scale: Optional[Tensor], fp8: str, mode: str,
                 usage: str, pow2_scales: Optional[bool],
                 epsilon: float) -> list[Tensor]:
    """te.quantize: [data, scale_inv, columnwise_data,
    columnwise_scale_inv, amax] (FP8 and E8M0 as uint8 bits), empty where
    the mode and usage have no such result (per_tensor's column-wise copy
    shares scale_inv, so its own entry is empty too)."""
    q = _ops.quantize(_host(x), fp8, mode, scale=_host(scale), usage=usage,
                      pow2_scales=pow2_scales, epsilon=epsilon or None)
    col_scale = None if mode == "per_tensor" else q.columnwise_scale_inv
    return [_bits(t) if t is not None else _empty(x) for t in
            (q.data, q.scale_inv, q.columnwise_data, col_scale, q.amax)]


@_quantize_op.register_fake
def _(x, scale, fp8, mode, usage, pow2_scales, epsilon):
    results = _ops.quantize_results(x.shape, _ops._fp8_name(fp8), mode,
                                    usage)
    tensors = [_fake(x, dtype, shape) for dtype, shape in results]
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    if mode == "per_tensor":
        row = tensors.pop(0) if rowwise else _empty(x)
        col = tensors.pop(0) if columnwise else _empty(x)
        return [row, tensors[0], col, _empty(x), tensors[1]]
    row = tensors[:2] if rowwise else [_empty(x), _empty(x)]
    col = tensors[-2:] if columnwise else [_empty(x), _empty(x)]
    return row + col + [_empty(x)]


def quantize(x, fp8="e4m3", mode="per_tensor", *, scale=None, usage=None,
             transpose=False, pow2_scales=None, epsilon=None):
    """te_mlir.ops.quantize through te_mlir::quantize: a
    te_mlir.ops.Float8Tensor of torch tensors (float8 dtypes)."""
    fp8 = _ops._fp8_name(fp8)
    usage = usage or ("both" if transpose else "rowwise")
    data, si, col, col_si, amax = _quantize_op(x, scale, fp8, mode, usage,
                                               pow2_scales, epsilon or 0.0)
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    scales = "f8E8M0FNU" if mode == "mxfp8_1x32" else "f32"
    if mode == "per_tensor":
        col_si = si
    return _ops.Float8Tensor(
        _typed(data, fp8) if rowwise else None,
        _typed(si, scales) if rowwise or mode == "per_tensor" else None,
        _typed(col, fp8) if columnwise else None,
        _typed(col_si, scales) if columnwise else None,
        amax if mode == "per_tensor" else None, mode, fp8,
        _ops.dtype_name(x.dtype), tuple(x.shape))


@torch.library.custom_op("te_mlir::dequantize", mutates_args=())
def _dequantize_op(data: Tensor, scale_inv: Tensor, fp8: str, mode: str,
                   columnwise: bool, dtype: str) -> Tensor:
    """te.dequantize of FP8 bits (uint8) of type `fp8`."""
    scales = "f8E8M0FNU" if mode == "mxfp8_1x32" else "f32"
    return _ops.dequantize(_typed(_host(data), fp8), dtype,
                           scale_inv=_typed(_host(scale_inv), scales),
                           mode=mode, columnwise=columnwise)


@_dequantize_op.register_fake
def _(data, scale_inv, fp8, mode, columnwise, dtype):
    return _fake(data, dtype, data.shape)


def dequantize(q, dtype=None, *, columnwise=False):
    """A Float8Tensor of torch tensors back in high precision, through
    te_mlir::dequantize."""
    data, si = ((q.columnwise_data, q.columnwise_scale_inv) if columnwise
                else (q.data, q.scale_inv))
    if data is None:
        raise ValueError(f"dequantize: {q!r} has no "
                         f"{'column' if columnwise else 'row'}-wise copy")
    return _dequantize_op(_bits(data), _bits(si), q.fp8, q.mode,
                          columnwise and q.mode == "mxfp8_1x32",
                          _ops.dtype_name(dtype or q.dtype))


@torch.library.custom_op("te_mlir::scaled_matmul", mutates_args=())
def _scaled_matmul_op(a: Tensor, b: Tensor, a_scale_inv: Tensor,
                      b_scale_inv: Tensor, bias: Optional[Tensor],
                      out_scale: Optional[Tensor], a_fp8: str, b_fp8: str,
                      transpose_a: bool, transpose_b: bool, gelu: bool,
                      out_dtype: str) -> list[Tensor]:
    """te.scaled_matmul of FP8 bits (uint8) of types a_fp8 and b_fp8:
    [d, amax] (d as bits for an FP8 out_dtype; amax empty unless the
    output is FP8)."""
    out = _ops.scaled_matmul(
        _typed(_host(a), a_fp8), _typed(_host(b), b_fp8),
        _host(a_scale_inv), _host(b_scale_inv), bias=_host(bias),
        out_scale=_host(out_scale), transpose_a=transpose_a,
        transpose_b=transpose_b, gelu=gelu, out_dtype=out_dtype)
    d, amax = out if isinstance(out, tuple) else (out, _empty(a))
    return [_bits(d), amax]


@_scaled_matmul_op.register_fake
def _(a, b, a_scale_inv, b_scale_inv, bias, out_scale, a_fp8, b_fp8,
      transpose_a, transpose_b, gelu, out_dtype):
    m = a.shape[1] if transpose_a else a.shape[0]
    n = b.shape[0] if transpose_b else b.shape[1]
    return [_fake(a, out_dtype, (m, n)),
            a.new_empty((), dtype=torch.float32) if out_scale is not None
            else _empty(a)]


def scaled_matmul(a, b, *, bias=None, out_scale=None, transpose_a=False,
                  transpose_b=False, gelu=False, out_dtype=torch.bfloat16):
    """The FP8 GEMM of two per_tensor Float8Tensors (of torch tensors)
    through te_mlir::scaled_matmul: D, or (D, amax) for an FP8 out_dtype."""
    for name, x in (("a", a), ("b", b)):
        if x.mode != "per_tensor" or x.data is None:
            raise ValueError(f"scaled_matmul: {name} must be a per_tensor "
                             f"Float8Tensor with its row-wise data, got {x!r}")
    out = _ops.dtype_name(out_dtype)
    d, amax = _scaled_matmul_op(_bits(a.data), _bits(b.data), a.scale_inv,
                                b.scale_inv, bias, out_scale, a.fp8, b.fp8,
                                transpose_a, transpose_b, gelu, out)
    if out in ("f8E4M3FN", "f8E5M2"):
        return _typed(d, out), amax
    return d


fp8_autocast = _recipe.fp8_autocast
