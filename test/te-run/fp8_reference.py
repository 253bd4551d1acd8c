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


def amax_of(x, axis=None):
    """TE's amax: fmaxf-reduced |x| from 0, so NaN elements are skipped
    (fmaxf returns the other operand) and an all-NaN or empty input gives 0."""
    magnitude = np.abs(np.asarray(x, np.float32))
    return np.fmax.reduce(magnitude, axis=axis, initial=np.float32(0)).astype(np.float32)


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
    # TE's kernel (delayed_scaling.cu) starts from 0 and reduces with fmaxf:
    # NaN entries of the history are skipped.
    chosen = (np.fmax.reduce(new_history, axis=0, initial=np.float32(0))
              if algo == "max" else np.asarray(amax, np.float32))
    scaled_max = np.float32(np.ldexp(FORMATS[fmt][1], -margin))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        candidate = (scaled_max / chosen).astype(np.float32)
    usable = np.isfinite(chosen) & (chosen > 0)
    new_scale = np.where(usable, candidate, np.asarray(scale, np.float32))
    new_scale = np.where(np.isinf(new_scale), FLT_MAX, new_scale)
    return new_history, new_scale.astype(np.float32)


def e8m0_exponent(amax, fmt):
    """MXFP8's biased scale exponent e: the smallest power of two 2^(e-127)
    at least amax / fp8_max (amax times the f32 reciprocal of fp8_max, as TE
    computes it), clamped to [0, 254]; NaN gives 255."""
    fp8_max = FORMATS[fmt][1]
    ratio = (np.asarray(amax, np.float32) * np.float32(1.0 / fp8_max)).astype(np.float32)
    out = np.empty(ratio.shape, np.int64)
    for idx, r in np.ndenumerate(ratio):
        if np.isnan(r):
            out[idx] = 255
        elif r == 0:
            out[idx] = 0
        elif np.isinf(r):
            out[idx] = 254
        else:
            mantissa, exponent = np.frexp(np.float64(r))  # r = mantissa * 2^exponent
            e = exponent - 1 if mantissa == 0.5 else exponent
            out[idx] = min(max(e + 127, 0), 254)
    return out


def block_amax(x2d, block_rows, block_cols):
    """TE's amax (amax_of) per block of a 2-D array (edge blocks partial)."""
    rows, cols = x2d.shape
    rb, cb = -(-rows // block_rows), -(-cols // block_cols)
    out = np.zeros((rb, cb), np.float32)
    for i in range(rb):
        for j in range(cb):
            blk = np.abs(x2d[i * block_rows:(i + 1) * block_rows,
                             j * block_cols:(j + 1) * block_cols].astype(np.float32))
            out[i, j] = amax_of(blk)
    return out


def expand_blocks(per_block, shape, block_rows, block_cols):
    return np.repeat(np.repeat(per_block, block_rows, 0), block_cols, 1)[:shape[0], :shape[1]]


def mxfp8_quantize(x2d, fmt, columnwise=False):
    """(fp8 data, E8M0 codes) of MXFP8 1x32 quantization of a 2-D array."""
    br, bc = (32, 1) if columnwise else (1, 32)
    e = e8m0_exponent(block_amax(x2d, br, bc), fmt)
    with np.errstate(over="ignore"):
        multiplier = np.where(e == 255, np.nan,
                              np.ldexp(np.float64(1), 127 - e)).astype(np.float32)
    scaled = (x2d.astype(np.float32) * expand_blocks(multiplier, x2d.shape, br, bc)).astype(np.float32)
    return cast_fp8(scaled, fmt), e.astype(np.uint8)


def fp32_block_quantize(x2d, fmt, block_rows, block_cols, epsilon=0.0, pow2=True):
    """(fp8 data, f32 scale_inv) of Float8BlockScaling of a 2-D array."""
    scale = compute_scale(block_amax(x2d, block_rows, block_cols), fmt,
                          epsilon=epsilon, pow2=pow2)
    scale_inv = (np.float32(1) / scale).astype(np.float32)
    scaled = (x2d.astype(np.float32) *
              expand_blocks(scale, x2d.shape, block_rows, block_cols)).astype(np.float32)
    return cast_fp8(scaled, fmt), scale_inv
