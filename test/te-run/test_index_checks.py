"""Bad index operands (cu_seqlens, seq_offsets, seqlens) fail the launch with
one message naming the op, its location and the operand, instead of reading
out of bounds: te-run exits 2 (not a crash) and prints one error line.

Each case starts from valid operands (which must run) and breaks one rule."""
import numpy as np
import pytest

T = 13          # packed tokens of q and of k/v (thd)
H, D = 2, 8


def thd_program(direction, offsets):
    """te.attention (or _backward) on thd with 3 sequences."""
    qkv = f"tensor<{T}x{H}x{D}xf32>"
    vec = "tensor<4xi32>"
    operands = ["%q", "%k", "%v"]
    types = [qkv] * 3
    if direction == "backward":
        operands += ["%o", "%do", "%lse"]
        types += [qkv, qkv, f"tensor<{T}x{H}x1xf32>"]
    names = ["%cq", "%ckv"] + (["%oq", "%okv"] if offsets else [])
    args = ", ".join(f"{n}: {t}" for n, t in zip(operands + names,
                                                 types + [vec] * len(names)))
    config = "layout thd mask padding_causal cu_seqlens(%cq, %ckv)"
    if offsets:
        config += " seq_offsets(%oq, %okv)"
    all_types = ", ".join(types + [vec] * len(names))
    if direction == "forward":
        return f"""func.func @f({args}) -> {qkv} {{
  %r = te.attention {", ".join(operands)} {config}
      : ({all_types}) -> {qkv}
  return %r : {qkv}
}}
"""
    return f"""func.func @f({args}) -> {qkv} {{
  %dq, %dk, %dv = te.attention_backward {", ".join(operands)} {config}
      : ({all_types}) -> ({qkv}, {qkv}, {qkv})
  return %dk : {qkv}
}}
"""


def thd_inputs(direction, offsets, **changes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((T, H, D)).astype(np.float32) for _ in range(3)]
    if direction == "backward":
        arrays += [rng.standard_normal((T, H, D)).astype(np.float32),
                   rng.standard_normal((T, H, D)).astype(np.float32),
                   np.zeros((T, H, 1), np.float32)]
    ops = {"cq": [0, 4, 8, 12], "ckv": [0, 5, 9, 13]}
    if offsets:
        ops.update(oq=[0, 4, 9, 13], okv=[0, 5, 9, 13])
    ops.update(changes)
    return arrays + [np.array(ops[n], np.int32) for n in ops]


def padding_program():
    q = "tensor<2x9x2x8xf32>"
    kv = "tensor<2x12x2x8xf32>"
    return f"""func.func @f(%q: {q}, %k: {kv}, %v: {kv}, %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> {q} {{
  %o = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right
      seqlens(%lq, %lkv) : ({q}, {kv}, {kv}, tensor<2xi32>, tensor<2xi32>) -> {q}
  return %o : {q}
}}
"""


def padding_inputs(lq=(9, 4), lkv=(12, 7)):
    rng = np.random.default_rng(1)
    return [rng.standard_normal((2, 9, 2, 8)).astype(np.float32),
            rng.standard_normal((2, 12, 2, 8)).astype(np.float32),
            rng.standard_normal((2, 12, 2, 8)).astype(np.float32),
            np.array(lq, np.int32), np.array(lkv, np.int32)]


def run(te_run, text, inputs):
    program = te_run.program(text)
    args = [program]
    for value in inputs:
        args += ["--input", te_run.array(value)]
    return program, te_run(*args, check=False)


def expect_refused(te_run, text, inputs, message):
    program, proc = run(te_run, text, inputs)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith("te-run: error: "), errors[0]
    assert f" at {program}:" in errors[0], errors[0]
    assert message in errors[0], errors[0]
    assert proc.stdout == "", proc.stdout


THD_CASES = {
    # The crash of the issue: far past the kv tokens.
    "kv_end_far_past": (False, dict(ckv=[0, 5, 9, 100000]),
                        "cu_seqlens_kv[3] = 100000 is past the 13 tokens of k and v (t_kv)"),
    "q_end_past": (False, dict(cq=[0, 4, 8, 14]),
                   "cu_seqlens_q[3] = 14 is past the 13 tokens of q (t_q)"),
    "kv_decreasing": (False, dict(ckv=[0, 9, 5, 13]),
                      "cu_seqlens_kv[2] = 5 is less than the entry before it (9)"),
    "q_not_from_zero": (False, dict(cq=[1, 4, 8, 12]),
                        "cu_seqlens_q[0] = 1; cu_seqlens start at 0"),
    "kv_negative_length": (False, dict(ckv=[0, -5, 9, 13]),
                           "cu_seqlens_kv[1] = -5 is less than the entry before it (0)"),
    "offset_negative": (True, dict(okv=[0, 5, -3, 13]),
                        "seq_offsets_kv[2] = -3 is negative"),
    "offsets_overlap": (True, dict(oq=[0, 2, 9, 13]),
                        "sequence 0 of q has 4 tokens, but seq_offsets_q leaves room for 2"),
    "offset_end_past": (True, dict(okv=[0, 5, 9, 100]),
                        "seq_offsets_kv[3] = 100 is past the 13 tokens of k and v (t_kv)"),
    "offset_sequence_past": (True, dict(okv=[0, 5, 11, 13]),
                             "sequence 2 of k and v has 4 tokens, but seq_offsets_kv leaves room for 2"),
}


@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("name", list(THD_CASES))
def test_thd_index_operands(te_run, direction, name):
    offsets, changes, message = THD_CASES[name]
    text = thd_program(direction, offsets)
    _, proc = run(te_run, text, thd_inputs(direction, offsets))
    assert proc.returncode == 0, proc.stderr
    op = "te.attention_backward" if direction == "backward" else "te.attention"
    expect_refused(te_run, text, thd_inputs(direction, offsets, **changes),
                   f"{op} at ")
    expect_refused(te_run, text, thd_inputs(direction, offsets, **changes),
                   message)


@pytest.mark.parametrize("lq,lkv,message", [
    ((9, 10), (12, 7), "seqlens_q[1] = 10 is outside [0, 9] (s_q)"),
    ((9, -1), (12, 7), "seqlens_q[1] = -1 is outside [0, 9] (s_q)"),
    ((9, 4), (100000, 7), "seqlens_kv[0] = 100000 is outside [0, 12] (s_kv)"),
    ((9, 4), (12, -2147483648), "seqlens_kv[1] = -2147483648 is outside [0, 12] (s_kv)"),
])
def test_padding_lengths(te_run, lq, lkv, message):
    text = padding_program()
    _, proc = run(te_run, text, padding_inputs())
    assert proc.returncode == 0, proc.stderr
    expect_refused(te_run, text, padding_inputs(lq, lkv), message)


def test_check_reference_refuses_too(te_run):
    """--check builds the reference kernel with the same checks: bad
    operands are refused before any comparison."""
    text = padding_program()
    program = te_run.program(text)
    args = [program, "--check"]
    for value in padding_inputs((9, 4), (13, 7)):
        args += ["--input", te_run.array(value)]
    proc = te_run(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "seqlens_kv[0] = 13 is outside [0, 12] (s_kv)" in proc.stderr
    assert "check out0" not in proc.stdout


def test_shared_kernel_names_the_loading_program(te_run):
    """Kernels are cached by meaning, so one kernel serves programs in other
    files and with other formatting: the message names the location in the
    program that is running, not in the one that was compiled first."""
    text = padding_program()
    bad = padding_inputs((9, 4), (12, 70))
    first = te_run.program(text, "first.mlir")
    moved = te_run.program("// a comment\n\n" + text.replace("%o = ", "%o   =   "),
                           "moved.mlir")
    for program, line, column in ((first, 2, 8), (moved, 4, 12), (first, 2, 8)):
        args = [program]
        for value in bad:
            args += ["--input", te_run.array(value)]
        proc = te_run(*args, check=False)
        assert proc.returncode == 2, proc.stderr
        assert f"te.attention at {program}:{line}:{column}: seqlens_kv[1] = 70" \
            in proc.stderr, proc.stderr
    assert len(list(te_run.cache.glob("*.so"))) == 1
