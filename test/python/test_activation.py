"""te.activation and te.activation_backward through te_mlir.ops, against
float64 references written from TE's util/math.h (the op's description)
and checked by finite differences, and their quantized outputs bit-exact
against ops.quantize of the unfused result (as test_norm_quantize.py).

Tolerances: each output is rounded once from f32 to its type, so it may
differ from the float64 value by half an ulp of that type (bf16 2^-8,
f16 2^-11, f32 2^-24) of itself, or half the smallest subnormal below the
normal range, plus the f32 arithmetic before the rounding: a handful of
operations and one exp (the polynomial of te-approximate-math-for-cpu, a
few ulp), bounded here by 2^-19 of the magnitude of the terms summed (the
derivatives subtract terms of either sign, so the bound is on the terms,
not on their sum) times 1 + |z| for exp(z) (f32's rounding of z is
relative; exp turns it into an error |z| times larger).

The special values (NaN, infinities, values whose square overflows) are
compared with the references evaluated in f32, as TE's kernels evaluate
them: TE's dgelu of 3e38 is NaN (0 * inf), as te's is."""

import os
import sys

import ml_dtypes
import numpy as np
import pytest

from te_mlir import ops
from te_mlir.errors import DTypeError, ShapeError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir,
                                "te-run"))
import fp8_reference as fp8_ref  # noqa: E402
from quantized_bits import same_bits, same_quantized  # noqa: E402

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
HALF_ULP = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
#: Half the smallest subnormal: the rounding of values below the normal
#: range is absolute.
HALF_TINY = {"f32": 2.0 ** -150, "bf16": 2.0 ** -134, "f16": 2.0 ** -25}
#: f32's intermediate values stop at its normal range: a sigmoid below
#: 2^-126 is lost (TE's too: its expf overflows to inf at 88.7, where the
#: sigmoid is 2^-128).
F32_FLOOR = 2.0 ** -120
F32_MATH = 2.0 ** -19
PLAIN = ("gelu", "qgelu", "relu", "srelu", "silu")
GATED = {"geglu": "gelu", "qgeglu": "qgelu", "reglu": "relu",
         "sreglu": "srelu", "swiglu": "silu", "clamped_swiglu": "clamped",
         "glu": "sigmoid"}
LIMIT, ALPHA, OFFSET = 1.5, 1.2, 0.75


# --- the references (float64) -------------------------------------------


def sigmoid(v):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-v))


def act(base, v, limit=LIMIT, alpha=ALPHA):
    """act(v) and the magnitude of its terms, times 1 + |z| where z is the
    argument of an exp: f32's rounding of z, relative, becomes an error of
    exp(z) relative |z| times as large."""
    with np.errstate(invalid="ignore", over="ignore"):
        if base == "gelu":
            # 0.5 (1 + tanh(y)) as sigmoid(2 y), the same in real numbers:
            # near tanh = -1, float64 would cancel to a few digits.
            z = 2 * v * (0.79788456 + 0.03567741 * v * v)
            y = v * sigmoid(z)
            return y, np.abs(y) * (1 + np.abs(z))
        elif base == "qgelu":
            y = v * sigmoid(1.702 * v)
            return y, np.abs(y) * (1 + np.abs(1.702 * v))
        elif base == "relu":
            y = np.fmax(v, 0.0)
        elif base == "srelu":
            y = np.where(v > 0, v * v, 0.0)
        elif base == "silu":
            y = v * sigmoid(v)
            return y, np.abs(y) * (1 + np.abs(v))
        elif base == "sigmoid":  # glu's gate function (nvte_glu)
            y = sigmoid(v)
            return y, np.abs(y) * (1 + np.abs(v))
        else:  # clamped: c sigmoid(alpha c), c = fminf(limit, v)
            c = np.fmin(limit, v)
            y = c * sigmoid(alpha * c)
            return y, np.abs(y) * (1 + np.abs(alpha * c))
    return y, np.abs(y)


def dact(base, v, limit=LIMIT, alpha=ALPHA):
    """dact(v) and the magnitude of its terms (times 1 + |z|, as act)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if base == "gelu":
            # With s = sigmoid(2 y'): 0.5 (1 - t^2) = 2 s (1 - s) and
            # 0.5 (1 + t) = s, t = tanh(y'), as above.
            z = 2 * 0.79788456 * v * (1 + 0.044715 * v * v)
            s = sigmoid(z)
            first = 2 * v * s * (1 - s) * (0.79788456 + 0.1070322243 * v * v)
            second = s
        elif base in ("qgelu", "silu", "clamped"):
            a = {"qgelu": 1.702, "silu": 1.0, "clamped": alpha}[base]
            c = np.fmin(limit, v) if base == "clamped" else v
            z = a * c
            s = sigmoid(z)
            first, second = a * c * s * (1 - s), s
            if base == "clamped":
                inside = v <= limit
                first, second = (np.where(inside, first, 0.0),
                                 np.where(inside, second, 0.0))
        elif base == "relu":
            return np.where(v > 0, 1.0, 0.0), np.ones_like(v)
        elif base == "sigmoid":  # TE's dsigmoid: s (1 - s)
            # 1 - s cancels where s nears 1 (in TE's formula too): its
            # terms, 1 and s, are the magnitude.
            s = sigmoid(v)
            return s * (1 - s), s * (1 + s) * (1 + np.abs(v))
        else:
            d = np.fmax(2 * v, 0.0)
            return d, np.abs(d)
    return first + second, (np.abs(first) + np.abs(second)) * (1 + np.abs(z))


def gate(kind, g):
    if kind != "clamped_swiglu":
        return g
    return np.fmin(np.fmax(-LIMIT, g), LIMIT) + OFFSET


def forward_reference(kind, x):
    if kind in PLAIN:
        return act(kind, x)
    h = x.shape[-1] // 2
    a, g = x[..., :h], x[..., h:]
    y, m = act(GATED[kind], a)
    factor = gate(kind, g)
    return y * factor, m * np.abs(factor)


def backward_reference(kind, grad, x):
    if kind in PLAIN:
        d, m = dact(kind, x)
        return grad * d, np.abs(grad) * m
    h = x.shape[-1] // 2
    a, g = x[..., :h], x[..., h:]
    d, dm = dact(GATED[kind], a)
    y, ym = act(GATED[kind], a)
    factor = gate(kind, g)
    da = d * grad * factor
    dg = y * grad
    if kind == "clamped_swiglu":
        dg = np.where((g >= -LIMIT) & (g <= LIMIT), dg, 0.0)
    magnitude = np.concatenate([dm * np.abs(grad * factor),
                                ym * np.abs(grad)], axis=-1)
    return np.concatenate([da, dg], axis=-1), magnitude


def params(kind):
    return ({"limit": LIMIT, "alpha": ALPHA, "linear_offset": OFFSET}
            if kind == "clamped_swiglu" else {})


@pytest.mark.parametrize("kind", PLAIN + tuple(GATED))
def test_reference_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 8)) * 2
    # Away from relu's and the clamp's kinks, where no derivative exists.
    x = np.where(np.abs(x) < 0.05, 0.3, x)
    x = np.where(np.abs(np.abs(x) - LIMIT) < 0.05, LIMIT + 0.3, x)
    w = rng.standard_normal(forward_reference(kind, x)[0].shape)
    dx, _ = backward_reference(kind, w, x)
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        numeric[i] = ((forward_reference(kind, x + step)[0] * w).sum()
                      - (forward_reference(kind, x - step)[0] * w).sum()) / 2e-6
    np.testing.assert_allclose(numeric, dx, rtol=1e-5, atol=1e-6)


def assert_within(got, want, magnitude, dtype, what):
    got = np.asarray(got).astype(np.float64)
    assert got.shape == want.shape, what
    bound = (HALF_ULP[dtype] * np.abs(want) + F32_MATH * magnitude
             + HALF_TINY[dtype] + F32_FLOOR)
    same_special = (np.isnan(got) & np.isnan(want)) | (got == want)
    with np.errstate(invalid="ignore"):
        bad = ~same_special & ~(np.abs(got - want) <= bound)
    assert not bad.any(), (
        f"{what}: {bad.sum()} of {bad.size} outside the bound, e.g. got "
        f"{got[bad][:3]} for {want[bad][:3]}")


CASES = [
    # shape (last dim: the input's), dtype
    ((33, 200), "bf16"),
    ((2, 5, 77 * 2), "f32"),
    ((1, 64), "f16"),
]


def inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3).astype(DTYPES[dtype])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}-{c[0]}")
@pytest.mark.parametrize("kind", PLAIN + tuple(GATED))
def test_forward(kind, case):
    shape, dtype = case
    x = inputs(shape, dtype)
    y = ops.activation(x, kind, **params(kind))
    want, magnitude = forward_reference(kind, x.astype(np.float64))
    assert np.asarray(y).dtype == DTYPES[dtype]
    assert_within(y, want, magnitude, dtype, kind)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}-{c[0]}")
@pytest.mark.parametrize("kind", PLAIN + tuple(GATED))
def test_backward(kind, case):
    shape, dtype = case
    x = inputs(shape, dtype, seed=1)
    grad_shape = list(shape)
    if kind in GATED:
        grad_shape[-1] //= 2
    grad = inputs(grad_shape, dtype, seed=2)
    dbias = kind in PLAIN
    out = ops.activation_backward(grad, x, kind, dbias=dbias, **params(kind))
    dx = out[0] if dbias else out
    want, magnitude = backward_reference(kind, grad.astype(np.float64),
                                         x.astype(np.float64))
    assert_within(dx, want, magnitude, dtype, f"d{kind}")
    if dbias:
        rows = tuple(range(x.ndim - 1))
        # The sum of f32 values over at most 165 rows: 165 ulps of f32 of
        # the summed magnitudes.
        bound = (HALF_ULP[dtype] * np.abs(want.sum(axis=rows))
                 + (F32_MATH + 165 * 2.0 ** -24) * magnitude.sum(axis=rows)
                 + HALF_TINY[dtype] + F32_FLOOR)
        got = np.asarray(out[1]).astype(np.float64)
        assert (np.abs(got - want.sum(axis=rows)) <= bound).all()
        assert np.asarray(out[1]).dtype == DTYPES[dtype]


def test_out_dtype():
    x = inputs((4, 64), "bf16")
    y = ops.activation(x, "swiglu", out_dtype="f32")
    want, magnitude = forward_reference("swiglu", x.astype(np.float64))
    assert np.asarray(y).dtype == np.float32
    assert_within(y, want, magnitude, "f32", "swiglu to f32")


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, -88.0, 1e-30,
                     LIMIT, -LIMIT, 3e38, -3e38], np.float32)


@pytest.mark.parametrize("kind", PLAIN + ("clamped_swiglu",))
def test_special_values_as_te(kind):
    """NaN, infinities and extremes through the formulas as TE's fmaxf,
    fminf and comparisons treat them (relu(NaN) = 0, the clamp of NaN is
    the limit)."""
    if kind in PLAIN:
        x = SPECIALS[None, :]
    else:
        x = np.concatenate([SPECIALS, SPECIALS[::-1]])[None, :]
    y = ops.activation(x, kind, **params(kind))
    want, magnitude = forward_reference(kind, x)
    assert_within(y, want.astype(np.float64), magnitude.astype(np.float64),
                  "f32", kind)
    grad = np.ones(np.asarray(y).shape, np.float32)
    dx = ops.activation_backward(grad, x, kind, **params(kind))
    dwant, dmag = backward_reference(kind, grad, x)
    assert_within(dx, dwant.astype(np.float64), dmag.astype(np.float64),
                  "f32", f"d{kind}")


# --- quantized outputs ----------------------------------------------------


@pytest.mark.parametrize("kind,usage", [("gelu", "both"), ("swiglu", "rowwise"),
                                        ("srelu", "columnwise")])
def test_delayed_scaling_casts_the_f32_values(kind, usage):
    x = inputs((64, 128), "bf16", seed=3)
    scale = np.float32(7.25)
    q = ops.activation(x, kind, quantize="per_tensor", scale=scale,
                       usage=usage)
    y32 = ops.activation(x.astype(np.float32), kind)
    same_quantized(q, ops.quantize(y32, "e4m3", "per_tensor", scale=scale,
                                   usage=usage))


@pytest.mark.parametrize("mode", ["mxfp8_1x32", "block_1x128",
                                  "block_128x128"])
def test_self_scaled_modes_cast_the_rounded_output(mode):
    x = inputs((64, 256), "bf16", seed=4)
    y, q = ops.activation(x, "geglu", quantize=mode, usage="both",
                          keep_output=True)
    same_bits(y, ops.activation(x, "geglu"), "y")
    same_quantized(q, ops.quantize(y, "e4m3", mode, usage="both"))
    q2 = ops.activation(x, "geglu", quantize=mode, usage="both")
    same_quantized(q2, q)


@pytest.mark.parametrize("usage", ["rowwise", "both"])
def test_plain_kind_mxfp8_on_3d_input(usage):
    """A plain kind's MXFP8 output of a [b, s, h] input: the blocks run
    over the flattened rows, as ops.quantize casts the 3-D output."""
    x = inputs((2, 32, 64), "bf16", seed=11)
    y, q = ops.activation(x, "srelu", quantize="mxfp8_1x32", usage=usage,
                          keep_output=True)
    same_bits(y, ops.activation(x, "srelu"), "y")
    same_quantized(q, ops.quantize(y, "e4m3", "mxfp8_1x32", usage=usage))


def test_current_scaling_takes_the_f32_amax():
    x = inputs((32, 96), "bf16", seed=5)
    y, amax = ops.activation(x, "qgelu", with_amax=True)
    same_bits(amax, np.abs(ops.activation(x.astype(np.float32), "qgelu"))
              .max().astype(np.float32), "amax")
    q = ops.activation(x, "qgelu", quantize="per_tensor", fp8="e5m2")
    scale = np.float32(fp8_ref.compute_scale(np.asarray(amax), "f8E5M2"))
    same_bits(q.data, ops.quantize(y, "e5m2", "per_tensor", scale=scale).data,
              "data")


def test_backward_fused_dbias_and_cast_transpose():
    """TE's cast_transpose_dbias_dgelu: dx cast in both layouts and dbias,
    from one op."""
    x = inputs((64, 96), "bf16", seed=6)
    grad = inputs((64, 96), "bf16", seed=7)
    scale = np.float32(3.0)
    q, dbias = ops.activation_backward(grad, x, "gelu", dbias=True,
                                       quantize="per_tensor", scale=scale,
                                       usage="both", fp8="e5m2")
    dx32 = ops.activation_backward(grad.astype(np.float32),
                                   x.astype(np.float32), "gelu")
    same_quantized(q, ops.quantize(dx32, "e5m2", "per_tensor", scale=scale,
                                   usage="both"))
    _, dbias_alone = ops.activation_backward(grad, x, "gelu", dbias=True)
    same_bits(dbias, dbias_alone, "dbias")
    dx, q2, dbias2 = ops.activation_backward(
        grad, x, "gelu", dbias=True, quantize="mxfp8_1x32", keep_output=True)
    same_quantized(q2, ops.quantize(dx, "e4m3", "mxfp8_1x32"))
    same_bits(dbias2, dbias_alone, "dbias")


def test_gated_backward_mxfp8():
    x = inputs((64, 128), "f16", seed=8)
    grad = inputs((64, 64), "f16", seed=9)
    q = ops.activation_backward(grad, x, "clamped_swiglu", quantize="mxfp8_1x32",
                                usage="both", **params("clamped_swiglu"))
    dx = ops.activation_backward(grad, x, "clamped_swiglu",
                                 **params("clamped_swiglu"))
    same_quantized(q, ops.quantize(dx, "e4m3", "mxfp8_1x32", usage="both"))


def test_bad_requests_say_what_to_change():
    x = inputs((4, 63), "bf16")
    with pytest.raises(ShapeError, match="must be even"):
        ops.activation(x, "swiglu")
    with pytest.raises(ValueError, match="needs limit="):
        ops.activation(inputs((4, 64), "bf16"), "clamped_swiglu")
    with pytest.raises(ValueError, match="parameters of clamped_swiglu"):
        ops.activation(x, "gelu", alpha=1.0)
    with pytest.raises(ValueError, match="kind"):
        ops.activation(x, "tanh")
    with pytest.raises(ShapeError, match="grad must have shape"):
        ops.activation_backward(inputs((4, 63), "bf16"), inputs((4, 64), "bf16"),
                                "geglu")
    with pytest.raises(DTypeError, match="grad"):
        ops.activation_backward(inputs((4, 63), "f32"), x, "gelu")
    with pytest.raises(ValueError, match="keep_output=True"):
        ops.activation(inputs((4, 64), "bf16"), "gelu", out_dtype="f32",
                       quantize="mxfp8_1x32")
    with pytest.raises(ValueError, match="dbias is for the plain"):
        ops.activation_backward(inputs((4, 32), "bf16"),
                                inputs((4, 64), "bf16"), "swiglu", dbias=True)
