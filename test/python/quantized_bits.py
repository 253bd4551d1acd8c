"""Bit-for-bit comparisons of arrays and of ops.quantize's Float8Tensors,
shared by the tests of the ops whose outputs may be quantized."""

import numpy as np


def same_bits(got, want, what):
    """got and want have one dtype, one shape and the same bytes."""
    got, want = np.atleast_1d(got), np.atleast_1d(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    differ = got.view(np.uint8) != want.view(np.uint8)
    assert not differ.any(), f"{what}: {differ.sum()} bytes differ"


def same_quantized(got, want):
    """Two Float8Tensors with the same copies, scales, amax and layout."""
    for field in ("data", "scale_inv", "columnwise_data",
                  "columnwise_scale_inv", "amax"):
        a, b = getattr(got, field), getattr(want, field)
        assert (a is None) == (b is None), field
        if a is not None:
            same_bits(a, b, field)
    assert (got.mode, got.fp8, got.shape) == (want.mode, want.fp8, want.shape)
