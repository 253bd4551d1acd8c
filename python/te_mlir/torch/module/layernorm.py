"""Transformer Engine's LayerNorm, on te.norm."""

import math

import torch

from .._common import compute_dtype, cpu_device
from ..ops.norm import norm

__all__ = ["LayerNorm"]


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
        device = cpu_device(name, device)
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
        dtype = compute_dtype(self.weight.dtype)
        hidden = math.prod(shape)
        x = inp.to(dtype).reshape(-1, hidden)
        weight = self.weight.to(dtype).reshape(hidden)
        bias = (self.bias.to(dtype).reshape(hidden)
                if self.bias is not None else None)
        z = norm(x, weight, bias, self._kind, self.eps,
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
