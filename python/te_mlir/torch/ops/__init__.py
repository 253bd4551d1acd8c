"""te_mlir's torch.library custom ops, in the namespace te_mlir: each te
op and its backward, joined by autograd, with a fake-tensor kernel so
that torch.compile traces them; each runs te_mlir.ops (one compile per
configuration). The functions here are the differentiable entry points
on them.

    torch.ops.te_mlir.attention / attention_backward   (attention.py)
    torch.ops.te_mlir.norm / norm_backward             (norm.py)
    torch.ops.te_mlir.activation / activation_backward (activation.py)
    torch.ops.te_mlir.rope / rope_backward             (rope.py)
    torch.ops.te_mlir.cross_entropy / _backward        (cross_entropy.py)
    torch.ops.te_mlir.quantize, dequantize, scaled_matmul (fp8.py)
    torch.ops.te_mlir.matmul, linear                   (gemm.py)
"""

from .activation import activation
from .attention import default_alibi_slopes, dot_product_attention
from .cross_entropy import cross_entropy
from .fp8 import dequantize, quantize, scaled_matmul
from .gemm import linear
from .norm import norm
from .rope import rope

__all__ = ["activation", "cross_entropy", "default_alibi_slopes",
           "dequantize", "dot_product_attention", "linear", "norm", "quantize",
           "rope", "scaled_matmul"]
