"""te.scaled_matmul in every precision, scaling mode and epilogue against a
float64 reference written from TE's semantics (docs/TEDialect.md).

The reference follows TE's GEMM (common/gemm/cublaslt_gemm.cu and TE's
blockwise GEMM reference): per_tensor operands scale the whole product by
a_scale_inv * b_scale_inv; MXFP8 and block-scaled operands scale each
K block's partial product by its row and column scales before the blocks
are summed. The kernels accumulate in f32; products of two bf16, f16 or
FP8 values are exact in f32, so the error bound is f32 summation error,
K * 2^-24 relative to the sum of |products| (with f32 operands, one more
rounding per product), plus the final rounding of the output type.
"""
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from fp8_reference import FORMATS, cast_fp8
from host_cpu import X86, host_flags, skip_unless_runs_here

HIGH = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
# Relative rounding of each output type (half an ulp, and a little).
ROUNDING = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
BLOCK = {"mxfp8_1x32": 32, "block_1x128": 128, "block_128x128": 128}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def dgelu(x):
    t = np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * np.sqrt(2 / np.pi) * (
        1 + 3 * 0.044715 * x * x)


def tensor_type(shape, elem):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


class Operand:
    """One GEMM operand: op(X) as float64 [rows, K] values (before its
    scales), how it is stored, and its scales."""

    def __init__(self, rng, rows, k, elem, mode, transposed, magnitude=4.0):
        self.elem, self.mode, self.k = elem, mode, k
        # kDim is the stored dimension that is K: op(A) = A^T stores A [K, M].
        self.transposed = transposed
        values = rng.standard_normal((rows, k)) * magnitude
        if elem in FORMATS:
            self.fp8 = cast_fp8(values, elem)
            self.values = self.fp8.astype(np.float64)
        else:
            self.values = values.astype(HIGH[elem]).astype(np.float64)
        self.scale = None
        if mode == "per_tensor":
            self.scale = np.float32(rng.uniform(0.1, 2.0))
        elif mode == "mxfp8_1x32":
            self.scale = rng.integers(120, 134, (rows, k // 32)).astype(np.uint8)
        elif mode == "block_1x128":
            self.scale = rng.uniform(0.25, 2.0, (rows, -(-k // 128))).astype(np.float32)
        elif mode == "block_128x128":
            self.scale = rng.uniform(0.25, 2.0, (-(-rows // 128), -(-k // 128))).astype(
                np.float32)

    def stored_shape(self):
        rows, k = self.values.shape
        return (k, rows) if self.transposed else (rows, k)

    def stored(self):
        """The stored operand, as te-run takes it."""
        if self.elem in FORMATS:
            data = self.fp8.view(np.uint8)
        elif self.elem == "bf16":
            data = self.values.astype(ml_dtypes.bfloat16).view(np.uint16)
        else:
            data = self.values.astype(HIGH[self.elem])
        return np.ascontiguousarray(data.T if self.transposed else data)

    def scale_input(self):
        """The scale tensor in the stored layout (scales run along K)."""
        if self.mode == "per_tensor":
            return np.array(self.scale)
        return np.ascontiguousarray(self.scale.T if self.transposed else self.scale)

    def scale_type(self):
        if self.mode == "per_tensor":
            return "tensor<f32>"
        shape = self.scale.T.shape if self.transposed else self.scale.shape
        return tensor_type(shape, "f8E8M0FNU" if self.mode == "mxfp8_1x32" else "f32")

    def row_scales(self, block):
        """f64 [rows, K blocks] scale of each row's K block `block` wide."""
        if self.mode == "mxfp8_1x32":
            return 2.0 ** (self.scale.astype(np.float64) - 127)
        if self.mode == "block_1x128":
            return self.scale.astype(np.float64)
        if self.mode == "block_128x128":
            return np.repeat(self.scale.astype(np.float64), 128, axis=0)[: len(self.values)]
        raise AssertionError(self.mode)

    def dequantized(self):
        """op(X) with its scales applied, element by element (f64)."""
        if self.mode is None:
            return self.values
        if self.mode == "per_tensor":
            return self.values * np.float64(self.scale)
        block = BLOCK[self.mode]
        return self.values * np.repeat(self.row_scales(block), block, axis=1)[:, : self.k]


def product(a, b):
    """op(A) x op(B) as TE computes it: per_tensor (and unscaled) operands
    scale the whole sum; block-scaled ones each K block's partial sum."""
    if a.mode in (None, "per_tensor"):
        exact = a.values @ b.values.T
        if a.mode == "per_tensor":
            exact = exact * (np.float64(a.scale) * np.float64(b.scale))
        return exact
    block = BLOCK[a.mode]
    sa, sb = a.row_scales(block), b.row_scales(block)
    exact = np.zeros((len(a.values), len(b.values)))
    for kb in range(-(-a.k // block)):
        part = slice(kb * block, (kb + 1) * block)
        partial = a.values[:, part] @ b.values[:, part].T
        exact += partial * sa[:, kb][:, None] * sb[:, kb][None, :]
    return exact


def gemm_case(te_run, *, m, n, k, a_elem="bf16", b_elem=None, modes=(None, None),
              ta=False, tb=True, out="bf16", bias=None, gelu_on=False, pre_gelu=None,
              dgelu_in=None, bias_grad=None, accumulate=False, seed=0, env=None,
              poison=None):
    """Builds, runs and checks one te.scaled_matmul. `b` is stored [N, K]
    under tb (TE's TN forward), [K, N] otherwise; Operand keeps op(B)^T
    [N, K] values."""
    rng = np.random.default_rng(seed)
    b_elem = b_elem or a_elem
    a = Operand(rng, m, k, a_elem, modes[0], ta)
    b = Operand(rng, n, k, b_elem, modes[1], not tb)
    if poison:
        poison(a)
    args, types, inputs = [], [], []

    def add(name, value, type_text):
        args.append(f"%{name}: {type_text}")
        types.append(type_text)
        inputs.append(value)

    add("a", a.stored(), tensor_type(a.stored_shape(), a_elem))
    add("b", b.stored(), tensor_type(b.stored_shape(), b_elem))
    clauses = ""
    if modes[0]:
        add("sa", a.scale_input(), a.scale_type())
        add("sb", b.scale_input(), b.scale_type())
        clauses += " scales(%sa, %sb)"
        if modes != ("per_tensor", "per_tensor"):
            clauses += f" scaling {modes[0]}, {modes[1]}"
    exact = product(a, b)
    fp8_out = out in FORMATS
    if bias:
        bias_v = rng.standard_normal(n).astype(HIGH[bias])
        add("bias", bias_v.view(np.uint16) if bias == "bf16" else bias_v,
            tensor_type((n,), bias))
        clauses += " bias(%bias)"
    if dgelu_in:
        pre_in = (rng.standard_normal((m, n)) * 2).astype(HIGH[dgelu_in])
        add("pre", pre_in.view(np.uint16) if dgelu_in == "bf16" else pre_in,
            tensor_type((m, n), dgelu_in))
        clauses += " dgelu(%pre)"
    if accumulate:
        c_v = (rng.standard_normal((m, n)) * 8).astype(HIGH[out])
        add("c", c_v.view(np.uint16) if out == "bf16" else c_v, tensor_type((m, n), out))
        clauses += " accumulate(%c)"
    if fp8_out:
        so = np.float32(0.25)
        add("so", np.array(so), "tensor<f32>")
        clauses += " out_scale(%so)"
    flags = "".join(f" {f}" for f, on in (("transpose_a", ta), ("transpose_b", tb),
                                          ("gelu", gelu_on), ("pre_gelu", pre_gelu),
                                          ("bias_grad", bias_grad)) if on)
    results = [tensor_type((m, n), out)]
    if fp8_out:
        results.append("tensor<f32>")
    if pre_gelu:
        results.append(tensor_type((m, n), pre_gelu))
    if bias_grad:
        results.append(tensor_type((n,) if dgelu_in else (m,), bias_grad))
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    text = f"""
func.func @gemm({", ".join(args)}) -> ({", ".join(results)}) {{
  {names} = te.scaled_matmul %a, %b{clauses}{flags}
      : {", ".join(types)} -> {", ".join(results)}
  return {names} : {", ".join(results)}
}}"""
    if env:
        te_run.env.update(env)
    got = te_run.run_kernel(te_run.program(text), inputs, outputs_f32=not fp8_out)

    # The f32 summation bound on the product, from the dequantized operands.
    bound = k * 2.0 ** -24 * (np.abs(a.dequantized()) @ np.abs(b.dequantized()).T)
    if a_elem == "f32":
        bound *= 2
    value = exact
    if accumulate:
        value = value + c_v.astype(np.float64)
    if bias:
        value = value + bias_v.astype(np.float64)
    pre = value
    # GELU and its derivative are computed in f32 (exp as a polynomial):
    # an absolute error of a few f32 ulps of their inputs' scale, which the
    # derivative's cancellation (0.5 (1 + t) against a negative term, for
    # inputs near -2.5) makes large relative to small slopes.
    if gelu_on:
        # gelu's slope is at most ~1.13.
        value, bound = gelu(value), bound * 1.2 + 2e-6 * np.abs(value)
    if dgelu_in:
        slope = dgelu(pre_in.astype(np.float64))
        value, bound = value * slope, bound * np.abs(slope) + 2e-6 * np.abs(pre)
    bound = bound + 1e-6
    if poison:
        return got, value
    outputs = list(got)
    d = outputs.pop(0)
    if fp8_out:
        amax = outputs.pop(0)
        assert np.isclose(amax, np.abs(value).max(), rtol=1e-5)
        want = cast_fp8(value * np.float64(so), out).astype(np.float64)
        got_d = d.view(FORMATS[out][0]).astype(np.float64)
        # One FP8 rounding of a value within the bound: at most one step.
        step = np.abs(want) * 2.0 ** -3 + 2.0 ** -9
        assert np.all(np.abs(got_d - want) <= step + bound * np.float64(so))
    else:
        err = np.abs(d.astype(np.float64) - value)
        limit = bound + np.abs(value) * ROUNDING[out]
        at = np.unravel_index(np.argmax(err - limit), err.shape)
        assert np.all(err <= limit), (
            f"error {err[at]} > {limit[at]} at {at}: got {d[at]}, want {value[at]}")
    if pre_gelu:
        got_pre = outputs.pop(0)
        assert np.all(np.abs(got_pre - pre) <= k * 2.0 ** -24 * (
            np.abs(a.dequantized()) @ np.abs(b.dequantized()).T) * 2 + np.abs(pre) * ROUNDING[pre_gelu] + 1e-6)
    if bias_grad:
        got_db = outputs.pop(0)
        if dgelu_in:
            # DGELU_BGRAD: the column sums of D.
            want_db = value.sum(axis=0)
            db_bound = np.abs(limit if not fp8_out else bound).sum(axis=0) + m * 2.0 ** -24 * np.abs(value).sum(axis=0)
        else:
            # BGRADB: the row sums of op(A), dequantized.
            want_db = a.dequantized().sum(axis=1)
            db_bound = k * 2.0 ** -24 * np.abs(a.dequantized()).sum(axis=1)
        assert np.all(np.abs(got_db - want_db) <= db_bound + np.abs(want_db) * ROUNDING[bias_grad] + 1e-6)
    return got, value


# --- precisions and layouts --------------------------------------------------

@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("elem,out", [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"),
                                      ("f32", "f32")])
def test_high_precision(te_run, elem, out, ta, tb):
    """M, N and K are not multiples of the micro-kernel's rows, columns or
    K step (odd K: the bf16 pairs end in padding)."""
    gemm_case(te_run, m=37, n=70, k=45, a_elem=elem, out=out, ta=ta, tb=tb)


@pytest.mark.parametrize("a_elem,b_elem,out", [
    ("f8E4M3FN", "f8E4M3FN", "bf16"), ("f8E4M3FN", "f8E5M2", "f32"),
    ("f8E5M2", "f8E4M3FN", "f16"), ("f8E4M3FN", "f8E4M3FN", "f8E4M3FN")])
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False)])
def test_per_tensor(te_run, a_elem, b_elem, out, ta, tb):
    gemm_case(te_run, m=29, n=50, k=77, a_elem=a_elem, b_elem=b_elem,
              modes=("per_tensor", "per_tensor"), out=out, ta=ta, tb=tb)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_mxfp8(te_run, ta, tb):
    """E8M0 scales per 32 elements along K, wherever K is stored."""
    gemm_case(te_run, m=33, n=40, k=96, a_elem="f8E4M3FN", b_elem="f8E5M2",
              modes=("mxfp8_1x32", "mxfp8_1x32"), out="f32", ta=ta, tb=tb, seed=3)


@pytest.mark.parametrize("modes", [("block_1x128", "block_1x128"),
                                   ("block_1x128", "block_128x128"),
                                   ("block_128x128", "block_1x128")])
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False)])
def test_block_scaling(te_run, modes, ta, tb):
    """f32 scales that are not powers of two, so that a scale applied to
    the wrong block, or after the sum, shows; K = 300 ends in a partial
    block, M and N in partial 128 x 128 blocks."""
    gemm_case(te_run, m=150, n=140, k=300, a_elem="f8E4M3FN", modes=modes, out="f32",
              ta=ta, tb=tb, seed=4)


# --- epilogues ---------------------------------------------------------------

@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)),
                                        ("f8E4M3FN", ("per_tensor", "per_tensor")),
                                        ("f8E4M3FN", ("mxfp8_1x32", "mxfp8_1x32"))])
def test_gelu_with_pre_gelu(te_run, elem, modes):
    """TE's GELU_AUX_BIAS: D = gelu(P + bias) and the values before it."""
    gemm_case(te_run, m=20, n=36, k=64, a_elem=elem, modes=modes, bias="bf16",
              gelu_on=True, pre_gelu="f32")


@pytest.mark.parametrize("out", ["bf16", "f32"])
@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)),
                                        ("f8E5M2", ("per_tensor", "per_tensor")),
                                        ("f8E4M3FN", ("block_1x128", "block_128x128"))])
def test_dgelu(te_run, elem, modes, out):
    """TE's DGELU: D = P * gelu'(pre_gelu); also DGELU_BGRAD's column sums
    where TE offers them (not with block scaling)."""
    block = modes[0] and modes[0].startswith("block")
    b_elem = "f8E4M3FN" if elem == "f8E5M2" else None
    gemm_case(te_run, m=24, n=40, k=160, a_elem=elem, b_elem=b_elem, modes=modes,
              dgelu_in="bf16", bias_grad=None if block else "f32", out=out)


@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)), ("f32", (None, None)),
                                        ("f8E4M3FN", ("mxfp8_1x32", "mxfp8_1x32"))])
def test_wgrad_accumulate_bgradb(te_run, elem, modes):
    """The wgrad GEMM as TE runs it: dW = dY^T X added to main_grad
    (accumulate, f32), with BGRADB's bias gradient, the sum of dY over the
    tokens (row sums of op(A))."""
    gemm_case(te_run, m=24, n=40, k=64, a_elem=elem, modes=modes, ta=True, tb=False,
              out="f32", accumulate=True, bias_grad="f32")


def test_accumulate_then_bias_gelu(te_run):
    """The epilogue acts on alpha * AB + C, as cuBLASLt's does."""
    gemm_case(te_run, m=16, n=48, k=40, a_elem="f16", out="f16", accumulate=True,
              bias="f16", gelu_on=True)


def test_bias_f32_fp8(te_run):
    gemm_case(te_run, m=40, n=33, k=50, a_elem="f8E4M3FN",
              modes=("per_tensor", "per_tensor"), bias="f32", out="f32")


# --- special values ----------------------------------------------------------

@pytest.mark.parametrize("elem", ["bf16", "f32"])
def test_nan_and_inf_propagate(te_run, elem):
    """A NaN in op(A) row 0 makes that row of D NaN; an inf in row 1 makes
    it non-finite wherever op(B)'s matching row is not zero; other rows
    stay finite and correct."""
    def poison(a):
        a.values[0, 3] = np.nan
        a.values[1, 2] = np.inf
    got, value = gemm_case(te_run, m=30, n=34, k=20, a_elem=elem, out="f32",
                           poison=poison)
    d = got[0]
    assert np.all(np.isnan(d[0]))
    assert not np.any(np.isfinite(d[1]))
    assert np.all(np.isfinite(d[2:]))
    np.testing.assert_allclose(d[2:], value[2:], rtol=1e-2, atol=1e-2)


# --- every micro-kernel on every host ----------------------------------------

# TE_CPU_ARCH values that force the fallbacks on any x86 host: AVX-512
# without BF16 (f32 FMAs on 16 lanes) and AVX2 (8 lanes).
FALLBACKS = {"fma16": "x86-64-v4", "fma8": "x86-64-v3"}


@pytest.mark.skipif(not X86, reason="TE_CPU_ARCH names here are x86's")
@pytest.mark.parametrize("path", FALLBACKS)
@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)),
                                        ("f8E4M3FN", ("per_tensor", "per_tensor")),
                                        ("f8E4M3FN", ("block_1x128", "block_128x128"))])
def test_fallback_micro_kernels(te_run, path, elem, modes):
    skip_unless_runs_here(FALLBACKS[path])
    gemm_case(te_run, m=37, n=70, k=300 if modes[0] == "block_1x128" else 45,
              a_elem=elem, modes=modes, out="f32", env={"TE_CPU_ARCH": FALLBACKS[path]})


def gemm_program(te_run, elem):
    t = tensor_type((64, 64), elem)
    if elem in HIGH:
        sig, operands, types = f"%a: {t}, %b: {t}", "%a, %b", f"{t}, {t}"
    else:
        sig = f"%a: {t}, %b: {t}, %sa: tensor<f32>, %sb: tensor<f32>"
        operands = "%a, %b scales(%sa, %sb)"
        types = f"{t}, {t}, tensor<f32>, tensor<f32>"
    return te_run.program(
        f"func.func @g({sig}) -> tensor<64x64xf32> {{\n"
        f"  %d = te.scaled_matmul {operands} transpose_b : {types}"
        f" -> tensor<64x64xf32>\n"
        f"  return %d : tensor<64x64xf32>\n}}\n")


@pytest.mark.skipif(not X86, reason="x86 instructions")
def test_kernels_hold_their_micro_kernel(te_run):
    """vdpbf16ps for bf16 and FP8 operands where the processor has
    AVX512-BF16 (znver4, compiled not run); 512-bit FMAs on x86-64-v4 and
    256-bit ones on x86-64-v3; f32 operands never take pair dots."""
    def asm(elem, arch):
        out = te_run.tmp / f"g-{elem}-{arch}.s"
        te_run(gemm_program(te_run, elem), "--emit=asm", "-o", out,
               env={"TE_CPU_ARCH": arch})
        return out.read_text()
    dot = re.compile(r"\bvdpbf16ps\b")
    for elem in ("bf16", "f8E4M3FN"):
        assert dot.search(asm(elem, "znver4")), elem
        assert not dot.search(asm(elem, "x86-64-v4")), elem
    assert not dot.search(asm("f32", "znver4"))
    assert re.search(r"vfmadd\w+\s+%zmm", asm("f32", "x86-64-v4"))
    v3 = asm("f32", "x86-64-v3")
    assert re.search(r"vfmadd\w+\s+%ymm", v3) and not re.search(r"%zmm", v3)


# --- AMX tiles ----------------------------------------------------------------
# The tile micro-kernel (bf16 and FP8 operands where the host has AMX-BF16)
# runs on any x86-64 host under TE_CPU_AMX=emulate, where LLVM lowers the
# tile instructions to scalar loops: the same packing, tile shapes and
# strides as on AMX, computed without it. The same cases run on the
# hardware where the host has it.

HOST_AMX = X86 and {"amx_tile", "amx_bf16"} <= host_flags()
TILE_CASES = {
    "bf16-odd": dict(m=37, n=70, k=45),
    # K of 19 tile steps: three chunks of 7 steps, the last partly padding.
    "bf16-chunks": dict(m=70, n=40, k=600, out="f32"),
    # op(A) stored [K, M]: packed element by element.
    "bf16-transposed": dict(m=40, n=33, k=70, ta=True, tb=False),
    "fp8-per-tensor": dict(m=33, n=65, k=96, a_elem="f8E4M3FN", b_elem="f8E5M2",
                           modes=("per_tensor", "per_tensor")),
    "mxfp8": dict(m=33, n=40, k=96, a_elem="f8E4M3FN",
                  modes=("mxfp8_1x32", "mxfp8_1x32"), tb=False),
    "block": dict(m=37, n=70, k=300, a_elem="f8E4M3FN",
                  modes=("block_1x128", "block_128x128")),
    "gelu-accumulate": dict(m=20, n=48, k=64, out="f32", bias="f32", accumulate=True,
                            gelu_on=True),
}


@pytest.mark.skipif(not X86, reason="AMX is x86's")
@pytest.mark.parametrize("name", TILE_CASES)
def test_tile_micro_kernel_emulated(te_run, name):
    gemm_case(te_run, **TILE_CASES[name], env={"TE_CPU_AMX": "emulate"})


@pytest.mark.skipif(not HOST_AMX, reason="the host has no AMX-BF16 tiles")
@pytest.mark.parametrize("name", TILE_CASES)
def test_tile_micro_kernel_on_the_host(te_run, name):
    gemm_case(te_run, **TILE_CASES[name])


@pytest.mark.skipif(not X86, reason="x86 instructions")
def test_tile_kernels_compile_for_amx(te_run):
    """For a processor with AMX-BF16 (sapphirerapids, compiled not run),
    bf16 and FP8 GEMMs hold tdpbf16ps and the tile configuration; f32 ones
    do not; TE_CPU_AMX=off leaves the pair dots."""
    def asm(elem, env):
        out = te_run.tmp / f"t-{elem}-{len(env)}.s"
        te_run(gemm_program(te_run, elem), "--emit=asm", "-o", out,
               env={"TE_CPU_ARCH": "sapphirerapids", **env})
        return out.read_text()
    for elem in ("bf16", "f8E4M3FN"):
        text = asm(elem, {})
        assert re.search(r"\btdpbf16ps\b", text) and re.search(r"\bldtilecfg\b", text), elem
        off = asm(elem, {"TE_CPU_AMX": "off"})
        assert not re.search(r"\btdpbf16ps\b", off) and re.search(r"\bvdpbf16ps\b", off)
    assert not re.search(r"\btdpbf16ps\b", asm("f32", {}))


@pytest.mark.skipif(not X86, reason="AMX is x86's")
def test_explain_names_the_tiles(te_run):
    program = gemm_program(te_run, "bf16")
    tiles = "amx-bf16 tiles, 32x32 micro-kernel (2x2 tiles of 16x16 f32)"
    assert tiles in te_run(program, "--explain", env={"TE_CPU_AMX": "emulate"}).stdout
    off = te_run(program, "--explain",
                 env={"TE_CPU_AMX": "off", "TE_CPU_ARCH": "sapphirerapids"}).stdout
    assert "AMX tiles are not used: TE_CPU_AMX=off" in off and tiles not in off
    f32 = te_run(gemm_program(te_run, "f32"), "--explain",
                 env={"TE_CPU_AMX": "emulate"}).stdout
    assert "f32 operands, which bf16 tiles would round" in f32


def test_bad_amx_setting_is_an_error(te_run):
    proc = te_run(gemm_program(te_run, "bf16"), "--random-inputs", check=False,
                  env={"TE_CPU_AMX": "yes"})
    assert proc.returncode != 0
    assert "TE_CPU_AMX=yes is not a setting it takes" in proc.stderr


# --- the reference decomposition ---------------------------------------------

CHECK_PROGRAMS = {
    "block-bias": ("%a: tensor<64x200xf8E4M3FN>, %b: tensor<70x200xf8E4M3FN>, "
                   "%sa: tensor<64x2xf32>, %sb: tensor<1x2xf32>, %bias: tensor<70xbf16>",
                   "scales(%sa, %sb) scaling block_1x128, block_128x128 bias(%bias) transpose_b",
                   "tensor<64x200xf8E4M3FN>, tensor<70x200xf8E4M3FN>, tensor<64x2xf32>, "
                   "tensor<1x2xf32>, tensor<70xbf16>", "tensor<64x70xbf16>"),
    "wgrad": ("%a: tensor<96x40xbf16>, %b: tensor<96x30xbf16>, %c: tensor<40x30xf32>",
              "accumulate(%c) transpose_a bias_grad",
              "tensor<96x40xbf16>, tensor<96x30xbf16>, tensor<40x30xf32>",
              "tensor<40x30xf32>, tensor<40xbf16>"),
    "mxfp8-dgelu": ("%a: tensor<33x64xf8E4M3FN>, %b: tensor<64x20xf8E5M2>, "
                    "%sa: tensor<33x2xf8E8M0FNU>, %sb: tensor<2x20xf8E8M0FNU>, "
                    "%pre: tensor<33x20xbf16>",
                    "scales(%sa, %sb) scaling mxfp8_1x32, mxfp8_1x32 dgelu(%pre) bias_grad",
                    "tensor<33x64xf8E4M3FN>, tensor<64x20xf8E5M2>, tensor<33x2xf8E8M0FNU>, "
                    "tensor<2x20xf8E8M0FNU>, tensor<33x20xbf16>",
                    "tensor<33x20xbf16>, tensor<20xf32>"),
    "fp8-out-gelu": ("%a: tensor<16x32xf8E4M3FN>, %b: tensor<8x32xf8E4M3FN>, "
                     "%sa: tensor<f32>, %sb: tensor<f32>, %so: tensor<f32>",
                     "scales(%sa, %sb) out_scale(%so) transpose_b gelu pre_gelu",
                     "tensor<16x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, "
                     "tensor<f32>, tensor<f32>",
                     "tensor<16x8xf8E4M3FN>, tensor<f32>, tensor<16x8xbf16>"),
    "f16-odd": ("%a: tensor<37x45xf16>, %b: tensor<45x70xf16>", "",
                "tensor<37x45xf16>, tensor<45x70xf16>", "tensor<37x70xf16>"),
}


@pytest.mark.parametrize("name", CHECK_PROGRAMS)
def test_reference_decomposition_agrees(te_run, name):
    """te-run --check compares the GEMM with te-decompose-reference's
    dense contraction of the dequantized operands, written apart from it."""
    args, clauses, types, results = CHECK_PROGRAMS[name]
    count = len(results.split("tensor<")) - 1
    names = ", ".join(f"%r{i}" for i in range(count))
    text = (f"func.func @g({args}) -> ({results}) {{\n"
            f"  {names} = te.scaled_matmul %a, %b {clauses} : {types} -> {results}\n"
            f"  return {names} : {results}\n}}\n")
    proc = te_run(te_run.program(text), "--random-inputs", "--check")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("check ")]
    assert len(lines) == count and all(line.endswith(": ok") for line in lines), proc.stdout


def test_mxfp8_linear_example(te_run):
    """examples/mxfp8_linear_gemms.mlir (a Linear layer's fprop, dgrad and
    wgrad under MXFP8, each on the copies whose scales run along its K)
    runs and agrees with the reference decomposition."""
    example = Path(__file__).resolve().parents[2] / "examples" / "mxfp8_linear_gemms.mlir"
    proc = te_run(example, "--random-inputs", "--check")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("check ")]
    assert len(lines) == 4 and all(line.endswith(": ok") for line in lines), proc.stdout
