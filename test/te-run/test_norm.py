"""te.norm and te.norm_backward (LayerNorm and RMSNorm) on the cpu target
against numpy references written from TE's kernels (te.norm's
description: f32 math, biased two-pass variance, gamma + 1 for
zero_centered_gamma, dgamma = sum(dz * xhat)), computed here in float64.
The reference's gradients are themselves checked by finite differences.

Tolerances: each output is rounded once from f32 to its element type, so
it may differ from the float64 value by half an ulp of that type relative
to itself (the unit roundoff: bf16 2^-8, f16 2^-11, f32 2^-24), plus what f32 arithmetic
loses in sums over a row or a column of at most 1000 elements, bounded
here by 2e-5 of the output's largest magnitude (the sums' error grows
with sqrt(n) ulps of f32 in practice; 2e-5 is n * 2^-24 for n = 335).
Backward dx subtracts nearly equal terms: its bound uses the largest of
them, |rsigma * dy|."""
import zlib

import ml_dtypes
import numpy as np
import pytest

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
HALF_ULP = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
F32_SUMS = 2e-5


def rounded(array, dtype):
    """`array` rounded to `dtype`, as float64."""
    return np.asarray(array).astype(DTYPES[dtype]).astype(np.float64)


def encode(array, dtype):
    """What te-run takes for a `dtype` argument: bf16 as raw bits."""
    value = np.asarray(array).astype(DTYPES[dtype])
    return value.view(np.uint16) if dtype == "bf16" else value


def ttype(shape, dtype):
    return "tensor<" + "".join(f"{n}x" for n in shape) + f"{dtype}>"


# --- the references ---------------------------------------------------------

def norm_reference(x, gamma, beta, kind, eps, zero_centered):
    """z, mu (layernorm), rsigma in float64."""
    g = gamma + (1.0 if zero_centered else 0.0)
    if kind == "layernorm":
        mu = x.mean(axis=-1)
        centered = x - mu[..., None]
        rsigma = 1.0 / np.sqrt((centered ** 2).mean(axis=-1) + eps)
        z = g * (rsigma[..., None] * centered)
        if beta is not None:
            z = z + beta
        return z, mu, rsigma
    rsigma = 1.0 / np.sqrt((x ** 2).mean(axis=-1) + eps)
    return g * (rsigma[..., None] * x), None, rsigma


def norm_backward_reference(dz, x, mu, rsigma, gamma, kind, zero_centered,
                            add=None):
    """dx, dgamma, dbeta (layernorm) in float64, as TE's kernels compute."""
    g = gamma + (1.0 if zero_centered else 0.0)
    centered = x - mu[..., None] if kind == "layernorm" else x
    xhat = rsigma[..., None] * centered
    dy = g * dz
    correction = (dy * xhat).mean(axis=-1, keepdims=True) * xhat
    if kind == "layernorm":
        correction = correction + dy.mean(axis=-1, keepdims=True)
    dx = rsigma[..., None] * (dy - correction)
    if add is not None:
        dx = dx + add
    rows = tuple(range(x.ndim - 1))
    dgamma = (dz * xhat).sum(axis=rows)
    dbeta = dz.sum(axis=rows) if kind == "layernorm" else None
    return dx, dgamma, dbeta


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("zero_centered", [False, True])
def test_reference_gradients_match_finite_differences(kind, zero_centered):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8))
    gamma = rng.standard_normal(8) * 0.5 + (0 if zero_centered else 1)
    beta = rng.standard_normal(8) if kind == "layernorm" else None
    w = rng.standard_normal((3, 8))
    eps = 1e-3

    def loss(x, gamma, beta):
        return (norm_reference(x, gamma, beta, kind, eps, zero_centered)[0]
                * w).sum()

    _, mu, rsigma = norm_reference(x, gamma, beta, kind, eps, zero_centered)
    mu = mu if mu is not None else np.zeros(3)
    dx, dgamma, dbeta = norm_backward_reference(w, x, mu, rsigma, gamma, kind,
                                                zero_centered)

    def numeric(array, f):
        grad = np.zeros_like(array)
        for i in np.ndindex(array.shape):
            step = np.zeros_like(array)
            step[i] = 1e-6
            grad[i] = (f(array + step) - f(array - step)) / 2e-6
        return grad

    np.testing.assert_allclose(numeric(x, lambda v: loss(v, gamma, beta)), dx,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(numeric(gamma, lambda v: loss(x, v, beta)),
                               dgamma, rtol=1e-6, atol=1e-7)
    if beta is not None:
        np.testing.assert_allclose(numeric(beta, lambda v: loss(x, gamma, v)),
                                   dbeta, rtol=1e-6, atol=1e-7)


def assert_close(got, want, dtype, scale=None, what=""):
    """|got - want| within half an ulp of `dtype` of |want| plus the f32
    sums' share of `scale` (default: the largest |want|)."""
    got = np.asarray(got, np.float64)
    scale = np.abs(want).max() if scale is None else scale
    bound = HALF_ULP[dtype] * np.abs(want) + F32_SUMS * scale + 1e-30
    error = np.abs(got - want)
    assert got.shape == want.shape, what
    assert (error <= bound).all(), (
        f"{what}: {(error > bound).sum()} of {error.size} outside the bound, "
        f"worst {float((error / bound).max()):.3g}x of it")


# --- the forward -------------------------------------------------------------

FORWARD_CASES = {
    # shape, input type, output type, beta, epsilon, zero-centered gamma
    "layernorm-bf16-3d": ("layernorm", (2, 33, 200), "bf16", "bf16", True, 1e-5, False),
    "layernorm-f32-no-beta-zc": ("layernorm", (7, 96), "f32", "f32", False, 1e-3, True),
    "layernorm-f32-to-bf16": ("layernorm", (5, 130), "f32", "bf16", True, 1e-5, False),
    "layernorm-f16-one-token": ("layernorm", (1, 64), "f16", "f16", True, 1e-5, True),
    "rmsnorm-bf16-zc": ("rmsnorm", (3, 1000), "bf16", "bf16", False, 1e-6, True),
    "rmsnorm-f32-to-f16": ("rmsnorm", (4, 2, 77), "f32", "f16", False, 1e-5, False),
    "rmsnorm-f16-odd": ("rmsnorm", (9, 17), "f16", "f16", False, 0.0, False),
    # Rows of whole vectors of 16 (the row kernel; the cases above with 96
    # and 64 too).
    "layernorm-bf16-3d-vectors": ("layernorm", (3, 11, 256), "bf16", "bf16", True, 1e-5, False),
    "rmsnorm-bf16-wide": ("rmsnorm", (37, 992), "bf16", "bf16", False, 1e-5, True),
    "layernorm-f32-to-f16-zc": ("layernorm", (2, 48), "f32", "f16", True, 1e-2, True),
}


def forward_program(te_run, kind, shape, dtype, out_dtype, beta, eps,
                    zero_centered):
    hidden, rows = shape[-1], shape[:-1]
    operands = [("x", ttype(shape, dtype)), ("g", ttype((hidden,), dtype))]
    if beta:
        operands.append(("b", ttype((hidden,), dtype)))
    results = [ttype(shape, out_dtype)] + [ttype(rows, "f32")] * (
        2 if kind == "layernorm" else 1)
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    return te_run.program(f"""
func.func @f({", ".join(f"%{n}: {t}" for n, t in operands)}) -> ({", ".join(results)}) {{
  {names} = te.norm {", ".join(f"%{n}" for n, _ in operands)} kind {kind} epsilon {eps:.9e}{" zero_centered_gamma" if zero_centered else ""}
      : {", ".join(t for _, t in operands)} -> {", ".join(results)}
  return {names} : {", ".join(results)}
}}
""")


def forward_inputs(rng, shape, dtype, beta, zero_centered):
    hidden = shape[-1]
    # An offset and a spread per row, as activations have.
    x = (rng.standard_normal(shape) * rng.uniform(0.5, 4, shape[:-1] + (1,))
         + rng.uniform(-2, 2, shape[:-1] + (1,)))
    gamma = rng.standard_normal(hidden) * 0.2 + (0.0 if zero_centered else 1.0)
    b = rng.standard_normal(hidden) * 0.5 if beta else None
    return (rounded(x, dtype), rounded(gamma, dtype),
            None if b is None else rounded(b, dtype))


@pytest.mark.parametrize("case", FORWARD_CASES)
def test_forward(te_run, case):
    kind, shape, dtype, out_dtype, beta, eps, zero_centered = FORWARD_CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    x, gamma, b = forward_inputs(rng, shape, dtype, beta, zero_centered)
    program = forward_program(te_run, kind, shape, dtype, out_dtype, beta, eps,
                              zero_centered)
    inputs = [encode(x, dtype), encode(gamma, dtype)] + (
        [encode(b, dtype)] if b is not None else [])
    results = te_run.run_kernel(program, inputs, outputs_f32=True)
    z, mu, rsigma = norm_reference(x, gamma, b, kind, eps, zero_centered)
    assert_close(results[0], z, out_dtype, what="z")
    assert_close(results[-1], rsigma, "f32", what="rsigma")
    if kind == "layernorm":
        assert len(results) == 3
        # The mean's error is that of its sum, relative to the row's scale.
        assert_close(results[1], mu, "f32", scale=np.abs(x).max(), what="mu")


def test_forward_nan_stays_in_its_row(te_run):
    rng = np.random.default_rng(5)
    x, gamma, b = forward_inputs(rng, (4, 32), "f32", True, False)
    x[2, 7] = np.nan
    program = forward_program(te_run, "layernorm", (4, 32), "f32", "f32", True,
                              1e-5, False)
    z, mu, rsigma = te_run.run_kernel(program, [x.astype(np.float32),
                                                gamma.astype(np.float32),
                                                b.astype(np.float32)])
    assert np.isnan(z[2]).all() and np.isnan(mu[2]) and np.isnan(rsigma[2])
    clean = [0, 1, 3]
    want, _, _ = norm_reference(x[clean], gamma, b, "layernorm", 1e-5, False)
    assert_close(z[clean], want, "f32", what="z of the other rows")


@pytest.mark.parametrize("hidden", [40, 48])
def test_constant_rows_give_beta(te_run, hidden):
    """A row with no variance: rsigma = 1/sqrt(epsilon), z = beta."""
    x = np.full((3, hidden), 2.5, np.float32)
    gamma = np.linspace(0.5, 1.5, hidden).astype(np.float32)
    b = np.linspace(-1, 1, hidden).astype(np.float32)
    program = forward_program(te_run, "layernorm", (3, hidden), "f32", "f32",
                              True, 1e-5, False)
    z, mu, rsigma = te_run.run_kernel(program, [x, gamma, b])
    np.testing.assert_array_equal(z, np.broadcast_to(b, (3, hidden)))
    np.testing.assert_array_equal(mu, np.full(3, 2.5, np.float32))
    np.testing.assert_allclose(rsigma, 1 / np.sqrt(1e-5), rtol=1e-6)


# --- the backward ------------------------------------------------------------

BACKWARD_CASES = {
    # kind, shape, input type, gamma type, zero-centered gamma, add
    "layernorm-bf16": ("layernorm", (6, 200), "bf16", "bf16", False, False),
    "layernorm-f32-input-bf16-gamma-zc": ("layernorm", (2, 5, 96), "f32", "bf16", True, False),
    "layernorm-f32": ("layernorm", (33, 64), "f32", "f32", False, False),
    "rmsnorm-f16-add": ("rmsnorm", (9, 130), "f16", "f16", False, True),
    "rmsnorm-f32-zc-add": ("rmsnorm", (4, 1000), "f32", "f32", True, True),
    "rmsnorm-bf16-one-token": ("rmsnorm", (1, 48), "bf16", "bf16", False, False),
    # Rows of whole vectors of 16 (the row kernel; 96, 64 and 48 above
    # too): blocks of one row (37 rows) and of five (400 rows).
    "rmsnorm-bf16-add-vectors": ("rmsnorm", (37, 128), "bf16", "bf16", True, True),
    "layernorm-bf16-blocks": ("layernorm", (2, 200, 64), "bf16", "bf16", False, False),
    "layernorm-f16-zc-blocks": ("layernorm", (400, 32), "f16", "f16", True, False),
}


@pytest.mark.parametrize("case", BACKWARD_CASES)
def test_backward(te_run, case):
    kind, shape, dtype, wtype, zero_centered, with_add = BACKWARD_CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    hidden, rows = shape[-1], shape[:-1]
    x, gamma, _ = forward_inputs(rng, shape, dtype, False, zero_centered)
    gamma = rounded(gamma, wtype)
    dz = rounded(rng.standard_normal(shape), wtype)
    add = rounded(rng.standard_normal(shape), wtype) if with_add else None
    _, mu, rsigma = norm_reference(x, gamma, None, kind, 1e-5, zero_centered)
    # The statistics as the forward hands them over: f32.
    rsigma = rsigma.astype(np.float32).astype(np.float64)
    mu = None if mu is None else mu.astype(np.float32).astype(np.float64)

    operands = [("dz", ttype(shape, wtype)), ("x", ttype(shape, dtype)),
                ("rs", ttype(rows, "f32")), ("g", ttype((hidden,), wtype))]
    inputs = [encode(dz, wtype), encode(x, dtype), rsigma.astype(np.float32),
              encode(gamma, wtype)]
    clauses = ""
    if mu is not None:
        operands.append(("mu", ttype(rows, "f32")))
        inputs.append(mu.astype(np.float32))
        clauses += " mean(%mu)"
    if add is not None:
        operands.append(("a", ttype(shape, wtype)))
        inputs.append(encode(add, wtype))
        clauses += " add(%a)"
    results = [ttype(shape, dtype), ttype((hidden,), wtype)] + (
        [ttype((hidden,), wtype)] if kind == "layernorm" else [])
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    program = te_run.program(f"""
func.func @f({", ".join(f"%{n}: {t}" for n, t in operands)}) -> ({", ".join(results)}) {{
  {names} = te.norm_backward %dz, %x, %rs, %g{clauses} kind {kind}{" zero_centered_gamma" if zero_centered else ""}
      : {", ".join(t for _, t in operands)} -> {", ".join(results)}
  return {names} : {", ".join(results)}
}}
""")
    got = te_run.run_kernel(program, inputs, outputs_f32=True)
    dx, dgamma, dbeta = norm_backward_reference(
        dz, x, mu if mu is not None else np.zeros(rows), rsigma, gamma, kind,
        zero_centered, add)
    g = gamma + (1.0 if zero_centered else 0.0)
    largest_term = np.abs(rsigma[..., None] * g * dz).max()
    assert_close(got[0], dx, dtype,
                 scale=largest_term + (np.abs(add).max() if with_add else 0),
                 what="dx")
    assert_close(got[1], dgamma, wtype,
                 scale=np.abs(dz).sum(axis=tuple(range(len(rows)))).max() * 4,
                 what="dgamma")
    if kind == "layernorm":
        assert len(got) == 3
        assert_close(got[2], dbeta, wtype,
                     scale=np.abs(dz).sum(axis=tuple(range(len(rows)))).max(),
                     what="dbeta")
    else:
        assert len(got) == 2


def test_no_rows(te_run):
    """Zero rows (an empty micro-batch, sliced inside the program): nothing
    to normalize, and gradients of gamma and beta that are sums over no
    rows: 0."""
    program = te_run.program("""
func.func @f(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %dz: tensor<4x16xf32>, %rs: tensor<4xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %xs = tensor.extract_slice %x[0, 0] [0, 16] [1, 1] : tensor<4x16xf32> to tensor<0x16xf32>
  %ds = tensor.extract_slice %dz[0, 0] [0, 16] [1, 1] : tensor<4x16xf32> to tensor<0x16xf32>
  %rss = tensor.extract_slice %rs[0] [0] [1] : tensor<4xf32> to tensor<0xf32>
  %z, %r = te.norm %xs, %g kind rmsnorm epsilon 1.0e-05 : tensor<0x16xf32>, tensor<16xf32> -> tensor<0x16xf32>, tensor<0xf32>
  %dx, %dg, %db = te.norm_backward %ds, %xs, %rss, %g mean(%rss) kind layernorm : tensor<0x16xf32>, tensor<0x16xf32>, tensor<0xf32>, tensor<16xf32>, tensor<0xf32> -> tensor<0x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %dg, %db : tensor<16xf32>, tensor<16xf32>
}
""")
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(s).astype(np.float32)
              for s in ((4, 16), (16,), (4, 16), (4,))]
    dgamma, dbeta = te_run.run_kernel(program, inputs)
    np.testing.assert_array_equal(dgamma, np.zeros(16, np.float32))
    np.testing.assert_array_equal(dbeta, np.zeros(16, np.float32))


def test_norms_lower_natively_on_the_cuda_target(te_run):
    """The cuda target generates the norms' kernels itself: --explain (which
    runs nothing and needs no GPU) names its native lowering; the kernels'
    values are checked on a GPU by scripts/gpu-check.sh
    (bench/gpu/norms.mlir)."""
    program = forward_program(te_run, "rmsnorm", (4, 64), "bf16", "bf16",
                              False, 1e-5, False)
    out = te_run(program, "--explain", "--backend", "cuda")
    assert "te.norm" in out.stdout and "cuda (native)" in out.stdout
