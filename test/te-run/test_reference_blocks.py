"""te-run --check's reference runs attention over blocks of query rows once
a block's score tensor would pass 64 MiB (te-decompose-reference). These
shapes make two blocks of 1024 rows; the blocked reference must agree with
the production kernel on every rule that depends on the row: the causal
diagonal (top-left and bottom-right), padding, the window, a bias and a
mask with rows, LSE, the learnable softmax term and dropout's counters."""

import numpy as np
import pytest

from test_attention import make_case, program_text

# b * h_q * s_kv * 4 bytes per row: 1024-row blocks of 2048 rows.
SHAPE = dict(b=1, s_q=2048, s_kv=4608, h_q=2, h_kv=1, d_qk=8)

CASES = {
    "causal_bshd": dict(layout="bshd", mask="causal"),
    "bottom_right_sbhd": dict(layout="sbhd", mask="causal_bottom_right",
                              softmax="learnable"),
    "padding_window_bhsd": dict(layout="bhsd",
                                mask="padding_causal_bottom_right",
                                window=(300, 0), lens_q=[1500],
                                lens_kv=[4000]),
    "bias_rows": dict(layout="bshd", mask="causal", bias_kind="post_scale",
                      bias_shape="11", elem="bf16"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_blocked_reference_agrees(te_run, name):
    case = make_case(seed=3, **SHAPE, **CASES[name])
    text, inputs = program_text(case)
    args = [te_run.program(text), "--check"]
    for value in inputs:
        args += ["--input", te_run.array(value)]
    proc = te_run(*args)
    checks = [line for line in proc.stdout.splitlines()
              if line.startswith("check ")]
    assert checks and all(line.endswith(": ok") for line in checks), \
        proc.stdout


def test_blocked_reference_dropout(te_run):
    b, s_q, s_kv, h, d = SHAPE["b"], 2048, 4608, 2, 8
    q_t = f"tensor<{b}x{s_q}x{h}x{d}xf32>"
    kv_t = f"tensor<{b}x{s_kv}x{h}x{d}xf32>"
    lse_t = f"tensor<{b}x{h}x{s_q}x1xf32>"
    program = te_run.program(f"""
func.func @f(%q: {q_t}, %k: {kv_t}, %v: {kv_t}, %rng: tensor<2xi64>) -> ({q_t}, {lse_t}) {{
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal_bottom_right dropout 0.25 rng_state(%rng) {{return_lse}}
      : ({q_t}, {kv_t}, {kv_t}, tensor<2xi64>) -> ({q_t}, {lse_t})
  return %o, %lse : {q_t}, {lse_t}
}}""")
    rng = np.random.default_rng(5)
    args = [program, "--check"]
    for shape in ((b, s_q, h, d), (b, s_kv, h, d), (b, s_kv, h, d)):
        args += ["--input", te_run.array(
            rng.standard_normal(shape).astype(np.float32))]
    args += ["--input", te_run.array(np.array([99, 7], np.int64))]
    proc = te_run(*args)
    checks = [line for line in proc.stdout.splitlines()
              if line.startswith("check ")]
    assert len(checks) == 2 and all(line.endswith(": ok") for line in checks), \
        proc.stdout
