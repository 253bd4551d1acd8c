"""TE's modules at their import path (transformer_engine.pytorch.module)."""

from .layernorm import LayerNorm
from .layernorm_linear import LayerNormLinear
from .layernorm_mlp import LayerNormMLP
from .linear import Linear
from .rmsnorm import RMSNorm

__all__ = ["LayerNorm", "LayerNormLinear", "LayerNormMLP", "Linear",
           "RMSNorm"]
