"""bf16 attention on the host's dot-product unit and on the fallbacks.

With AVX512-BF16 (the CPU flag avx512_bf16), the cpu target computes the
scores of bf16 attention (q k^T, and dO v^T in the backward) with
vdpbf16ps on bf16 pairs; without it, with f32 FMAs on the widened inputs.
TE_CPU_ARCH forces the fallbacks on any host: x86-64-v4 (AVX-512 without
BF16) and x86-64-v3 (AVX2). Every path must meet the tolerances of
test_attention.py and test_attention_backward.py against their references
(the products of two bf16 are exact in f32, so the dot unit adds no error
of its own), and each kernel must hold the instructions of its path.
"""
import platform
import re

import pytest

import test_attention as fwd
from host_cpu import host_flags, skip_unless_runs_here
import test_attention_backward as bwd

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="the dot units and TE_CPU_ARCH names here are x86's")


HOST_BF16_DOT = "avx512_bf16" in host_flags()

# The path each setting of TE_CPU_ARCH takes (None: this host).
PATHS = {
    "host": None,
    "avx512-fallback": "x86-64-v4",
    "avx2-fallback": "x86-64-v3",
}

# Past one chunk of 32 keys, rows not a multiple of the micro-block's 4.
FORWARD_CASES = {
    "bshd-causal": dict(mask="causal", s_q=37, s_kv=70),
    "bshd-no_mask-gqa": dict(mask="no_mask", s_q=37, s_kv=70, h_q=4, h_kv=2),
    "sbhd-bottom_right": dict(layout="sbhd", mask="causal_bottom_right", s_q=21, s_kv=70),
    "bhsd-window": dict(layout="bhsd", mask="no_mask", window=(20, 5), s_q=50, s_kv=50),
    "alibi": dict(mask="causal", bias_kind="alibi", s_q=33, s_kv=40),
    "d_qk-ne-d_v": dict(mask="causal", s_q=35, s_kv=35, d_qk=32, d_v=8),
    # An odd head dimension has no pairs: f32 FMAs on every host.
    "odd-d": dict(mask="no_mask", s_q=20, s_kv=40, d_qk=7, d_v=5),
    "off_by_one": dict(mask="causal", softmax="off_by_one", s_q=33, s_kv=33),
}
# With head dimensions of whole 16-float pieces the dQ, dK and dV sums run on
# the unit too (P and scale * dS rounded to bf16 once); otherwise only the
# scores S and dP do.
BACKWARD_CASES = {
    "bshd-causal": dict(mask="causal", s_q=37, s_kv=70, d_qk=16),
    "gqa-no_mask": dict(mask="no_mask", s_q=37, s_kv=40, h_q=4, h_kv=1, d_qk=32,
                        d_v=16),
    "bhsd-window": dict(layout="bhsd", mask="causal", window=(9, 0), s_q=40, s_kv=40,
                        d_qk=16),
    "alibi": dict(layout="sbhd", mask="no_mask", bias_kind="alibi", s_q=33, s_kv=35,
                  d_qk=16),
    "bottom_right-long-kv": dict(mask="causal_bottom_right", s_q=10, s_kv=75, d_qk=16),
    "scores-only-d8": dict(mask="causal", s_q=37, s_kv=70),
    "scores-only-d_v6": dict(mask="causal", s_q=35, s_kv=35, d_qk=16, d_v=6),
}


# (module of the reference and the case builder, seed, cases) per direction.
DIRECTIONS = {
    "forward": (fwd, 3, FORWARD_CASES),
    "backward": (bwd, 4, BACKWARD_CASES),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("direction,name",
                         [(d, n) for d, (_, _, cases) in DIRECTIONS.items() for n in cases])
def test_bf16_attention(te_run, direction, name, path):
    cases, seed, table = DIRECTIONS[direction]
    skip_unless_runs_here(PATHS[path])
    if PATHS[path]:
        te_run.env["TE_CPU_ARCH"] = PATHS[path]
    cases.run_case(te_run, cases.make_case(seed, elem="bf16", **table[name]))


def assembly(te_run, case_module, case, arch):
    """The host assembly of `case`'s kernel compiled for `arch`."""
    text, _ = case_module.program_text(case)
    out = te_run.tmp / f"kernel-{arch or 'host'}.s"
    env = {"TE_CPU_ARCH": arch} if arch else None
    te_run(te_run.program(text), "--emit=asm", "-o", out, env=env)
    return out.read_text()


@pytest.mark.parametrize("module", ["forward", "backward"])
def test_kernels_hold_their_path(te_run, module):
    """vdpbf16ps where the processor has AVX512-BF16 (this host if it does;
    sapphirerapids and znver4 compiled, not run), none on the fallbacks,
    and none for f32 inputs."""
    cases = fwd if module == "forward" else bwd
    bf16 = cases.make_case(5, elem="bf16", mask="causal", s_q=40, s_kv=40)
    f32 = cases.make_case(5, elem="f32", mask="causal", s_q=40, s_kv=40)
    dot = re.compile(r"\bvdpbf16ps\b")
    assert bool(dot.search(assembly(te_run, cases, bf16, None))) == HOST_BF16_DOT
    for arch in ("sapphirerapids", "znver4"):
        assert dot.search(assembly(te_run, cases, bf16, arch)), arch
    for arch in PATHS.values():
        if arch:
            assert not dot.search(assembly(te_run, cases, bf16, arch)), arch
    assert not dot.search(assembly(te_run, cases, f32, "znver4"))
