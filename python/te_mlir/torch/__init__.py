"""te_mlir for PyTorch: Transformer Engine's modules and functions at TE's
import paths, with transformer_engine.pytorch replaced by te_mlir.torch.

    import te_mlir.torch as te
    layer = te.LayerNormMLP(1024, 4096, activation="swiglu",
                            normalization="RMSNorm")
    with te.fp8_autocast(fp8_recipe=te_mlir.recipe.DelayedScaling()):
        y = layer(x)

Modules (te_mlir.torch.module): Linear, LayerNorm, RMSNorm,
LayerNormLinear, LayerNormMLP. Attention (te_mlir.torch.attention):
DotProductAttention, MultiheadAttention, RotaryPositionEmbedding,
apply_rotary_pos_emb. TransformerLayer (te_mlir.torch.transformer).
parallel_cross_entropy (te_mlir.torch.cross_entropy). FP8
(te_mlir.torch.fp8): fp8_autocast, autocast, fp8_model_init,
is_fp8_available; the recipes are te_mlir.recipe's.

te_mlir.torch.cross_entropy is TE's module of that name; the
differentiable te.cross_entropy function is te_mlir.torch.ops.cross_entropy.

Each runs te's ops through torch.library custom ops (te_mlir.torch.ops,
the namespace te_mlir: attention, norm, activation, rope, cross_entropy,
matmul and linear, each with its backward; quantize, dequantize,
scaled_matmul), which have fake-tensor kernels so that torch.compile
traces them; each runs te_mlir.ops (one compile per configuration).
Importing this package imports torch; `import te_mlir` alone does not.

Tensors are CPU tensors (the runtime's cpu device), read in place; the
outputs are the buffers the kernels wrote.
"""

from . import attention
from .attention import DotProductAttention, MultiheadAttention, \
    RotaryPositionEmbedding, apply_rotary_pos_emb
from .cross_entropy import parallel_cross_entropy
from .fp8 import autocast, fp8_autocast, fp8_model_init, is_fp8_available, \
    is_fp8_block_scaling_available, is_mxfp8_available
from .module import LayerNorm, LayerNormLinear, LayerNormMLP, Linear, \
    RMSNorm
from .ops import activation, default_alibi_slopes, dequantize, \
    dot_product_attention, linear, norm, quantize, rope, scaled_matmul
from .transformer import TransformerLayer

__all__ = ["DotProductAttention", "LayerNorm", "LayerNormLinear",
           "LayerNormMLP", "Linear", "MultiheadAttention", "RMSNorm",
           "RotaryPositionEmbedding", "TransformerLayer",
           "activation", "apply_rotary_pos_emb", "attention", "autocast",
           "cross_entropy", "default_alibi_slopes", "dequantize",
           "dot_product_attention", "fp8_autocast", "fp8_model_init",
           "is_fp8_available", "is_fp8_block_scaling_available",
           "is_mxfp8_available", "linear", "norm", "parallel_cross_entropy",
           "quantize", "rope", "scaled_matmul"]
