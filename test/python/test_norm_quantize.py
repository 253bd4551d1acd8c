"""te.norm's quantized outputs through te_mlir.ops, as TE's normalization
produces them under each recipe (pytorch/csrc/extensions/normalization.cpp):

* delayed scaling (per_tensor with a scale, no z): the norm casts z's f32
  value itself, so the result is bit-exact against ops.quantize of the
  same norm computed in f32 (an f32 copy of the operands gives the very
  f32 values the fused kernel computes);
* z kept, MXFP8 and block scaling: the cast is of z as the norm rounds it,
  bit-exact against ops.quantize of ops.layer_norm's / ops.rms_norm's z;
* current scaling: the norm gives z and the amax of its f32 value; the
  scale follows from that amax (fp8_reference.compute_scale) and the cast
  is of z.

z itself is checked against float64 references in test/te-run/test_norm.py;
here every comparison is of bits."""

import os
import sys

import ml_dtypes
import numpy as np
import pytest

from te_mlir import ops
from te_mlir.errors import ShapeError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir,
                                "te-run"))
import fp8_reference as fp8_ref  # noqa: E402
from quantized_bits import same_bits, same_quantized  # noqa: E402

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
FP8 = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}


def operands(kind, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = DTYPES[dtype]
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(t)
    gamma = (rng.standard_normal(shape[-1]) * 0.7).astype(t)
    beta = (rng.standard_normal(shape[-1]).astype(t)
            if kind == "layernorm" else None)
    return x, gamma, beta


def norm(kind, x, gamma, beta, **kw):
    if kind == "layernorm":
        return ops.layer_norm(x, gamma, beta, **kw)
    return ops.rms_norm(x, gamma, **kw)


def f32(a):
    return None if a is None else np.asarray(a).astype(np.float32)


DELAYED = [
    # kind, shape, dtype, fp8, usage, zero-centered gamma
    ("layernorm", (48, 200), "bf16", "e4m3", "rowwise", False),
    ("layernorm", (2, 24, 77), "f16", "e5m2", "rowwise", True),
    # Rows of whole vectors of 16: the norm's row kernel, its fused cast.
    ("layernorm", (48, 256), "bf16", "e4m3", "rowwise", False),
    # (Large enough that casting the f16-rounded z differs somewhere.)
    ("rmsnorm", (3, 48, 64), "f16", "e5m2", "rowwise", True),
    ("layernorm", (7, 32), "f32", "e4m3", "rowwise", True),
    ("rmsnorm", (64, 96), "bf16", "e4m3", "both", True),
    ("rmsnorm", (1, 33), "f32", "e5m2", "columnwise", False),
]


@pytest.mark.parametrize("case", DELAYED, ids=lambda c: "-".join(map(str, c)))
def test_delayed_scaling_casts_the_f32_value(case):
    kind, shape, dtype, fp8, usage, centered = case
    x, gamma, beta = operands(kind, shape, dtype)
    scale = np.float32(13.5)
    q, *stats = norm(kind, x, gamma, beta, zero_centered_gamma=centered,
                     quantize="per_tensor", fp8=fp8, scale=scale, usage=usage)
    z32, *stats32 = norm(kind, f32(x), f32(gamma), f32(beta),
                         zero_centered_gamma=centered)
    want = ops.quantize(z32, fp8, "per_tensor", scale=scale, usage=usage)
    same_quantized(q, want)
    assert q.dtype == dtype
    for got, ref in zip(stats, stats32):
        same_bits(got, ref, "statistics")
    # Not the cast of the rounded z: for bf16 and f16 the two differ.
    if dtype != "f32":
        z, *_ = norm(kind, x, gamma, beta, zero_centered_gamma=centered)
        rounded = ops.quantize(z, fp8, "per_tensor", scale=scale, usage=usage)
        differ = q.data if q.data is not None else q.columnwise_data
        other = (rounded.data if rounded.data is not None
                 else rounded.columnwise_data)
        assert (np.asarray(differ).view(np.uint8)
                != np.asarray(other).view(np.uint8)).any()


@pytest.mark.parametrize("hidden", [130, 128])
@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_kept_output_is_cast_as_rounded(kind, hidden):
    x, gamma, beta = operands(kind, (40, hidden), "bf16", seed=1)
    scale = np.float32(0.75)
    z, q, *stats = norm(kind, x, gamma, beta, quantize="per_tensor",
                        scale=scale, usage="both", keep_output=True)
    z_ref, *stats_ref = norm(kind, x, gamma, beta)
    same_bits(z, z_ref, "z")
    same_quantized(q, ops.quantize(z_ref, "e4m3", "per_tensor", scale=scale,
                                   usage="both"))
    for got, ref in zip(stats, stats_ref):
        same_bits(got, ref, "statistics")


SELF_SCALED = [
    # kind, shape, dtype, mode, usage, extra
    ("rmsnorm", (64, 96), "bf16", "mxfp8_1x32", "both", {}),
    ("layernorm", (2, 32, 64), "f16", "mxfp8_1x32", "rowwise", {}),
    ("layernorm", (96, 200), "bf16", "block_1x128", "both", {}),
    ("rmsnorm", (130, 257), "f32", "block_128x128", "both",
     {"pow2_scales": False, "amax_epsilon": 1e-3}),
]


@pytest.mark.parametrize("case", SELF_SCALED,
                         ids=lambda c: "-".join(map(str, c[:5])))
def test_self_scaled_modes_cast_z(case):
    kind, shape, dtype, mode, usage, extra = case
    x, gamma, beta = operands(kind, shape, dtype, seed=2)
    q, *stats = norm(kind, x, gamma, beta, quantize=mode, fp8="e4m3",
                     usage=usage, **extra)
    z, *_ = norm(kind, x, gamma, beta)
    want = ops.quantize(z, "e4m3", mode, usage=usage,
                        pow2_scales=extra.get("pow2_scales"),
                        epsilon=extra.get("amax_epsilon"))
    same_quantized(q, want)


@pytest.mark.parametrize("hidden", [150, 160])
@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_current_scaling_scales_by_the_f32_amax(kind, pow2, hidden):
    x, gamma, beta = operands(kind, (33, hidden), "bf16", seed=3)
    z, amax, *stats = norm(kind, x, gamma, beta, with_amax=True)
    z32, *_ = norm(kind, f32(x), f32(gamma), f32(beta))
    same_bits(amax, np.abs(z32).max().astype(np.float32), "amax")
    q, *_ = norm(kind, x, gamma, beta, quantize="per_tensor", fp8="e5m2",
                 pow2_scales=pow2, amax_epsilon=1e-6)
    scale = np.float32(fp8_ref.compute_scale(np.asarray(amax), FP8["e5m2"],
                                             1e-6, pow2))
    want = ops.quantize(z, "e5m2", "per_tensor", scale=scale)
    same_bits(q.data, want.data, "data")
    same_bits(q.scale_inv, want.scale_inv, "scale_inv")


@pytest.mark.parametrize("hidden", [64, 70])
def test_nan_rows_in_the_amax_and_the_cast(hidden):
    x, gamma, beta = operands("layernorm", (6, hidden), "bf16", seed=4)
    x[2, 5] = np.nan
    x[4, 1] = np.inf
    q, mu, rsigma = ops.layer_norm(x, gamma, beta, quantize="per_tensor",
                                   scale=np.float32(2.0))
    data = np.asarray(q.data).astype(np.float32)
    assert np.isnan(data[2]).all() and np.isnan(data[4]).all()
    assert np.isfinite(data[[0, 1, 3, 5]]).all()
    z32, _, _ = ops.layer_norm(f32(x), f32(gamma), f32(beta))
    finite = np.abs(z32[[0, 1, 3, 5]]).max()
    same_bits(q.amax, np.float32(finite), "amax skips NaN")


def test_bad_requests_say_what_to_change():
    x, gamma, _ = operands("rmsnorm", (4, 64), "bf16")
    with pytest.raises(ShapeError, match="multiple of 32"):
        ops.rms_norm(x, gamma, quantize="mxfp8_1x32", usage="both")
    x3, g3, _ = operands("rmsnorm", (2, 4, 64), "bf16")
    with pytest.raises(ShapeError, match="needs a 2-D input"):
        ops.rms_norm(x3, g3, quantize="per_tensor", scale=np.float32(1),
                     usage="both")
    with pytest.raises(ValueError, match="pass quantize=<mode> too"):
        ops.rms_norm(x, gamma, scale=np.float32(1))
    with pytest.raises(ValueError, match="keep_output=True"):
        ops.rms_norm(x, gamma, quantize="per_tensor", scale=np.float32(1),
                     out_dtype="f32")
    with pytest.raises(ValueError, match="fixed by its format"):
        ops.rms_norm(x, gamma, quantize="mxfp8_1x32", pow2_scales=True)
    with pytest.raises(ValueError, match="carries its own scales"):
        ops.rms_norm(x, gamma, quantize="mxfp8_1x32", with_amax=True)
    with pytest.raises(ValueError, match="quantize"):
        ops.rms_norm(x, gamma, quantize="per_channel")
