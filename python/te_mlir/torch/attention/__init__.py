"""Attention, at TE's import paths (transformer_engine.pytorch.attention):
DotProductAttention (dot_product_attention), MultiheadAttention
(multi_head_attention), RotaryPositionEmbedding and apply_rotary_pos_emb
(rope).

This package can also be called: te_mlir.torch.attention(q, k, v, ...) is
te_mlir.torch.dot_product_attention, the function this name had before
it became TE's package."""

import sys
import types

from ..ops import attention as _ops
from .dot_product_attention import DotProductAttention
from .multi_head_attention import MultiheadAttention
from .rope import (RotaryPositionEmbedding, apply_fused_qkv_rotary_pos_emb,
                   apply_rotary_pos_emb)

__all__ = ["DotProductAttention", "MultiheadAttention",
           "RotaryPositionEmbedding", "apply_fused_qkv_rotary_pos_emb",
           "apply_rotary_pos_emb"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return _ops.dot_product_attention(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
