"""te-run --check: the production kernel against the reference pipeline
(te-lower-cpu-reference: te.attention as the dense decomposition of
te-decompose-reference) on the same inputs.

Every configuration below must pass with the documented tolerances; the
comparison arithmetic itself (what fails, and by how much) is pinned by
unittests/Support/CompareTest.cpp, since no honest program makes the two
pipelines disagree."""
import re

import numpy as np
import pytest

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


@pytest.mark.parametrize("what,text", [
    ("te.attention with dropout", """
func.func @f(%q: tensor<1x8x2x16xf32>, %rng: tensor<2xi64>) -> tensor<1x8x2x16xf32> {
  %o = te.attention %q, %q, %q layout bshd dropout 0.25 rng_state(%rng)
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<2xi64>)
      -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}"""),
])
def test_check_reports_what_has_no_reference(te_run, what, text):
    values = [np.zeros((1, 8, 2, 16), np.float32), np.array([1, 2], np.int64)]
    proc = run_check(te_run, text, values)
    assert proc.returncode == 2
    assert "cannot build the reference kernel" in proc.stderr
    assert f"no reference decomposition for {what}" in proc.stderr


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
