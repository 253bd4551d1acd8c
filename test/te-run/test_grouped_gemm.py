"""te.grouped_matmul (TE's grouped GEMM, GroupedLinear's forward and input
gradient) in every precision and scaling mode against a float64 reference
built group by group from test_gemm's single-GEMM reference: group g's rows
of A times op(B[g]), each group with its own scales, concatenated.

Error bound as test_gemm's: f32 summation error, K * 2^-24 relative to the
sum of |products|, plus the output's rounding."""
import numpy as np
import pytest

from host_cpu import X86, skip_unless_runs_here
from test_gemm import HIGH, ROUNDING, Operand, product, tensor_type


def stored(value, elem):
    return value.view(np.uint16) if elem == "bf16" else value


def grouped_case(te_run, *, splits, n, k, a_elem="bf16", b_elem=None,
                 modes=(None, None), tb=True, out="bf16", bias=None,
                 accumulate=False, seed=0, env=None, splits_input=None):
    """Builds, runs and checks one te.grouped_matmul; returns (got, want)."""
    rng = np.random.default_rng(seed)
    b_elem = b_elem or a_elem
    groups, tokens = len(splits), int(sum(splits))
    a_parts = [Operand(rng, m, k, a_elem, modes[0], False) for m in splits]
    b_parts = [Operand(rng, n, k, b_elem, modes[1], not tb) for _ in splits]
    args, types, inputs = [], [], []

    def add(name, value, type_text):
        args.append(f"%{name}: {type_text}")
        types.append(type_text)
        inputs.append(value)

    add("a", np.concatenate([a.stored() for a in a_parts]),
        tensor_type((tokens, k), a_elem))
    b_stored = np.stack([b.stored() for b in b_parts])
    add("b", b_stored, tensor_type(b_stored.shape, b_elem))
    add("m", np.array(splits if splits_input is None else splits_input, np.int64),
        tensor_type((groups,), "i64"))
    clauses = ""
    if modes[0]:
        if modes[0] == "per_tensor":
            sa = np.array([a.scale for a in a_parts], np.float32)
            sb = np.array([b.scale for b in b_parts], np.float32)
            sa_type = sb_type = tensor_type((groups,), "f32")
        else:
            sa = np.concatenate([a.scale_input() for a in a_parts])
            sb = np.stack([b.scale_input() for b in b_parts])
            scale_elem = "f8E8M0FNU" if modes[0] == "mxfp8_1x32" else "f32"
            sa_type = tensor_type(sa.shape, scale_elem)
            sb_type = tensor_type(sb.shape, scale_elem)
        add("sa", sa, sa_type)
        add("sb", sb, sb_type)
        clauses += " scales(%sa, %sb)"
        if modes != ("per_tensor", "per_tensor"):
            clauses += f" scaling {modes[0]}, {modes[1]}"
    value = np.concatenate([product(a, b) for a, b in zip(a_parts, b_parts)])
    bound = np.concatenate([
        k * 2.0 ** -24 * (np.abs(a.dequantized()) @ np.abs(b.dequantized()).T)
        for a, b in zip(a_parts, b_parts)])
    if a_elem == "f32":
        bound *= 2
    if bias:
        bias_v = rng.standard_normal((groups, n)).astype(HIGH[bias])
        add("bias", stored(bias_v, bias), tensor_type((groups, n), bias))
        clauses += " bias(%bias)"
        value = value + bias_v.astype(np.float64)[np.repeat(np.arange(groups), splits)]
    if accumulate:
        c_v = (rng.standard_normal((tokens, n)) * 8).astype(HIGH[out])
        add("c", stored(c_v, out), tensor_type((tokens, n), out))
        clauses += " accumulate(%c)"
        value = value + c_v.astype(np.float64)
    result = tensor_type((tokens, n), out)
    text = f"""
func.func @grouped({", ".join(args)}) -> {result} {{
  %d = te.grouped_matmul %a, %b splits(%m){clauses}{" transpose_b" if tb else ""}
      : {", ".join(types)} -> {result}
  return %d : {result}
}}"""
    if env:
        te_run.env.update(env)
    (d,) = te_run.run_kernel(te_run.program(text), inputs, outputs_f32=True)
    err = np.abs(d.astype(np.float64) - value)
    limit = bound + np.abs(value) * ROUNDING[out] + 1e-6
    at = np.unravel_index(np.argmax(err - limit), err.shape) if err.size else None
    assert np.all(err <= limit), (
        f"error {err[at]} > {limit[at]} at {at}: got {d[at]}, want {value[at]}")
    return d, value


# Odd sizes: groups that are not multiples of the micro-kernel's 12 rows, an
# empty group first, in the middle and last, one group of one row.
SPLITS = [0, 13, 1, 0, 40, 25, 0]


@pytest.mark.parametrize("tb", [True, False])
@pytest.mark.parametrize("elem,out", [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"),
                                      ("f32", "f32")])
def test_high_precision(te_run, elem, out, tb):
    grouped_case(te_run, splits=SPLITS, n=37, k=45, a_elem=elem, out=out, tb=tb)


@pytest.mark.parametrize("a_elem,b_elem,out", [
    ("f8E4M3FN", "f8E4M3FN", "bf16"), ("f8E5M2", "f8E4M3FN", "f32")])
@pytest.mark.parametrize("tb", [True, False])
def test_per_tensor(te_run, a_elem, b_elem, out, tb):
    """Each group's GEMM scales by its own a_scale_inv[g] * b_scale_inv[g]."""
    grouped_case(te_run, splits=SPLITS, n=50, k=77, a_elem=a_elem, b_elem=b_elem,
                 modes=("per_tensor", "per_tensor"), out=out, tb=tb)


@pytest.mark.parametrize("tb", [True, False])
def test_mxfp8(te_run, tb):
    grouped_case(te_run, splits=SPLITS, n=40, k=96, a_elem="f8E4M3FN", b_elem="f8E5M2",
                 modes=("mxfp8_1x32", "mxfp8_1x32"), out="f32", tb=tb, seed=3)


@pytest.mark.parametrize("modes", [("block_1x128", "block_1x128"),
                                   ("block_1x128", "block_128x128")])
@pytest.mark.parametrize("tb", [True, False])
def test_block_scaling(te_run, modes, tb):
    """Float8BlockScaling's activations (1x128) by weights (1x128 or
    128x128), K = 300 ending in a partial block, N = 140 in a partial
    128-row block of B."""
    grouped_case(te_run, splits=[20, 0, 57, 3], n=140, k=300, a_elem="f8E4M3FN",
                 modes=modes, out="f32", tb=tb, seed=4)


@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)),
                                        ("f8E4M3FN", ("mxfp8_1x32", "mxfp8_1x32"))])
def test_bias_and_accumulate(te_run, elem, modes):
    """Each group's bias on its rows, and C."""
    grouped_case(te_run, splits=[17, 30, 0, 5], n=36, k=64, a_elem=elem, modes=modes,
                 bias="bf16", accumulate=True, out="f32")


def test_one_group_is_a_gemm(te_run):
    grouped_case(te_run, splits=[64], n=48, k=64)


def test_every_row_in_one_group_of_many(te_run):
    """All rows in the last group: the others are empty."""
    grouped_case(te_run, splits=[0, 0, 0, 70], n=33, k=32, seed=5)


def test_many_groups(te_run):
    """More groups than 12-row panels would hold without padding (MoE with
    many experts): 64 groups of 0 to 6 rows."""
    rng = np.random.default_rng(6)
    grouped_case(te_run, splits=list(rng.integers(0, 7, 64)), n=40, k=32, seed=6)


@pytest.mark.parametrize("arch", ["x86-64-v4", "x86-64-v3"])
@pytest.mark.parametrize("elem", ["bf16", "f8E4M3FN"])
def test_fallback_kernels(te_run, arch, elem):
    """The f32 FMA micro-kernels (AVX-512 without the dot unit, AVX2)."""
    skip_unless_runs_here(arch)
    modes = ("per_tensor", "per_tensor") if elem != "bf16" else (None, None)
    grouped_case(te_run, splits=SPLITS, n=37, k=45, a_elem=elem, modes=modes,
                 env={"TE_CPU_ARCH": arch})


@pytest.mark.skipif(not X86, reason="AMX is x86's")
@pytest.mark.parametrize("elem,modes", [("bf16", (None, None)),
                                        ("f8E4M3FN", ("per_tensor", "per_tensor")),
                                        ("f8E4M3FN", ("block_1x128", "block_128x128"))])
def test_tile_kernel_emulated(te_run, elem, modes):
    """The AMX tile micro-kernel (TE_CPU_AMX=emulate: its instructions as
    scalar code) on groups of panels of 32 rows, empty groups included."""
    grouped_case(te_run, splits=SPLITS, n=37, k=300 if modes[0] == "block_1x128" else 45,
                 a_elem=elem, modes=modes, env={"TE_CPU_AMX": "emulate"})


@pytest.mark.parametrize("splits,message", [
    ([10, 40, 30], r"the splits sum to 80, but 'a' has 79 rows"),
    ([10, -1, 70], r"splits\[1\] = -1 is negative"),
])
def test_bad_splits_fail_the_launch(te_run, splits, message):
    """Splits that do not describe a's rows fail with the op, its location
    and the entry; the kernel stays in bounds."""
    with pytest.raises(AssertionError, match=message):
        grouped_case(te_run, splits=[10, 39, 30], n=8, k=16,
                     splits_input=splits)


def test_check_against_the_reference(te_run):
    """te-run --check: the production lowering against te-decompose-
    reference's dense formula, on random splits (some groups empty)."""
    program = te_run.program("""
func.func @f(%x: tensor<90x96xf8E4M3FN>, %w: tensor<5x40x96xf8E4M3FN>, %m: tensor<5xi64>,
             %sx: tensor<90x3xf8E8M0FNU>, %sw: tensor<5x40x3xf8E8M0FNU>) -> tensor<90x40xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) scales(%sx, %sw) scaling mxfp8_1x32, mxfp8_1x32 transpose_b
      : tensor<90x96xf8E4M3FN>, tensor<5x40x96xf8E4M3FN>, tensor<5xi64>, tensor<90x3xf8E8M0FNU>,
        tensor<5x40x3xf8E8M0FNU> -> tensor<90x40xbf16>
  return %y : tensor<90x40xbf16>
}""")
    for seed in (0, 1):
        proc = te_run(program, "--random-inputs", "--seed", seed, "--check")
        assert "check out0:" in proc.stdout and "ok" in proc.stdout, proc.stdout


def test_explain_names_the_micro_kernel(te_run):
    program = te_run.program("""
func.func @f(%x: tensor<24x32xbf16>, %w: tensor<2x8x32xbf16>, %m: tensor<2xi64>) -> tensor<24x8xbf16> {
  %y = te.grouped_matmul %x, %w splits(%m) transpose_b
      : tensor<24x32xbf16>, tensor<2x8x32xbf16>, tensor<2xi64> -> tensor<24x8xbf16>
  return %y : tensor<24x8xbf16>
}""")
    proc = te_run(program, "--explain", env={"TE_CPU_ARCH": "x86-64-v3"})
    assert "te.grouped_matmul" in proc.stdout
    assert "f32 FMAs on 8 lanes, 6x16 micro-kernel" in proc.stdout
