"""te_mlir for PyTorch: custom ops, and DotProductAttention with TE's
argument names.

    import te_mlir.torch as tet
    attn = tet.DotProductAttention(num_attention_heads=8, kv_channels=64,
                                   qkv_format="bshd", attn_mask_type="causal")
    out = attn(q, k, v)          # [b, s, h * d], differentiable

The ops are registered with torch.library under the namespace te_mlir:
te_mlir::attention and te_mlir::attention_backward (forward and backward,
joined by autograd), te_mlir::norm and te_mlir::norm_backward (the same;
LayerNorm and RMSNorm run on them), te_mlir::quantize, te_mlir::dequantize
and te_mlir::scaled_matmul. Each has a fake-tensor kernel, so torch.compile
traces them, and each runs te_mlir.ops (one compile per configuration).
Importing this module imports torch; `import te_mlir` alone does not.

Tensors are CPU tensors (the runtime's cpu device), read in place; the
outputs are the buffers the kernels wrote.
"""

import math
from typing import Optional, Sequence

import torch
from torch import Tensor

from . import ops as _ops
from . import recipe as _recipe
from .errors import DeviceError

__all__ = ["DotProductAttention", "LayerNorm", "Linear", "RMSNorm",
           "attention", "default_alibi_slopes", "dequantize", "fp8_autocast",
           "quantize", "scaled_matmul"]

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
    kw = {name: _host(t) for name, t in zip(_OPTIONAL, optional)}
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
        _host(q), _host(k), _host(v), return_lse=True,
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
        *(_host(t) for t in (q, k, v, o, d_o, lse)),
        **_ops_kwargs([args[n] for n in _OPTIONAL],
                      [args[n] for n in _ATTRIBUTES])))
    dq, dk, dv = grads[:3]
    rest = grads[3:]
    dbias = rest.pop(0) if _has_bias_grad(bias, bias_type) else _empty(q)
    d_offset = rest.pop(0) if softmax_offset is not None else _empty(q)
    return [dq, dk, dv, dbias, d_offset]


def _has_bias_grad(bias, bias_type):
    return bias is not None and bias_type in ("pre_scale", "post_scale")


@_attention_backward_op.register_fake
def _(q, k, v, o, d_o, lse, bias, alibi_slopes, softmax_offset, *rest):
    bias_type = rest[len(_OPTIONAL) - 3 + _ATTRIBUTES.index("bias_type")]
    return [q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            bias.new_empty(bias.shape) if _has_bias_grad(bias, bias_type)
            else _empty(q),
            softmax_offset.new_empty(softmax_offset.shape)
            if softmax_offset is not None else _empty(q)]


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


def attention(q, k, v, *, layout="bshd", mask="causal", window=None,
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


class DotProductAttention(torch.nn.Module):
    """Transformer Engine's DotProductAttention, on te_mlir's attention.

    The constructor and forward take TE's arguments, in TE's order:
    qkv_format (sbhd, bshd or thd), attn_mask_type (no_mask, padding,
    causal, causal_bottom_right, padding_causal,
    padding_causal_bottom_right, arbitrary; TE's spellings "causal,padding"
    and "causal_padding" too), window_size, bottom_right_diagonal,
    num_gqa_groups, attention_dropout, softmax_scale (default 1 /
    sqrt(kv_channels), kv_channels' first entry when it is a pair) and
    softmax_type (vanilla, off-by-one, learnable, whose offset is this
    module's parameter softmax_offset of shape [heads], zeros at first as
    in TE). forward returns the output with the heads folded into the
    hidden size, as TE does: [s, b, h*d], [b, s, h*d] or [t, h*d].

    attention_mask: for the padding masks of sbhd/bshd, a pair of bool
    tensors ([b, 1, 1, s_q], [b, 1, 1, s_kv]) or one for both (True
    excludes a position), from which the per-sequence lengths are taken;
    for arbitrary, a bool tensor broadcastable to [b, h, s_q, s_kv]. thd
    takes cu_seqlens_q / cu_seqlens_kv, and cu_seqlens_q_padded /
    cu_seqlens_kv_padded where sequences are padded apart. ALiBi without
    alibi_slopes uses TE's default slopes. max_seqlen_q / max_seqlen_kv
    are implied by the tensors' shapes, and checkpoint_core_attention by
    how the backward works (it recomputes from q, k, v, o and the LSE).
    Tensor-parallel, context-parallel and FP8 attention are TE features
    this module does not have."""

    def __init__(self, num_attention_heads, kv_channels, num_gqa_groups=None,
                 attention_dropout=0.0, qkv_format="sbhd",
                 attn_mask_type="causal", window_size=None,
                 bottom_right_diagonal=None, sequence_parallel=False,
                 tp_size=1, get_rng_state_tracker=None, tp_group=None,
                 layer_number=None, attention_type="self", cp_group=None,
                 cp_global_ranks=None, cp_stream=None, cp_comm_type="p2p",
                 softmax_scale=None, softmax_type="vanilla"):
        super().__init__()
        _ops._choice("qkv_format", qkv_format, ("sbhd", "bshd", "thd"))
        for name, value, default in (
                ("sequence_parallel", sequence_parallel, False),
                ("tp_size", tp_size, 1), ("tp_group", tp_group, None),
                ("get_rng_state_tracker", get_rng_state_tracker, None),
                ("cp_group", cp_group, None),
                ("cp_global_ranks", cp_global_ranks, None),
                ("cp_stream", cp_stream, None)):
            if value != default:
                raise NotImplementedError(
                    f"DotProductAttention({name}=...): tensor and context "
                    "parallelism are not supported by te_mlir.torch (the "
                    "collectives are in te_mlir.ops)")
        self.num_attention_heads = num_attention_heads
        self.kv_channels = kv_channels
        self.num_gqa_groups = num_gqa_groups or num_attention_heads
        if num_attention_heads % self.num_gqa_groups:
            raise ValueError("num_attention_heads must be a multiple of "
                             "num_gqa_groups")
        self.attention_dropout = float(attention_dropout)
        self.qkv_format = qkv_format
        self.attn_mask_type = _mask_type(attn_mask_type)
        self.window_size = window_size
        self.bottom_right_diagonal = bottom_right_diagonal
        if softmax_scale is None:
            d = kv_channels if isinstance(kv_channels, int) else \
                kv_channels[0]
            softmax_scale = 1.0 / math.sqrt(d)
        self.softmax_scale = softmax_scale
        self.softmax_type = softmax_type.replace("-", "_")
        self.layer_number = layer_number
        self.attention_type = attention_type
        if self.softmax_type == "learnable":
            self.softmax_offset = torch.nn.Parameter(
                torch.zeros(num_attention_heads))
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
                cu_seqlens_kv=None, cu_seqlens_q_padded=None,
                cu_seqlens_kv_padded=None, max_seqlen_q=None,
                max_seqlen_kv=None, attn_mask_type=None, window_size=None,
                bottom_right_diagonal=None, checkpoint_core_attention=False,
                core_attention_bias_type="no_bias", core_attention_bias=None,
                alibi_slopes=None):
        fmt = qkv_format or self.qkv_format
        mask = _mask_type(attn_mask_type) if attn_mask_type else \
            self.attn_mask_type
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
        bias_type = core_attention_bias_type
        if alibi_slopes is not None:
            bias_type = "alibi"
        if bias_type == "alibi" and alibi_slopes is None:
            alibi_slopes = default_alibi_slopes(self.num_attention_heads)
        offset = None
        if self.softmax_offset is not None:
            offset = self.softmax_offset.reshape(1, -1, 1, 1)
        out = attention(
            query_layer, key_layer, value_layer, layout=fmt, mask=mask,
            window=window, bottom_right_diagonal=brd,
            scale=self.softmax_scale, bias=core_attention_bias,
            bias_type=bias_type, alibi_slopes=alibi_slopes,
            softmax=self.softmax_type, softmax_offset=offset,
            dropout=self.attention_dropout if self.training else 0.0,
            cu_seqlens_q=cu_seqlens_q, cu_seqlens_kv=cu_seqlens_kv,
            seq_offsets_q=cu_seqlens_q_padded,
            seq_offsets_kv=cu_seqlens_kv_padded, seqlens_q=seqlens_q,
            seqlens_kv=seqlens_kv, mask_tensor=mask_tensor)
        return out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1])


def _mask_type(name):
    """TE's normalisation of attn_mask_type spellings."""
    name = name.replace(",", "_")
    return "padding_causal" if name == "causal_padding" else name


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


def _scale_type(mode):
    """The te type of `mode`'s scale_inv."""
    return "f8E8M0FNU" if mode == "mxfp8_1x32" else "f32"


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
    return _quantize_op_results(
        (q.data, q.scale_inv, q.columnwise_data, q.columnwise_scale_inv,
         q.amax), mode, x)


def _quantize_op_results(parts, mode, like):
    """The op's five results from split_quantize_results' parts: raw bits,
    empty for what is absent and for per_tensor's shared column-wise
    scale_inv (an op's outputs may not alias each other)."""
    parts = list(parts)
    if mode == "per_tensor":
        parts[3] = None
    return [_bits(t) if t is not None else _empty(like) for t in parts]


@_quantize_op.register_fake
def _(x, scale, fp8, mode, usage, pow2_scales, epsilon):
    results = _ops.quantize_results(x.shape, _ops._fp8_name(fp8), mode,
                                    usage)
    return _quantize_op_results(_ops.split_quantize_results(
        [_fake(x, dtype, shape) for dtype, shape in results], mode, usage),
        mode, x)


def quantize(x, fp8="e4m3", mode="per_tensor", *, scale=None, usage=None,
             transpose=False, pow2_scales=None, epsilon=None):
    """te_mlir.ops.quantize through te_mlir::quantize: a
    te_mlir.ops.Float8Tensor of torch tensors (float8 dtypes)."""
    fp8 = _ops._fp8_name(fp8)
    usage = _ops._usage(usage, transpose)
    data, si, col, col_si, amax = _quantize_op(x, scale, fp8, mode, usage,
                                               pow2_scales, epsilon or 0.0)
    rowwise, columnwise = usage != "columnwise", usage != "rowwise"
    scales = _scale_type(mode)
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
    return _ops.dequantize(_typed(_host(data), fp8), dtype,
                           scale_inv=_typed(_host(scale_inv),
                                            _scale_type(mode)),
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
                      a_mode: str, b_mode: str, transpose_a: bool,
                      transpose_b: bool, gelu: bool,
                      out_dtype: str) -> list[Tensor]:
    """te.scaled_matmul of FP8 bits (uint8) of types a_fp8 and b_fp8 with
    scales in modes a_mode and b_mode (E8M0 scales as uint8 bits):
    [d, amax] (d as bits for an FP8 out_dtype; amax empty unless the
    output is FP8)."""
    out = _ops.scaled_matmul(
        _typed(_host(a), a_fp8), _typed(_host(b), b_fp8),
        _typed(_host(a_scale_inv), _scale_type(a_mode)),
        _typed(_host(b_scale_inv), _scale_type(b_mode)), bias=_host(bias),
        out_scale=_host(out_scale), transpose_a=transpose_a,
        transpose_b=transpose_b, gelu=gelu, scaling=(a_mode, b_mode),
        out_dtype=out_dtype)
    d, amax = out if isinstance(out, tuple) else (out, _empty(a))
    return [_bits(d), amax]


@_scaled_matmul_op.register_fake
def _(a, b, a_scale_inv, b_scale_inv, bias, out_scale, a_fp8, b_fp8,
      a_mode, b_mode, transpose_a, transpose_b, gelu, out_dtype):
    m, n = _ops.matmul_shape(a.shape, b.shape, transpose_a, transpose_b)
    return [_fake(a, out_dtype, (m, n)),
            a.new_empty((), dtype=torch.float32) if out_scale is not None
            else _empty(a)]


def scaled_matmul(a, b, *, bias=None, out_scale=None, transpose_a=False,
                  transpose_b=False, gelu=False, out_dtype=torch.bfloat16):
    """The FP8 GEMM of two Float8Tensors (of torch tensors) in any scaling
    mode through te_mlir::scaled_matmul: D, or (D, amax) for an FP8
    out_dtype (per_tensor operands). op(A) = A^T with transpose_a, op(B) =
    B^T with transpose_b, for the tensors as quantized; each operand's copy
    whose scales run along K is used, as te_mlir.ops.scaled_matmul (and
    TE) choose it."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, _ops.Float8Tensor):
            raise TypeError(f"scaled_matmul: {name} must be a Float8Tensor "
                            f"(te_mlir.torch.quantize), got "
                            f"{type(x).__name__}")
    a_data, a_si, transpose_a = _ops.gemm_copy(a, not transpose_a,
                                               transpose_a, "a")
    b_data, b_si, transpose_b = _ops.gemm_copy(b, transpose_b, transpose_b,
                                               "b")
    out = _ops.dtype_name(out_dtype)
    d, amax = _scaled_matmul_op(_bits(a_data), _bits(b_data), _bits(a_si),
                                _bits(b_si), bias, out_scale, a.fp8, b.fp8,
                                a.mode, b.mode, transpose_a, transpose_b,
                                gelu, out)
    if out in ("f8E4M3FN", "f8E5M2"):
        return _typed(d, out), amax
    return d


fp8_autocast = _recipe.fp8_autocast


# --- Linear under fp8_autocast ---------------------------------------------


class Linear(torch.nn.Module):
    """Transformer Engine's Linear: y = x W^T + b, with its GEMMs in FP8
    inside fp8_autocast (te_mlir.recipe), in high precision outside.

    Under every recipe (DelayedScaling, Float8CurrentScaling,
    MXFP8BlockScaling, Float8BlockScaling) the three GEMMs are
    te.scaled_matmul on FP8 operands, as TE runs them: forward x (E4M3)
    by W (E4M3); dgrad dy (E5M2 under HYBRID) by W; wgrad dy^T by x, each
    on the copy of its operand whose scales run along K (TE's
    cast_transpose and column-wise copies), with the block scales applied
    per block. The quantizers keep their state on the module: under
    DelayedScaling each tensor's amax history and scale advance every step
    (x and W in forward, dy in backward). backward_override "high_precision" runs the backward
    GEMMs on the unquantized tensors, "dequantized" on the dequantized
    ones, as in TE. fp8_autocast(enabled=False, calibrating=True) runs in
    high precision and still records amaxes into DelayedScaling's
    histories, as TE's calibration does."""

    def __init__(self, in_features, out_features, bias=True,
                 params_dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dtype = params_dtype or torch.get_default_dtype()
        self.weight = torch.nn.Parameter(
            torch.empty(out_features, in_features, dtype=dtype))
        self.bias = (torch.nn.Parameter(torch.zeros(out_features,
                                                    dtype=dtype))
                     if bias else None)
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self._recipe = None
        self.quantizers = None

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"bias={self.bias is not None}")

    def _quantizers_for(self, recipe):
        """{"input", "weight", "grad"}: Quantizers of `recipe`, kept while
        the module runs under the same recipe object."""
        if self._recipe is not recipe:
            self._recipe = recipe
            self.quantizers = {role: recipe.quantizer(role)
                               for role in _recipe.ROLES}
        return self.quantizers

    def forward(self, inp):
        recipe = _recipe.get_fp8_recipe()
        if _recipe.is_fp8_enabled():
            return _LinearFunction.apply(inp, self.weight, self.bias, recipe,
                                         self._quantizers_for(recipe))
        if _recipe.is_fp8_calibrating() and recipe.delayed():
            q = self._quantizers_for(recipe)
            q["input"].update(_ops.amax(inp.detach()))
            q["weight"].update(_ops.amax(self.weight.detach()))
        return torch.nn.functional.linear(inp, self.weight, self.bias)


class _LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, weight, bias, recipe, quantizers):
        x = inp.detach().reshape(-1, inp.shape[-1])
        w = weight.detach()
        xq = quantizers["input"](x, usage="both")
        wq = quantizers["weight"](w, usage="both")
        # fprop: x by W^T (TE's TN), on the copies whose scales run along K.
        y = _ops.scaled_matmul(
            xq, wq, transpose_b=True, out_dtype=_ops.dtype_name(x.dtype),
            bias=bias.detach() if bias is not None else None)
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
        override = ctx.recipe.backward_override
        if override == "high_precision":
            x, w = ctx.saved_tensors
            dx, dw = g @ w, g.T @ x
        else:
            xq, wq = ctx.fp8
            if override == "dequantized":
                dx = g @ _matrix(wq, False, g.dtype)
                dw = g.T @ _matrix(xq, False, g.dtype)
            else:
                gq = ctx.quantizers["grad"](g, usage="both")
                # dgrad: dy [N, out] by W [out, in]; wgrad: dy^T [out, N]
                # by x [N, in]. scaled_matmul reads the copy of each
                # operand whose scales run along K, as TE's GEMM does (the
                # column-wise copies where K is a tensor's first dim).
                dx = _ops.scaled_matmul(gq, wq,
                                        out_dtype=_ops.dtype_name(g.dtype))
                dw = _ops.scaled_matmul(gq, xq, transpose_a=True,
                                        out_dtype=_ops.dtype_name(w_dtype))
        db = g.sum(0) if ctx.has_bias else None
        return dx.reshape(in_shape), dw.to(w_dtype), db, None, None


# --- Normalization -------------------------------------------------------

@torch.library.custom_op("te_mlir::norm", mutates_args=())
def _norm_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], kind: str,
             eps: float, zero_centered_gamma: bool) -> tuple[Tensor, Tensor,
                                                              Tensor]:
    """te.norm on x [N, H]: (z, mu, rsigma); mu is empty for rmsnorm."""
    x, weight, bias = _host(x), _host(weight), _host(bias)
    if kind == "layernorm":
        return _ops.layer_norm(x, weight, bias, eps=eps,
                               zero_centered_gamma=zero_centered_gamma)
    z, rsigma = _ops.rms_norm(x, weight, eps=eps,
                              zero_centered_gamma=zero_centered_gamma)
    return z, _empty(x), rsigma


@_norm_op.register_fake
def _(x, weight, bias, kind, eps, zero_centered_gamma):
    rows = x.new_empty(x.shape[:-1], dtype=torch.float32)
    mean = rows if kind == "layernorm" else _empty(x)
    return torch.empty_like(x), mean, torch.empty_like(rows)


@torch.library.custom_op("te_mlir::norm_backward", mutates_args=())
def _norm_backward_op(dz: Tensor, x: Tensor, mu: Tensor, rsigma: Tensor,
                      weight: Tensor, kind: str,
                      zero_centered_gamma: bool) -> tuple[Tensor, Tensor,
                                                          Tensor]:
    """te.norm_backward: (dx, dweight, dbias); dbias is empty for
    rmsnorm."""
    dz, x, mu, rsigma, weight = map(_host, (dz, x, mu, rsigma, weight))
    if kind == "layernorm":
        return _ops.layer_norm_backward(
            dz, x, mu, rsigma, weight,
            zero_centered_gamma=zero_centered_gamma)
    dx, dw = _ops.rms_norm_backward(dz, x, rsigma, weight,
                                    zero_centered_gamma=zero_centered_gamma)
    return dx, dw, _empty(x)


@_norm_backward_op.register_fake
def _(dz, x, mu, rsigma, weight, kind, zero_centered_gamma):
    dbias = torch.empty_like(weight) if kind == "layernorm" else _empty(x)
    return torch.empty_like(x), torch.empty_like(weight), dbias


def _setup_norm(ctx, inputs, output):
    x, weight, bias, kind, _eps, zero_centered_gamma = inputs
    _z, mu, rsigma = output
    ctx.save_for_backward(x, weight, mu, rsigma)
    ctx.kind, ctx.zero_centered_gamma = kind, zero_centered_gamma
    ctx.has_bias = bias is not None


def _norm_grad(ctx, dz, _dmu, _drsigma):
    x, weight, mu, rsigma = ctx.saved_tensors
    dx, dw, db = _norm_backward_op(dz.to(weight.dtype).contiguous(), x, mu,
                                   rsigma, weight, ctx.kind,
                                   ctx.zero_centered_gamma)
    return dx, dw, db if ctx.has_bias else None, None, None, None


_norm_op.register_autograd(_norm_grad, setup_context=_setup_norm)


class _Norm(torch.nn.Module):
    """What LayerNorm and RMSNorm share: TE's constructor and forward."""

    _kind = None

    def __init__(self, normalized_shape=None, eps=1e-5,
                 sequence_parallel=None, params_dtype=None,
                 zero_centered_gamma=False, hidden_size=None, *,
                 device=None, dtype=None, sm_margin=0):
        super().__init__()
        name = type(self).__name__
        if normalized_shape is None:
            normalized_shape = hidden_size
        elif hidden_size is not None and hidden_size != normalized_shape:
            raise ValueError(f"{name}: normalized_shape={normalized_shape!r} "
                             f"and hidden_size={hidden_size!r} disagree "
                             "(hidden_size is TE's deprecated alias)")
        if normalized_shape is None:
            raise TypeError(f"{name}: normalized_shape (or hidden_size) is "
                            "required")
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        if params_dtype is not None and dtype is not None and \
                params_dtype != dtype:
            raise ValueError(f"{name}: params_dtype={params_dtype} and "
                             f"dtype={dtype} disagree (params_dtype is TE's "
                             "deprecated alias)")
        dtype = dtype or params_dtype or torch.get_default_dtype()
        device = torch.device(device) if device is not None else \
            torch.device("cpu")
        if device.type != "cpu":
            raise DeviceError(
                f"{name}: device={device}; te_mlir.torch runs on the CPU "
                "(the runtime's cuda device cannot take torch's device "
                "memory yet)")
        self.eps = float(eps)
        self.zero_centered_gamma = bool(zero_centered_gamma)
        # GPU SMs left to other kernels: no meaning on the CPU.
        self.sm_margin = sm_margin
        init = torch.zeros if self.zero_centered_gamma else torch.ones
        self.weight = torch.nn.Parameter(
            init(self.normalized_shape, dtype=dtype, device=device))
        self.bias = (torch.nn.Parameter(
            torch.zeros(self.normalized_shape, dtype=dtype, device=device))
            if self._kind == "layernorm" else None)
        self.sequence_parallel = sequence_parallel
        for parameter in self.parameters():
            parameter.sequence_parallel = bool(sequence_parallel)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"zero_centered_gamma={self.zero_centered_gamma}")

    def forward(self, inp):
        shape = self.normalized_shape
        if tuple(inp.shape[-len(shape):]) != shape:
            raise ValueError(f"{type(self).__name__}: the input's last "
                             f"dimensions {list(inp.shape)} do not end in "
                             f"normalized_shape {list(shape)}")
        dtype = (torch.get_autocast_dtype("cpu")
                 if torch.is_autocast_enabled("cpu") else self.weight.dtype)
        hidden = math.prod(shape)
        x = inp.to(dtype).reshape(-1, hidden)
        weight = self.weight.to(dtype).reshape(hidden)
        bias = (self.bias.to(dtype).reshape(hidden)
                if self.bias is not None else None)
        z, _mu, _rsigma = _norm_op(x, weight, bias, self._kind, self.eps,
                                   self.zero_centered_gamma)
        return z.reshape(inp.shape)


class LayerNorm(_Norm):
    """Transformer Engine's LayerNorm: y = (x - mean) / sqrt(var + eps) *
    gamma + beta over the last dimensions (normalized_shape), with TE's
    constructor (normalized_shape, eps=1e-5, sequence_parallel=None,
    params_dtype=None, zero_centered_gamma=False, hidden_size=None, device,
    dtype, sm_margin) and its forward and backward as te.norm and
    te.norm_backward. Under torch.autocast the input and parameters are
    cast to the autocast dtype, as TE does."""

    _kind = "layernorm"


class RMSNorm(_Norm):
    """Transformer Engine's RMSNorm: y = x / sqrt(mean(x^2) + eps) * gamma
    over the last dimensions, with TE's constructor and forward, as
    LayerNorm (no bias)."""

    _kind = "rmsnorm"


def _matrix(q, columnwise, dtype):
    """q's row-wise or column-wise copy, dequantized, in the input's
    orientation (per_tensor and the block modes store the column-wise
    copy transposed; MXFP8 keeps the input's layout)."""
    m = q.dequantize(dtype, columnwise=columnwise)
    return m.T if columnwise and q.mode != "mxfp8_1x32" else m
