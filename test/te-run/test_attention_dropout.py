"""Attention dropout: the documented counter-based generator, forward and
backward, against a numpy implementation of the same contract."""
import numpy as np
import pytest

GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def dropout_factor(seed, offset, p, heads, rows, kv, batch):
    """[batch, heads, rows, kv] of 0 or 1/(1-p), per the op's description."""
    n, h, r, t = np.meshgrid(np.arange(batch), np.arange(heads), np.arange(rows),
                             np.arange(kv), indexing="ij")
    with np.errstate(over="ignore"):
        counter = (((n * heads + h) * rows + r) * kv + t).astype(np.uint64)
        x = np.uint64(seed) + GOLDEN * (np.uint64(offset) + counter + np.uint64(1))
        z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float64) * 2.0 ** -24
    return np.where(u >= np.float32(p), np.float64(np.float32(1 / (1 - p))), 0.0)


def reference(q, k, v, do, factor, causal):
    """bshd forward and backward in float64 with the given dropout factors."""
    b, s, h, d = q.shape
    scale = 1 / np.sqrt(d)
    x = np.einsum("bihd,bjhd->bhij", q, k) * scale
    if causal:
        x = np.where(np.tril(np.ones((s, s), bool)), x, -np.inf)
    m = x.max(-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(-1, keepdims=True))
    p = np.exp(x - lse)
    pd = p * factor
    o = np.einsum("bhij,bjhd->bihd", pd, v)
    dv = np.einsum("bhij,bihd->bjhd", pd, do)
    dpd = np.einsum("bihd,bjhd->bhij", do, v)
    dp = dpd * factor
    delta = np.einsum("bihd,bihd->bhi", do, o)[..., None]
    ds = p * (dp - delta)
    dq = np.einsum("bhij,bjhd->bihd", ds, k) * scale
    dk = np.einsum("bhij,bihd->bjhd", ds, q) * scale
    return o, lse, dq, dk, dv


@pytest.mark.parametrize("p,causal", [(0.1, False), (0.5, True)])
def test_dropout_forward_and_backward(te_run, p, causal):
    b, s, h, d = 2, 16, 2, 8
    rng = np.random.default_rng(4)
    q, k, v, do = (rng.standard_normal((b, s, h, d)).astype(np.float32) for _ in range(4))
    state = np.array([1234567, 42], np.int64)
    t = f"tensor<{b}x{s}x{h}x{d}xf32>"
    lse_t = f"tensor<{b}x{h}x{s}x1xf32>"
    mask = "mask causal " if causal else ""
    forward = te_run.program(f"""
func.func @f(%q: {t}, %k: {t}, %v: {t}, %rng: tensor<2xi64>) -> ({t}, {lse_t}) {{
  %o, %lse = te.attention %q, %k, %v layout bshd {mask}dropout {p} rng_state(%rng) {{return_lse}}
      : ({t}, {t}, {t}, tensor<2xi64>) -> ({t}, {lse_t})
  return %o, %lse : {t}, {lse_t}
}}""")
    o, lse = te_run.run_kernel(forward, [q, k, v, state])
    factor = dropout_factor(state[0], state[1], p, h, s, s, b)
    want = reference(*(a.astype(np.float64) for a in (q, k, v, do)), factor, causal)
    assert np.abs(o - want[0]).max() < 1e-5
    assert np.abs(lse - want[1]).max() < 1e-5
    kept = (factor > 0).mean() if not causal else (factor[..., np.tril(np.ones((s, s), bool))] > 0).mean()
    assert abs(kept - (1 - p)) < 0.05

    backward = te_run.program(f"""
func.func @b(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %do: {t}, %lse: {lse_t}, %rng: tensor<2xi64>)
    -> ({t}, {t}, {t}) {{
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd {mask}dropout {p} rng_state(%rng)
      : ({t}, {t}, {t}, {t}, {t}, {lse_t}, tensor<2xi64>) -> ({t}, {t}, {t})
  return %dq, %dk, %dv : {t}, {t}, {t}
}}""")
    dq, dk, dv = te_run.run_kernel(backward, [q, k, v, o, do, lse, state])
    for got, exp in zip((dq, dk, dv), want[2:]):
        assert np.abs(got - exp).max() < 1e-4 * max(1.0, np.abs(exp).max())


def test_dropout_depends_on_seed_and_offset(te_run):
    t = "tensor<1x8x1x4xf32>"
    program = te_run.program(f"""
func.func @f(%q: {t}, %rng: tensor<2xi64>) -> {t} {{
  %o = te.attention %q, %q, %q layout bshd dropout 0.5 rng_state(%rng)
      : ({t}, {t}, {t}, tensor<2xi64>) -> {t}
  return %o : {t}
}}""")
    q = np.random.default_rng(1).standard_normal((1, 8, 1, 4)).astype(np.float32)
    runs = [te_run.run_kernel(program, [q, np.array(state, np.int64)])[0]
            for state in ([1, 0], [1, 0], [2, 0], [1, 1])]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2]) and not np.array_equal(runs[0], runs[3])
