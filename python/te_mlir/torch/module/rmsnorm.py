"""Transformer Engine's RMSNorm, on te.norm."""

from .layernorm import _Norm

__all__ = ["RMSNorm"]


class RMSNorm(_Norm):
    """Transformer Engine's RMSNorm: y = x / sqrt(mean(x^2) + eps) * gamma
    over the last dimensions, with TE's constructor and forward, as
    LayerNorm (no bias)."""

    _kind = "rmsnorm"
