"""Transformer Engine's DotProductAttention, on te.attention."""

import math

import torch

from ... import ops as _ops
from ... import recipe as _recipe
from ..ops.attention import default_alibi_slopes, dot_product_attention

__all__ = ["DotProductAttention"]

_BIAS_TYPES = {"pre_scale_bias": "pre_scale",
               "post_scale_bias": "post_scale"}


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
        if tp_group is not None:
            import torch.distributed as dist
            if dist.get_world_size(tp_group) == 1:
                tp_group = None  # one rank: the whole attention
        for name, value, default in (
                ("sequence_parallel", sequence_parallel, False),
                ("tp_size", tp_size, 1), ("tp_group", tp_group, None),
                ("cp_group", cp_group, None),
                ("cp_global_ranks", cp_global_ranks, None),
                ("cp_stream", cp_stream, None)):
            if value != default:
                raise NotImplementedError(
                    f"DotProductAttention({name}={value!r}): tensor and "
                    f"context parallelism over several ranks are not "
                    f"supported by te_mlir.torch (the collectives are in "
                    f"te_mlir.ops); {name} must be {default!r} (TE's "
                    f"default), or tp_group a group of one rank")
        # TE draws the attention dropout inside the tracker's fork, which
        # it takes once, here. te's attention runs on the CPU: its seed
        # comes from torch's default (CPU) generator, which a tracker
        # controls where its fork swaps that generator's state (TE's
        # CudaRNGStatesTracker forks CUDA's only).
        self.attention_dropout_ctx = (get_rng_state_tracker().fork
                                      if get_rng_state_tracker else None)
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
        recipe = _recipe.get_fp8_recipe()
        if _recipe.is_fp8_enabled() and (recipe.fp8_dpa or recipe.fp8_mha):
            raise NotImplementedError(
                "DotProductAttention: the recipe asks for FP8 attention "
                "(fp8_dpa / fp8_mha); te_mlir's attention runs in high "
                "precision under fp8_autocast, as TE's does with "
                "fp8_dpa=False")
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
        # TE's spellings (pre_scale_bias, post_scale_bias) and te's.
        bias_type = _BIAS_TYPES.get(core_attention_bias_type,
                                    core_attention_bias_type)
        if alibi_slopes is not None:
            bias_type = "alibi"
        if bias_type == "alibi" and alibi_slopes is None:
            alibi_slopes = default_alibi_slopes(self.num_attention_heads)
        offset = None
        if self.softmax_offset is not None:
            offset = self.softmax_offset.reshape(1, -1, 1, 1)
        dropout = self.attention_dropout if self.training else 0.0
        seed = None
        if dropout and self.attention_dropout_ctx is not None:
            with self.attention_dropout_ctx():
                seed = int(torch.randint(0, 2**62, (1,)).item())
        out = dot_product_attention(
            query_layer, key_layer, value_layer, layout=fmt, mask=mask,
            window=window, bottom_right_diagonal=brd,
            scale=self.softmax_scale, bias=core_attention_bias,
            bias_type=bias_type, alibi_slopes=alibi_slopes,
            softmax=self.softmax_type, softmax_offset=offset,
            dropout=dropout, seed=seed, cu_seqlens_q=cu_seqlens_q, cu_seqlens_kv=cu_seqlens_kv,
            seq_offsets_q=cu_seqlens_q_padded,
            seq_offsets_kv=cu_seqlens_kv_padded, seqlens_q=seqlens_q,
            seqlens_kv=seqlens_kv, mask_tensor=mask_tensor)
        return out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1])


def _mask_type(name):
    """TE's normalisation of attn_mask_type spellings."""
    name = name.replace(",", "_")
    return "padding_causal" if name == "causal_padding" else name
