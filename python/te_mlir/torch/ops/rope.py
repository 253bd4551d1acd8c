"""te_mlir::rope and te_mlir::rope_backward: te.rope and its backward as
torch custom ops joined by autograd, and `rope`, the differentiable
function on them."""

from typing import Optional

import torch
from torch import Tensor

from ... import ops as _ops
from .._common import host


@torch.library.custom_op("te_mlir::rope", mutates_args=())
def _rope_op(x: Tensor, freqs: Tensor, start_positions: Optional[Tensor],
             cu_seqlens: Optional[Tensor], tensor_format: str,
             interleaved: bool, cp_size: int, cp_rank: int) -> Tensor:
    """te.rope: x with its first d2 channels rotated."""
    return _ops.rope(host(x), host(freqs), tensor_format,
                     interleaved=interleaved, cu_seqlens=host(cu_seqlens),
                     start_positions=host(start_positions), cp_size=cp_size,
                     cp_rank=cp_rank)


@_rope_op.register_fake
def _(x, freqs, start_positions, cu_seqlens, tensor_format, interleaved,
      cp_size, cp_rank):
    return torch.empty_like(x)


@torch.library.custom_op("te_mlir::rope_backward", mutates_args=())
def _rope_backward_op(grad: Tensor, freqs: Tensor,
                      start_positions: Optional[Tensor],
                      cu_seqlens: Optional[Tensor], tensor_format: str,
                      interleaved: bool, cp_size: int,
                      cp_rank: int) -> Tensor:
    """te.rope_backward: the gradient of x."""
    return _ops.rope_backward(
        host(grad), host(freqs), tensor_format, interleaved=interleaved,
        cu_seqlens=host(cu_seqlens), start_positions=host(start_positions),
        cp_size=cp_size, cp_rank=cp_rank)


@_rope_backward_op.register_fake
def _(grad, freqs, start_positions, cu_seqlens, tensor_format, interleaved,
      cp_size, cp_rank):
    return torch.empty_like(grad)


def _setup_rope(ctx, inputs, output):
    _x, freqs, start_positions, cu_seqlens, *attrs = inputs
    ctx.save_for_backward(freqs, start_positions, cu_seqlens)
    ctx.attrs = attrs


def _rope_grad(ctx, dy):
    freqs, start_positions, cu_seqlens = ctx.saved_tensors
    dx = _rope_backward_op(dy.contiguous(), freqs, start_positions,
                           cu_seqlens, *ctx.attrs)
    return (dx,) + (None,) * 7


_rope_op.register_autograd(_rope_grad, setup_context=_setup_rope)


def rope(x, freqs, tensor_format="sbhd", *, interleaved=False,
         cu_seqlens=None, start_positions=None, cp_size=1, cp_rank=0):
    """TE's fused RoPE (te_mlir.ops.rope) through te_mlir::rope,
    differentiable in x. freqs is made f32 as TE's FusedRoPEFunc makes it;
    cu_seqlens and start_positions are made i32."""
    _ops._choice("tensor_format", tensor_format, _ops.ROPE_FORMATS)
    if freqs.dtype != torch.float32:
        freqs = freqs.float()
    as_i32 = (lambda t: t.to(torch.int32).contiguous()
              if t is not None else None)
    return _rope_op(x.contiguous(), freqs.contiguous(),
                    as_i32(start_positions), as_i32(cu_seqlens),
                    tensor_format, bool(interleaved), int(cp_size),
                    int(cp_rank))


@torch.library.custom_op("te_mlir::qkv_rope", mutates_args=())
def _qkv_rope_op(qkv: Tensor, q_freqs: Tensor, k_freqs: Tensor,
                 start_positions: Optional[Tensor], split: list[int],
                 tensor_format: str, interleaved: bool, cp_size: int,
                 cp_rank: int) -> tuple[Tensor, Tensor, Tensor]:
    """te.qkv_rope: TE's (q, k, v) of the fused QKV tensor."""
    return _ops.qkv_rope(host(qkv), host(q_freqs), host(k_freqs), split,
                         tensor_format, start_positions=host(start_positions),
                         interleaved=interleaved, cp_size=cp_size,
                         cp_rank=cp_rank)


@_qkv_rope_op.register_fake
def _(qkv, q_freqs, k_freqs, start_positions, split, tensor_format,
      interleaved, cp_size, cp_rank):
    return tuple(qkv.new_empty(shape) for shape in
                 _ops.qkv_part_shapes(list(qkv.shape), split))


@torch.library.custom_op("te_mlir::qkv_rope_backward", mutates_args=())
def _qkv_rope_backward_op(dq: Tensor, dk: Tensor, dv: Tensor,
                          q_freqs: Tensor, k_freqs: Tensor, split: list[int],
                          tensor_format: str, interleaved: bool, cp_size: int,
                          cp_rank: int) -> Tensor:
    """te.qkv_rope_backward: the gradient of the fused QKV tensor."""
    return _ops.qkv_rope_backward(
        host(dq), host(dk), host(dv), host(q_freqs), host(k_freqs), split,
        tensor_format, interleaved=interleaved, cp_size=cp_size,
        cp_rank=cp_rank)


@_qkv_rope_backward_op.register_fake
def _(dq, dk, dv, q_freqs, k_freqs, split, tensor_format, interleaved,
      cp_size, cp_rank):
    return dv.new_empty(list(dv.shape[:3]) + [sum(split)])


def _setup_qkv_rope(ctx, inputs, output):
    _qkv, q_freqs, k_freqs, _start, *attrs = inputs
    ctx.save_for_backward(q_freqs, k_freqs)
    ctx.attrs = attrs


def _qkv_rope_grad(ctx, dq, dk, dv):
    q_freqs, k_freqs = ctx.saved_tensors
    # TE's fused backward takes no start positions.
    dqkv = _qkv_rope_backward_op(dq.contiguous(), dk.contiguous(),
                                 dv.contiguous(), q_freqs, k_freqs,
                                 *ctx.attrs)
    return (dqkv,) + (None,) * 8


_qkv_rope_op.register_autograd(_qkv_rope_grad, setup_context=_setup_qkv_rope)


def qkv_rope(qkv, q_freqs, k_freqs, split, tensor_format="sbhd", *,
             start_positions=None, interleaved=False, cp_size=1, cp_rank=0):
    """TE's fused QKV RoPE (te_mlir.ops.qkv_rope) through te_mlir::qkv_rope,
    differentiable in qkv; the freqs made f32 and start_positions i32."""
    as_f32 = lambda t: (t if t.dtype == torch.float32 else t.float()
                        ).contiguous()
    if start_positions is not None:
        start_positions = start_positions.to(torch.int32).contiguous()
    return _qkv_rope_op(qkv.contiguous(), as_f32(q_freqs), as_f32(k_freqs),
                        start_positions, [int(n) for n in split],
                        tensor_format, bool(interleaved), int(cp_size),
                        int(cp_rank))
