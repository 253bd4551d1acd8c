"""te-run --check: the production kernel against the reference pipeline
(te-lower-cpu-reference: te.attention and te.attention_backward as the dense
decomposition of te-decompose-reference) on the same inputs.

Every configuration below must pass with the documented tolerances; the
comparison arithmetic itself (what fails, and by how much) is pinned by
unittests/Support/CompareTest.cpp, since no honest program makes the two
pipelines disagree."""
import re
from pathlib import Path

import numpy as np
import pytest

import test_attention as forward_cases
import test_attention_backward as backward_cases

LAYOUT_SHAPE = {
    "bshd": lambda b, s, h, d: (b, s, h, d),
    "sbhd": lambda b, s, h, d: (s, b, h, d),
    "bhsd": lambda b, s, h, d: (b, h, s, d),
}


def ttype(shape, dtype):
    return "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"


def attention_program(layout="bshd", dtype="f32", b=2, s_q=6, s_kv=8, h_q=4,
                      h_kv=2, d_qk=16, d_v=8, mask=None, window=None,
                      bias=None, bias_shape=None, softmax=None, lse=False,
                      mask_shape=None, seqlens=None, slopes_shape=None):
    """A te.attention program and numpy inputs for it."""
    rng = np.random.default_rng(7)
    shape = LAYOUT_SHAPE[layout]
    operands = [("q", shape(b, s_q, h_q, d_qk), dtype),
                ("k", shape(b, s_kv, h_kv, d_qk), dtype),
                ("v", shape(b, s_kv, h_kv, d_v), dtype)]
    values = [rng.standard_normal(operands[i][1]).astype(np.float32)
              for i in range(3)]
    clauses = [f"layout {layout}"]
    if mask:
        clauses.append(f"mask {mask}")
    if window:
        clauses.append(f"window [{window[0]}, {window[1]}]")
    if bias:
        clauses.append(f"bias {bias}")
    if softmax:
        clauses.append(f"softmax {softmax}")
    tail = []
    if seqlens:
        operands += [("lq", (b,), "i32"), ("lkv", (b,), "i32")]
        values += [np.array(seqlens[0], np.int32), np.array(seqlens[1], np.int32)]
        tail.append("seqlens(%lq, %lkv)")
    if mask_shape:
        operands.append(("m", mask_shape, "i1"))
        values.append(rng.random(mask_shape) < 0.3)
        tail.append("mask_tensor(%m)")
    if bias_shape:
        operands.append(("bias", bias_shape, bias_shape[-1]))
        operands[-1] = ("bias", bias_shape[:-1], bias_shape[-1])
        values.append(rng.standard_normal(bias_shape[:-1]).astype(np.float32))
        tail.append("bias_tensor(%bias)")
    if slopes_shape:
        operands.append(("slopes", slopes_shape, "f32"))
        values.append(rng.uniform(0.1, 1.0, slopes_shape).astype(np.float32))
        tail.append("alibi_slopes(%slopes)")
    if softmax == "learnable":
        operands.append(("alpha", (1, h_q, 1, 1), "f32"))
        values.append(rng.standard_normal((1, h_q, 1, 1)).astype(np.float32))
        tail.append("softmax_offset(%alpha)")
    o_type = ttype(shape(b, s_q, h_q, d_v), dtype)
    results = [o_type]
    if lse:
        results.append(ttype((b, h_q, s_q, 1), "f32"))
    args = ", ".join(f"%{n}: {ttype(s, t)}" for n, s, t in operands)
    types = ", ".join(ttype(s, t) for _, s, t in operands)
    names = ", ".join(["%o", "%lse"][:len(results)])
    text = f"""
func.func @f({args}) -> ({", ".join(results)}) {{
  {names} = te.attention %q, %k, %v {" ".join(clauses + tail)}{" {return_lse}" if lse else ""}
      : ({types}) -> ({", ".join(results)})
  return {names} : {", ".join(results)}
}}"""
    return text, values


CONFIGS = {
    "no_mask": dict(),
    "mqa_bf16": dict(dtype="bf16", h_kv=1, mask="causal", lse=True),
    "causal_gqa": dict(mask="causal", lse=True),
    "causal_br_window_sbhd": dict(layout="sbhd", mask="causal_bottom_right",
                                  window=(3, 0), lse=True),
    "window_bhsd": dict(layout="bhsd", window=(2, 1), s_q=8, lse=True),
    "padding_bhsd": dict(layout="bhsd", mask="padding",
                         seqlens=([5, 2], [0, 7]), lse=True),
    "padding_causal": dict(mask="padding_causal", seqlens=([6, 3], [4, 8]),
                           lse=True),
    "padding_causal_br_window": dict(mask="padding_causal_bottom_right",
                                     window=(2, -1), seqlens=([6, 3], [4, 8]),
                                     lse=True),
    "arbitrary_broadcast": dict(mask="arbitrary", mask_shape=(1, 1, 6, 8),
                                lse=True),
    "arbitrary_full_f16": dict(dtype="f16", mask="arbitrary",
                               mask_shape=(2, 4, 6, 8)),
    "pre_scale": dict(bias="pre_scale", bias_shape=(1, 4, 6, 8, "f32")),
    "post_scale_bf16": dict(dtype="bf16", bias="post_scale",
                            bias_shape=(2, 1, 6, 8, "bf16"), mask="causal"),
    "alibi": dict(bias="alibi", slopes_shape=(4,), mask="causal_bottom_right",
                  lse=True),
    "alibi_per_batch": dict(bias="alibi", slopes_shape=(2, 4)),
    "off_by_one": dict(softmax="off_by_one", mask="padding",
                       seqlens=([6, 0], [8, 5]), lse=True),
    "learnable_bf16": dict(dtype="bf16", softmax="learnable", mask="causal",
                           window=(1, 0), lse=True),
}

CHECK_LINE = re.compile(
    r"^check out(\d+): max abs err (\S+), max rel err (\S+) "
    r"\(tolerance ([^)]*)\): (ok|FAILED)$", re.M)


def run_check(te_run, text, values):
    program = te_run.program(text)
    args = [program, "--check"]
    for value in values:
        args += ["--input", te_run.array(value)]
    return te_run(*args, check=False)


@pytest.mark.parametrize("name", CONFIGS)
def test_attention_check_passes(te_run, name):
    text, values = attention_program(**CONFIGS[name])
    proc = run_check(te_run, text, values)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = CHECK_LINE.findall(proc.stdout)
    expected = 2 if CONFIGS[name].get("lse") else 1
    assert [int(line[0]) for line in lines] == list(range(expected)), proc.stdout
    assert all(line[4] == "ok" for line in lines), proc.stdout
    if CONFIGS[name].get("dtype") == "bf16":
        assert "rel 0.00781" in lines[0][3]


def test_fp8_program_is_checked_exactly(te_run):
    text = """
func.func @f(%x: tensor<16x32xbf16>, %s: tensor<f32>)
    -> (tensor<16x32xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<16x32xbf16>, tensor<f32> -> tensor<16x32xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<16x32xf8E4M3FN>, tensor<f32>, tensor<f32>
}"""
    rng = np.random.default_rng(3)
    proc = run_check(te_run, text, [
        rng.standard_normal((16, 32)).astype(np.float32),
        np.array(37.5, np.float32)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = CHECK_LINE.findall(proc.stdout)
    assert len(lines) == 3
    assert lines[0][3] == "exact" and lines[0][1] == "0"
    assert all(line[4] == "ok" for line in lines)


def test_check_and_normal_builds_are_cached_apart(te_run):
    text, values = attention_program(mask="causal")
    first = run_check(te_run, text, values)
    assert first.returncode == 0, first.stderr
    # The reference library is a separate cache entry: a second plain run
    # hits the production one, a second --check run compiles nothing.
    entries = list(te_run.cache.rglob("*.so"))
    assert len(entries) == 2, entries
    second = run_check(te_run, text, values)
    assert second.returncode == 0
    assert "cache: hit (disk)" in second.stderr
    assert len(list(te_run.cache.rglob("*.so"))) == 2


# ---------------------------------------------------------------------------
# The examples, on the inputs te-run generates.
# ---------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.mlir")),
                         ids=lambda path: path.stem)
def test_example_check_passes(te_run, example):
    if "te.process_group" in example.read_text():
        pytest.skip("collectives run under mpirun: test_collectives.py")
    proc = te_run(example, "--random-inputs", "--seed", "1", "--check",
                  check=False)
    if proc.returncode == 2 and "has no CPU lowering yet" in proc.stderr:
        pytest.skip("no CPU lowering: " + proc.stderr.splitlines()[0])
    lines = CHECK_LINE.findall(proc.stdout)
    failed = [line[0] for line in lines if line[4] != "ok"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines and not failed, proc.stdout


def test_example_backward_on_shared_forward(te_run, tmp_path):
    """attention_gqa_causal's backward, given the production forward's o and
    lse, passes --check on its own: the backward is checked apart from the
    forward's rounding of O, which the full program's check carries."""
    inputs = tmp_path / "inputs"
    te_run(EXAMPLES / "attention_gqa_causal.mlir", "--random-inputs",
           "--seed", "1", "--output-dir", inputs)
    forward_text = """
func.func @f(%q: tensor<2x256x16x64xbf16>, %k: tensor<2x256x4x64xbf16>,
             %v: tensor<2x256x4x64xbf16>)
    -> (tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal window [128, 0] {return_lse}
      : (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>,
         tensor<2x256x4x64xbf16>)
      -> (tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>)
  return %o, %lse : tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>
}"""
    first = tmp_path / "forward"
    te_run(te_run.program(forward_text), "--input", inputs / "in0.npy",
           "--input", inputs / "in1.npy", "--input", inputs / "in2.npy",
           "--output-dir", first)
    backward_text = """
func.func @b(%q: tensor<2x256x16x64xbf16>, %k: tensor<2x256x4x64xbf16>,
             %v: tensor<2x256x4x64xbf16>, %o: tensor<2x256x16x64xbf16>,
             %d_o: tensor<2x256x16x64xbf16>, %lse: tensor<2x16x256x1xf32>)
    -> (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>,
        tensor<2x256x4x64xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %d_o, %lse
      layout bshd mask causal window [128, 0]
      : (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>,
         tensor<2x256x4x64xbf16>, tensor<2x256x16x64xbf16>,
         tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>)
      -> (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>,
          tensor<2x256x4x64xbf16>)
  return %dq, %dk, %dv : tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>,
                         tensor<2x256x4x64xbf16>
}"""
    args = [te_run.program(backward_text), "--check"]
    for path in (inputs / "in0.npy", inputs / "in1.npy", inputs / "in2.npy",
                 first / "out0.npy", inputs / "in3.npy", first / "out1.npy"):
        args += ["--input", path]
    proc = te_run(*args, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = CHECK_LINE.findall(proc.stdout)
    assert len(lines) == 3 and all(line[4] == "ok" for line in lines), \
        proc.stdout


# ---------------------------------------------------------------------------
# thd, dropout and the backward pass, configuration by configuration.
# ---------------------------------------------------------------------------

RNG_STATE = np.array([0x1234_5678_9ABC, 77], np.int64)


def with_dropout(text, values, p):
    """`text` (one te.attention[_backward] without softmax_offset, as the
    case builders write it) with `dropout p rng_state(%rng)` added."""
    assert "softmax_offset" not in text
    _, head, rest = text.split("\n", 2)
    head = head.replace(") -> (", ", %rng: tensor<2xi64>) -> (", 1)
    rest = re.sub(r"(softmax \w+)", rf"\1 dropout {p}", rest, count=1)
    rest = re.sub(r"( \{return_lse\})?\n      : \((.*?)\) -> ",
                  r" rng_state(%rng)\1\n      : (\2, tensor<2xi64>) -> ",
                  rest, count=1, flags=re.S)
    return "\n" + head + "\n" + rest, list(values) + [RNG_STATE]


THD = dict(layout="thd", h_kv=2)
THD_OFFSETS = dict(THD, lens_kv=[4, 2, 6, 0], gaps_q=[1, 0, 2, 1, 2],
                   gaps_kv=[0, 2, 1, 3, 1])

FORWARD_CASES = {
    "thd_padding": dict(THD, mask="padding"),
    "thd_padding_causal_f16": dict(THD, elem="f16", mask="padding_causal"),
    "thd_offsets_br_window": dict(THD_OFFSETS,
                                  mask="padding_causal_bottom_right",
                                  window=(2, 0)),
    "thd_offsets_alibi_per_sequence": dict(THD_OFFSETS, mask="padding",
                                           bias_kind="alibi",
                                           slopes_shape="bh"),
    "thd_learnable_top_left_window": dict(THD_OFFSETS, mask="padding",
                                          window=(1, 1),
                                          bottom_right_diagonal=False,
                                          softmax="learnable"),
    "thd_off_by_one_bf16": dict(THD, elem="bf16", mask="padding_causal",
                                softmax="off_by_one"),
}

FORWARD_DROPOUT_CASES = {
    "dropout_causal_gqa": (dict(mask="causal", h_kv=2), 0.2),
    "dropout_padding_bf16_bias": (dict(elem="bf16", mask="padding",
                                       bias_kind="post_scale",
                                       bias_shape="h"), 0.5),
    "dropout_thd_offsets": (dict(THD_OFFSETS, mask="padding_causal"), 0.3),
    "dropout_off_by_one_sbhd": (dict(layout="sbhd", softmax="off_by_one",
                                     window=(1, 1)), 0.1),
}

BACKWARD_CASES = {
    # Every mask kind.
    "no_mask_gqa": dict(h_kv=2),
    "causal_mqa_bf16": dict(elem="bf16", mask="causal", h_kv=1),
    "causal_bottom_right_sbhd": dict(layout="sbhd", mask="causal_bottom_right",
                                     s_kv=12, window=(3, 0)),
    "padding_bhsd": dict(layout="bhsd", mask="padding", s_kv=11),
    "padding_causal": dict(mask="padding_causal", s_kv=12, h_kv=2),
    "padding_causal_br_window": dict(mask="padding_causal_bottom_right",
                                     window=(2, 0), s_kv=12),
    "arbitrary_f16": dict(elem="f16", mask="arbitrary", mask_shape="b"),
    "arbitrary_window": dict(mask="arbitrary", mask_shape="h", window=(2, 1)),
    # The diagonal of windows and ALiBi.
    "window_top_left": dict(window=(2, 1), bottom_right_diagonal=False,
                            s_kv=12),
    "window_bottom_right_padding": dict(mask="padding", window=(1, 2),
                                        bottom_right_diagonal=True, s_kv=12),
    "alibi_top_left": dict(bias_kind="alibi", bottom_right_diagonal=False,
                           s_kv=12),
    # Bias kinds, dbias over every broadcast shape.
    "pre_scale_bh": dict(bias_kind="pre_scale", bias_shape="bh", scale=0.6),
    "pre_scale_h": dict(bias_kind="pre_scale", bias_shape="h", mask="causal"),
    "post_scale_b_bf16": dict(elem="bf16", bias_kind="post_scale",
                              bias_shape="b", bias_elem="bf16", mask="causal"),
    "post_scale_1_padding": dict(bias_kind="post_scale", bias_shape="1",
                                 mask="padding"),
    "alibi": dict(bias_kind="alibi", mask="causal_bottom_right", s_kv=12),
    "alibi_per_batch": dict(bias_kind="alibi", slopes_shape="bh"),
    # Softmax kinds, d_softmax_offset.
    "off_by_one": dict(softmax="off_by_one", mask="padding"),
    "learnable": dict(softmax="learnable", mask="causal", window=(1, 0)),
    "learnable_pre_scale_bf16": dict(elem="bf16", softmax="learnable",
                                     bias_kind="pre_scale", bias_shape="b"),
    # thd, with and without seq_offsets.
    "thd_padding_causal": dict(THD, mask="padding_causal"),
    "thd_padding_f16": dict(THD, elem="f16", mask="padding"),
    "thd_offsets": dict(THD_OFFSETS, mask="padding"),
    "thd_offsets_br_alibi_learnable": dict(
        THD_OFFSETS, mask="padding_causal_bottom_right", bias_kind="alibi",
        slopes_shape="bh", softmax="learnable"),
    "thd_window_off_by_one": dict(THD_OFFSETS, mask="padding", window=(0, 1),
                                  softmax="off_by_one"),
}

BACKWARD_DROPOUT_CASES = {
    "dropout_causal_gqa": (dict(mask="causal", h_kv=2), 0.2),
    "dropout_bias_bf16": (dict(elem="bf16", bias_kind="post_scale",
                               bias_shape="h", mask="padding"), 0.5),
    "dropout_thd": (dict(THD, mask="padding_causal"), 0.25),
    "dropout_thd_offsets_alibi": (dict(THD_OFFSETS, mask="padding",
                                       bias_kind="alibi"), 0.4),
}


def assert_check_passes(te_run, text, values, outputs):
    proc = run_check(te_run, text, values)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = CHECK_LINE.findall(proc.stdout)
    assert [int(line[0]) for line in lines] == list(range(outputs)), \
        proc.stdout
    assert all(line[4] == "ok" for line in lines), proc.stdout


@pytest.mark.parametrize("name", FORWARD_CASES)
def test_forward_check_passes(te_run, name):
    case = forward_cases.make_case(5, **FORWARD_CASES[name])
    text, values = forward_cases.program_text(case)
    assert_check_passes(te_run, text, values, 2)


@pytest.mark.parametrize("name", FORWARD_DROPOUT_CASES)
def test_forward_dropout_check_passes(te_run, name):
    kwargs, p = FORWARD_DROPOUT_CASES[name]
    case = forward_cases.make_case(6, **kwargs)
    text, values = with_dropout(*forward_cases.program_text(case), p)
    assert_check_passes(te_run, text, values, 2)


def backward_outputs(case):
    return 3 + (case.cfg.bias is not None) + (case.cfg.softmax_offset
                                              is not None)


@pytest.mark.parametrize("name", BACKWARD_CASES)
def test_backward_check_passes(te_run, name):
    case = backward_cases.make_case(7, **BACKWARD_CASES[name])
    text, values = backward_cases.program_text(case)
    assert_check_passes(te_run, text, values, backward_outputs(case))


@pytest.mark.parametrize("name", BACKWARD_DROPOUT_CASES)
def test_backward_dropout_check_passes(te_run, name):
    kwargs, p = BACKWARD_DROPOUT_CASES[name]
    # o and lse come from the reference forward without dropout: --check
    # compares the two kernels on whatever they are given.
    case = backward_cases.make_case(8, **kwargs)
    text, values = with_dropout(*backward_cases.program_text(case), p)
    assert_check_passes(te_run, text, values, backward_outputs(case))


def test_forward_and_backward_with_dropout_in_one_program(te_run):
    """The reference regenerates the forward's dropout mask in its backward
    exactly as the production kernels do: o, lse and the gradients of one
    program agree."""
    t, lse_t = "tensor<2x12x2x8xf32>", "tensor<2x2x12x1xf32>"
    text = f"""
func.func @f(%q: {t}, %k: {t}, %v: {t}, %do: {t}, %rng: tensor<2xi64>)
    -> ({t}, {lse_t}, {t}, {t}, {t}) {{
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal dropout 0.3 rng_state(%rng) {{return_lse}}
      : ({t}, {t}, {t}, tensor<2xi64>) -> ({t}, {lse_t})
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal dropout 0.3 rng_state(%rng)
      : ({t}, {t}, {t}, {t}, {t}, {lse_t}, tensor<2xi64>) -> ({t}, {t}, {t})
  return %o, %lse, %dq, %dk, %dv : {t}, {lse_t}, {t}, {t}, {t}
}}"""
    rng = np.random.default_rng(9)
    values = [rng.standard_normal((2, 12, 2, 8)).astype(np.float32)
              for _ in range(4)] + [RNG_STATE]
    assert_check_passes(te_run, text, values, 5)
