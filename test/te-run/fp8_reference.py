"""Independent numpy/ml_dtypes references for te's FP8 ops.

ml_dtypes rounds to nearest even but turns out-of-range values into NaN
(E4M3FN) or inf (E5M2), where Transformer Engine saturates: values are
clipped to +-max first, which also maps +-inf to +-max and keeps NaN.
"""
import ml_dtypes
import numpy as np

FORMATS = {
    "f8E4M3FN": (ml_dtypes.float8_e4m3fn, 448.0),
    "f8E5M2": (ml_dtypes.float8_e5m2, 57344.0),
}
FLT_MAX = np.float32(np.finfo(np.float32).max)


def cast_fp8(x, fmt):
    """f32 -> fp8 with TE's saturation; returns the fp8 array."""
    dtype, fp8_max = FORMATS[fmt]
    x = np.asarray(x, np.float32)
    return np.clip(x, -fp8_max, fp8_max).astype(dtype)


def same_fp8_bits(got_bits, want_fp8):
    """Bit equality, except that any NaN matches any NaN."""
    want_bits = want_fp8.view(np.uint8)
    want_nan = np.isnan(want_fp8.astype(np.float32))
    got_nan = np.isnan(got_bits.view(want_fp8.dtype).astype(np.float32))
    return np.where(want_nan, got_nan, got_bits == want_bits)


def compute_scale(amax, fmt, epsilon=0.0, pow2=False):
    """Float8CurrentScaling's scale, element by element, in f32."""
    fp8_max = np.float32(FORMATS[fmt][1])
    out = []
    for a in np.asarray(amax, np.float32).ravel():
        a = np.float32(epsilon) if a < np.float32(epsilon) else a
        if a == 0 or not np.isfinite(a):
            out.append(np.float32(1.0))
            continue
        with np.errstate(over="ignore"):
            s = np.float32(fp8_max / a)
        if np.isinf(s):
            s = FLT_MAX
        if pow2:
            s = np.array([s], np.float32).view(np.uint32) & np.uint32(0xFF800000)
            s = s.view(np.float32)[0]
        out.append(np.float32(s))
    return np.array(out, np.float32).reshape(np.shape(amax))


def update_delayed_scaling(history, amax, scale, fmt, algo="max", margin=0):
    """TE's delayed-scaling update: roll in the new amax, then rescale."""
    history = np.asarray(history, np.float32)
    new_history = np.concatenate([np.asarray(amax, np.float32)[None],
                                  history[:-1]], axis=0)
    chosen = new_history.max(axis=0) if algo == "max" else np.asarray(amax, np.float32)
    if algo == "max":
        # numpy's max propagates NaN like the kernel's maximumf.
        chosen = np.where(np.isnan(new_history).any(axis=0), np.nan, chosen)
    scaled_max = np.float32(np.ldexp(FORMATS[fmt][1], -margin))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        candidate = (scaled_max / chosen).astype(np.float32)
    usable = np.isfinite(chosen) & (chosen > 0)
    new_scale = np.where(usable, candidate, np.asarray(scale, np.float32))
    new_scale = np.where(np.isinf(new_scale), FLT_MAX, new_scale)
    return new_history, new_scale.astype(np.float32)
