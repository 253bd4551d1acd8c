"""te.attention_backward compiled for the CPU against a float64 reference.

Three groups of tests live here:

* `test_selfcheck_*` validate attention_backward_reference.py itself and
  do NOT run te-run (select them with `-k selfcheck`): the gradients of the
  reference, fed the exact forward O and LSE, against central finite
  differences of L = sum(O * dO) through the reference's own dense forward,
  for every mask kind, windows, GQA/MQA, every layout (thd with ragged and
  empty sequences and seq_offsets gaps), both bias kinds with every
  broadcast shape (dbias), ALiBi, the three softmax kinds (d_softmax_offset)
  and d_qk != d_v; plus identities that need no implementation.
* `test_programs_verify` checks that every program the te-run tests build
  parses and verifies (te-opt only; skipped without it).
* every other test builds a te.attention_backward program, runs it through
  te-run on seeded inputs and compares dq, dk, dv (dbias, d_softmax_offset).
  The inputs o and lse are the reference forward's, computed in float64
  from the element-type-rounded q, k, v (and bias), then rounded the way
  the kernel receives them: o to the element type, lse to f32. Without the
  CPU lowering these fail with "te.attention_backward has no CPU lowering
  yet". test_given_o_and_lse_are_used pins that P comes from the given lse
  and D from the given o.

Tolerances. Each gradient is a sum of products of P, dP - D and q / k / dO;
the reference also returns M, the same sum with every term replaced by its
absolute value (|dP| -> sum |dO||v|, |D| -> sum |dO o|), elementwise.
* f32 inputs: |got - want| <= 1e-4 * (M + 1e-3 max M). The kernel's f32
  errors relative to M: each score is an f32 dot product over d_qk <= 16
  terms (<= 18 * 2^-24 relative to scale * sum|q k|, < 1e-5 relative on P
  at these magnitudes), dP and D are dot products over d_v <= 16 terms
  (~16 * 2^-24), and dq / dk / dv accumulate up to s_kv or
  (H_q / H_kv) * s_q <= 96 terms (~96 * 2^-24 = 6e-6): about 3e-5 in all.
  test_selfcheck_f32_model_within_tolerance checks that an all-f32
  evaluation of every te-run configuration stays within a quarter of it.
* bf16 / f16 inputs: the reference runs on the rounded inputs; the result
  is allowed 2^-7 (f16: 2^-10) relative -- at least one ulp of the element
  type, covering the final rounding and a neighbouring value -- plus
  2^-8 * M: rounding intermediates (P, dS) to the element type once costs
  at most 2^-9 * M each. Real bugs (a lost scale, a wrong head, a mask off
  by one) are errors of order M.
* an element whose M is 0 (keys no query sees, rows that see no key, thd
  tokens outside every sequence, invisible dbias entries) must be exactly 0.
"""
import dataclasses
import math
import os
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from attention_backward_reference import (CAUSAL_MASKS, LAYOUTS, MASKS,
                                          PADDING_MASKS, PRECISION, Config,
                                          backward, forward, round_to)
from conftest import TE_RUN

F32_RTOL = 1e-4
FLOOR = 1e-3          # fraction of max M added to every element's scale
NARROW_M = 2.0 ** -8  # bf16 / f16: multiple of M allowed

# ---------------------------------------------------------------------------
# Cases.
# ---------------------------------------------------------------------------


def head_shape(layout, b, s, h, d):
    return {"bshd": (b, s, h, d), "sbhd": (s, b, h, d), "bhsd": (b, h, s, d),
            "thd": (s, h, d)}[layout]


def broadcast_shape(kind, b, h, s_q, s_kv):
    """[1 or b, 1 or h, s_q, s_kv] from "bh", "b", "h" or "1"."""
    return (b if "b" in kind else 1, h if "h" in kind else 1, s_q, s_kv)


def packed(lens, gaps):
    """Start of each thd sequence with gaps[n] free tokens before sequence n
    (gaps[len(lens)] after the last); returns (starts, total tokens)."""
    starts, pos = [], 0
    for n, length in enumerate(lens):
        pos += gaps[n] if gaps else 0
        starts.append(pos)
        pos += length
    if gaps and len(gaps) > len(lens):
        pos += gaps[len(lens)]
    return starts, pos


@dataclass
class Case:
    cfg: Config
    elem: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    d_o: np.ndarray
    bias_elem: str = "f32"
    o: np.ndarray = None      # as the kernel receives it (element type)
    lse: np.ndarray = None    # f32

    def __post_init__(self):
        if self.o is None:
            o, lse = forward(self.q, self.k, self.v, self.cfg)
            self.o = round_to(o, self.elem)
            self.lse = lse.astype(np.float32)

    def reference(self, dtype=np.float64):
        return backward(self.q, self.k, self.v, self.o, self.d_o, self.lse,
                        self.cfg, dtype=dtype, magnitudes=True)

    def result_elems(self):
        return [self.elem] * 3 + ([self.bias_elem] if self.cfg.bias is not None else []) \
            + (["f32"] if self.cfg.softmax_offset is not None else [])


def make_case(seed=0, *, layout="bshd", elem="f32", mask="no_mask", window=None,
              scale=None, bias_kind="no_bias", softmax="vanilla", b=2, s_q=9,
              s_kv=None, h_q=4, h_kv=None, d_qk=8, d_v=None, lens_q=None,
              lens_kv=None, gaps_q=None, gaps_kv=None, bias_shape="bh",
              bias_elem="f32", slopes_shape="h", mask_shape="bh", o_scale=1.0,
              bottom_right_diagonal=None):
    """Seeded N(0, 1) inputs, rounded to `elem`, for one configuration.

    Non-thd padding masks take lens_q / lens_kv (default: random, the first
    entry full). thd takes ragged lens_q / lens_kv (default [3, 0, 6, 4]
    for both) and, with gaps_q / gaps_kv, seq_offsets with gaps[n] free
    tokens before sequence n (one more entry: after the last one).
    """
    rng = np.random.default_rng(seed)
    s_kv = s_q if s_kv is None else s_kv
    h_kv = h_q if h_kv is None else h_kv
    d_v = d_qk if d_v is None else d_v
    ops = {}
    if layout == "thd":
        lens_q = [3, 0, 6, 4] if lens_q is None else list(lens_q)
        lens_kv = list(lens_q) if lens_kv is None else list(lens_kv)
        b = len(lens_q)
        starts_q, s_q = packed(lens_q, gaps_q)
        starts_kv, s_kv = packed(lens_kv, gaps_kv)
        ops["cu_seqlens_q"] = np.cumsum([0] + lens_q).astype(np.int32)
        ops["cu_seqlens_kv"] = np.cumsum([0] + lens_kv).astype(np.int32)
        if gaps_q is not None or gaps_kv is not None:
            ops["seq_offsets_q"] = np.array(starts_q + [s_q], np.int32)
            ops["seq_offsets_kv"] = np.array(starts_kv + [s_kv], np.int32)
    elif mask in PADDING_MASKS:
        if lens_q is None:
            lens_q = rng.integers(1, s_q + 1, b)
            lens_q[0] = s_q
        if lens_kv is None:
            lens_kv = rng.integers(1, s_kv + 1, b)
            lens_kv[0] = s_kv
        ops["seqlens_q"] = np.array(lens_q, np.int32)
        ops["seqlens_kv"] = np.array(lens_kv, np.int32)
    if mask == "arbitrary":
        ops["mask_tensor"] = rng.random(broadcast_shape(mask_shape, b, h_q, s_q, s_kv)) < 0.3
    if bias_kind in ("pre_scale", "post_scale"):
        ops["bias"] = round_to(rng.standard_normal(
            broadcast_shape(bias_shape, b, h_q, s_q, s_kv)), bias_elem)
    if bias_kind == "alibi":
        ops["alibi_slopes"] = rng.uniform(
            0.05, 0.6, (h_q,) if slopes_shape == "h" else (b, h_q)).astype(np.float32)
    if softmax == "learnable":
        ops["softmax_offset"] = rng.standard_normal((1, h_q, 1, 1)).astype(np.float32)
    if scale is not None:
        scale = float(np.float32(scale))     # the attribute is an f32
    cfg = Config(layout=layout, mask=mask, window=None if window is None else tuple(window),
                 scale=scale, bias_kind=bias_kind, softmax=softmax,
                 bottom_right_diagonal=bottom_right_diagonal, **ops)
    q = round_to(rng.standard_normal(head_shape(layout, b, s_q, h_q, d_qk)), elem)
    k = round_to(rng.standard_normal(head_shape(layout, b, s_kv, h_kv, d_qk)), elem)
    v = round_to(rng.standard_normal(head_shape(layout, b, s_kv, h_kv, d_v)), elem)
    d_o = round_to(o_scale * rng.standard_normal(q.shape[:-1] + (d_v,)), elem)
    return Case(cfg, elem, q, k, v, d_o, bias_elem=bias_elem)


# ---------------------------------------------------------------------------
# Programs and comparison.
# ---------------------------------------------------------------------------

# Optional operand groups in the assembly format's order.
GROUPS = (
    ("cu_seqlens", ("cu_seqlens_q", "cu_seqlens_kv")),
    ("seq_offsets", ("seq_offsets_q", "seq_offsets_kv")),
    ("seqlens", ("seqlens_q", "seqlens_kv")),
    ("mask_tensor", ("mask_tensor",)),
    ("bias_tensor", ("bias",)),
    ("alibi_slopes", ("alibi_slopes",)),
    ("softmax_offset", ("softmax_offset",)),
)


def tensor_type(shape, elem):
    return "tensor<" + "".join(f"{n}x" for n in shape) + elem + ">"


def program_text(case):
    """The te.attention_backward program for `case`, and its inputs."""
    cfg = case.cfg
    names = ["q", "k", "v", "o", "d_o", "lse"]
    arrays = {"q": case.q, "k": case.k, "v": case.v, "o": case.o,
              "d_o": case.d_o, "lse": case.lse}
    elems = {n: case.elem for n in names[:5]}
    elems["lse"] = "f32"
    clauses = [f"layout {cfg.layout}", f"mask {cfg.mask}"]
    if cfg.window is not None:
        clauses.append(f"window [{cfg.window[0]}, {cfg.window[1]}]")
    if cfg.bottom_right_diagonal is not None:
        clauses.append("bottom_right_diagonal "
                       + str(cfg.bottom_right_diagonal).lower())
    if cfg.scale is not None:
        clauses.append(f"scale {cfg.scale!r}")
    clauses += [f"bias {cfg.bias_kind}", f"softmax {cfg.softmax}"]
    for keyword, members in GROUPS:
        if getattr(cfg, members[0]) is not None:
            clauses.append(f"{keyword}(" + ", ".join(f"%{m}" for m in members) + ")")
            for m in members:
                array = getattr(cfg, m)
                names.append(m)
                arrays[m] = array
                elems[m] = {np.dtype(bool): "i1", np.dtype(np.int32): "i32"}.get(
                    array.dtype, case.bias_elem if m == "bias" else "f32")
    types = [tensor_type(arrays[n].shape, elems[n]) for n in names]
    results = [tensor_type(a.shape, e) for a, e in zip(
        [case.q, case.k, case.v] + [getattr(cfg, m) for m in ("bias", "softmax_offset")
                                    if getattr(cfg, m) is not None],
        case.result_elems())]
    values = ["%dq", "%dk", "%dv"] + (["%dbias"] if cfg.bias is not None else []) \
        + (["%dalpha"] if cfg.softmax_offset is not None else [])
    signature = ", ".join(f"%{n}: {t}" for n, t in zip(names, types))
    result_list = ", ".join(results)
    text = f"""
func.func @attention_backward({signature}) -> ({result_list}) {{
  {", ".join(values)} = te.attention_backward %q, %k, %v, %o, %d_o, %lse {" ".join(clauses)}
      : ({", ".join(types)}) -> ({result_list})
  return {", ".join(values)} : {result_list}
}}
"""
    return text, [np.ascontiguousarray(arrays[n]) for n in names]


RESULT_NAMES = ("dq", "dk", "dv", "dbias", "d_softmax_offset")


def tolerance(want, mag, elem):
    scale = mag + FLOOR * mag.max(initial=0.0)
    if elem == "f32":
        return F32_RTOL * scale
    return 2.0 ** (1 - PRECISION[elem]) * np.abs(want) + NARROW_M * scale


def check_result(name, got, want, mag, elem):
    assert got.shape == want.shape, (name, got.shape, want.shape)
    got = np.asarray(got, np.float64)
    structural = mag == 0
    assert (got[structural] == 0).all(), (
        f"{name}: {np.count_nonzero(got[structural])} entries that no visible "
        f"score reaches are not exactly 0, first at "
        f"{np.argwhere(structural & (got != 0))[0]}")
    tol = tolerance(want, mag, elem)
    err = np.abs(got - want)
    bad = ~(err <= tol)
    if bad.any():
        at = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{name}: {bad.sum()} of {bad.size} outside tolerance; first at {at}: "
            f"got {got[at]!r}, want {want[at]!r}, tol {tol[at]!r} (M {mag[at]!r}); "
            f"max err/tol {np.max(err / np.where(tol > 0, tol, np.inf)):.3g}")


def compare(case, outputs):
    want, mag = case.reference()
    wants, mags = want.results(), mag.results()
    names = [n for n, g in zip(RESULT_NAMES, dataclasses.astuple(want)) if g is not None]
    assert len(outputs) == len(wants), (len(outputs), names)
    for name, got, w, m, elem in zip(names, outputs, wants, mags, case.result_elems()):
        check_result(name, got, w, m, elem)


def run_case(te_run, case):
    text, inputs = program_text(case)
    outputs = te_run.run_kernel(te_run.program(text), inputs, outputs_f32=True)
    compare(case, outputs)
    return outputs


# ---------------------------------------------------------------------------
# Self-checks: finite differences (no te-run).
# ---------------------------------------------------------------------------

def loss(case, q=None, k=None, v=None, **cfg_changes):
    """L = sum(O * dO) through the reference's float64 forward."""
    cfg = dataclasses.replace(case.cfg, **cfg_changes)
    o, _ = forward(case.q if q is None else q, case.k if k is None else k,
                   case.v if v is None else v, cfg)
    return float((o * case.d_o.astype(np.float64)).sum())


def numeric_grad(fn, x, h=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        old = x[idx]
        x[idx] = old + h
        up = fn(x)
        x[idx] = old - h
        down = fn(x)
        x[idx] = old
        g[idx] = (up - down) / (2 * h)
    return g


def fd_check(case):
    """Reference gradients (from the exact forward O, LSE) == central
    differences of L, for q, k, v, bias and softmax_offset."""
    o, lse = forward(case.q, case.k, case.v, case.cfg)
    grads = backward(case.q, case.k, case.v, o, case.d_o, lse, case.cfg)
    checks = [("dq", grads.dq, numeric_grad(lambda x: loss(case, q=x), case.q)),
              ("dk", grads.dk, numeric_grad(lambda x: loss(case, k=x), case.k)),
              ("dv", grads.dv, numeric_grad(lambda x: loss(case, v=x), case.v))]
    if case.cfg.bias is not None:
        checks.append(("dbias", grads.dbias,
                       numeric_grad(lambda x: loss(case, bias=x), case.cfg.bias)))
    else:
        assert grads.dbias is None
    if case.cfg.softmax == "learnable":
        checks.append(("d_softmax_offset", grads.d_softmax_offset,
                       numeric_grad(lambda x: loss(case, softmax_offset=x),
                                    case.cfg.softmax_offset)))
    else:
        assert grads.d_softmax_offset is None
    for name, got, fd in checks:
        assert got.shape == fd.shape, name
        scale = max(1.0, np.abs(fd).max(initial=0.0))
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7 * scale, err_msg=name)
    return grads


TINY = dict(b=2, s_q=4, s_kv=5, h_q=4, h_kv=2, d_qk=3, d_v=2)
THD_TINY = dict(lens_q=[2, 0, 3, 1], lens_kv=[3, 2, 2, 0], gaps_q=[1, 0, 2, 0, 1],
                gaps_kv=[0, 1, 0, 2, 1], h_q=4, h_kv=2, d_qk=3, d_v=2)

FD_CASES = {
    # Every mask kind, s_q < s_kv and s_q > s_kv, padding with empty entries.
    **{f"mask-{m}-{sq}x{skv}": dict(TINY, mask=m, s_q=sq, s_kv=skv, b=3,
                                    lens_q=[sq, 2, 0] if m in PADDING_MASKS else None,
                                    lens_kv=[skv, 0, 3] if m in PADDING_MASKS else None)
       for m in MASKS for sq, skv in ((4, 5), (5, 3))},
    # Windows.
    "window-no_mask": dict(TINY, window=(1, 1)),
    "window-left": dict(TINY, window=(2, 0), s_q=5, s_kv=5),
    "window-right": dict(TINY, window=(0, 1), s_q=5, s_kv=3),
    "window-diag": dict(TINY, window=(0, 0), s_q=5, s_kv=3, softmax="off_by_one"),
    "window-causal": dict(TINY, mask="causal", window=(1, 0)),
    "window-causal_br": dict(TINY, mask="causal_bottom_right", window=(1, 0), s_q=3, s_kv=5),
    "window-padding": dict(TINY, mask="padding", window=(1, 2), lens_q=[4, 3], lens_kv=[5, 2]),
    "window-padding_causal_br": dict(TINY, mask="padding_causal_bottom_right",
                                     window=(1, -1), lens_q=[4, 2], lens_kv=[3, 5]),
    "window-arbitrary": dict(TINY, mask="arbitrary", window=(2, 1), mask_shape="h"),
    "window-top-left": dict(TINY, window=(1, 0), s_q=3, s_kv=5, bottom_right_diagonal=False),
    "window-padding-top-left": dict(TINY, mask="padding", window=(0, 1), lens_q=[4, 2],
                                    lens_kv=[5, 4], bottom_right_diagonal=False),
    "alibi-top-left": dict(TINY, bias_kind="alibi", s_q=3, s_kv=5,
                           bottom_right_diagonal=False),
    # GQA / MQA / MHA and head dims.
    "mqa": dict(TINY, h_q=3, h_kv=1, mask="causal"),
    "mha": dict(TINY, h_q=2, h_kv=2),
    "d_qk>d_v": dict(TINY, d_qk=4, d_v=1),
    "d_qk<d_v": dict(TINY, d_qk=1, d_v=4),
    "scale": dict(TINY, scale=-0.7, mask="causal_bottom_right"),
    # Layouts.
    **{f"layout-{l}": dict(TINY, layout=l, mask="padding_causal", lens_q=[4, 3],
                           lens_kv=[5, 2]) for l in ("sbhd", "bhsd")},
    **{f"thd-{m}": dict(THD_TINY, layout="thd", mask=m) for m in PADDING_MASKS},
    "thd-no-offsets": dict(THD_TINY, layout="thd", mask="padding_causal",
                           gaps_q=None, gaps_kv=None),
    "thd-window": dict(THD_TINY, layout="thd", mask="padding_causal_bottom_right",
                       window=(0, 0), softmax="off_by_one"),
    # Bias tensors with every broadcast shape.
    **{f"{kind}-{shape}": dict(TINY, bias_kind=kind, bias_shape=shape, mask="causal",
                                 scale=0.6 if kind == "pre_scale" else None)
       for kind in ("pre_scale", "post_scale") for shape in ("bh", "b", "h", "1")},
    "post_scale-padding": dict(TINY, bias_kind="post_scale", bias_shape="h", mask="padding",
                               lens_q=[3, 4], lens_kv=[5, 1]),
    # ALiBi.
    **{f"alibi-{shape}-{m}": dict(TINY, bias_kind="alibi", slopes_shape=shape, mask=m,
                                  lens_q=[4, 2], lens_kv=[3, 5])
       for shape in ("h", "bh") for m in ("no_mask", "padding_causal_bottom_right")},
    "alibi-thd": dict(THD_TINY, layout="thd", mask="padding", bias_kind="alibi",
                      slopes_shape="bh"),
    # Softmax kinds.
    **{f"softmax-{s}-{m}": dict(TINY, softmax=s, mask=m, lens_q=[4, 0], lens_kv=[3, 5])
       for s in ("vanilla", "off_by_one", "learnable")
       for m in ("no_mask", "padding_causal")},
    "learnable-thd": dict(THD_TINY, layout="thd", mask="padding_causal", softmax="learnable"),
    "learnable-pre_scale": dict(TINY, softmax="learnable", bias_kind="pre_scale",
                                bias_shape="b", window=(0, 0), s_q=5, s_kv=3),
    "everything": dict(TINY, layout="sbhd", mask="padding_causal_bottom_right",
                       window=(2, 0), scale=0.4, bias_kind="post_scale", bias_shape="h",
                       softmax="learnable", lens_q=[4, 2], lens_kv=[5, 3]),
}


@pytest.mark.parametrize("name", list(FD_CASES))
def test_selfcheck_finite_differences(name):
    kwargs = FD_CASES[name]
    case = make_case(zlib.crc32(name.encode()), **kwargs)
    grads = fd_check(case)
    # Each case exercises something: a non-zero gradient of every input.
    for g in grads.results():
        assert np.abs(g).max() > 1e-3


def random_kwargs(rng, layout, mask, bias_kind, softmax):
    h_kv = int(rng.choice([1, 2]))
    kwargs = dict(layout=layout, mask=mask, bias_kind=bias_kind, softmax=softmax,
                  b=int(rng.integers(1, 3)), s_q=int(rng.integers(1, 5)),
                  s_kv=int(rng.integers(1, 5)), h_kv=h_kv,
                  h_q=h_kv * int(rng.choice([1, 2])),
                  d_qk=int(rng.integers(1, 3)), d_v=int(rng.integers(1, 3)),
                  scale=None if rng.random() < 0.5 else rng.uniform(-1.5, 1.5),
                  bias_shape=str(rng.choice(["bh", "b", "h", "1"])),
                  slopes_shape=str(rng.choice(["h", "bh"])),
                  mask_shape=str(rng.choice(["bh", "b", "h", "1"])))
    if rng.random() < 0.5:
        # TE's windows: causal masks [>= -1, 0 or -1], the others [-1, -1]
        # or both bounds >= 0.
        if mask in CAUSAL_MASKS:
            kwargs["window"] = (int(rng.integers(-1, 3)), int(rng.integers(-1, 1)))
        else:
            kwargs["window"] = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
    if mask not in CAUSAL_MASKS and rng.random() < 0.5:
        kwargs["bottom_right_diagonal"] = bool(rng.random() < 0.5)
    if layout == "thd":
        count = int(rng.integers(1, 4))
        kwargs["lens_q"] = [int(x) for x in rng.integers(0, 4, count)]
        kwargs["lens_kv"] = [int(x) for x in rng.integers(0, 4, count)]
        if rng.random() < 0.5:
            kwargs["gaps_q"] = [int(x) for x in rng.integers(0, 2, count + 1)]
            kwargs["gaps_kv"] = [int(x) for x in rng.integers(0, 2, count + 1)]
    elif mask in PADDING_MASKS:
        kwargs["lens_q"] = rng.integers(0, kwargs["s_q"] + 1, kwargs["b"])
        kwargs["lens_kv"] = rng.integers(0, kwargs["s_kv"] + 1, kwargs["b"])
    return kwargs


@pytest.mark.parametrize("layout", LAYOUTS)
def test_selfcheck_finite_differences_random(layout):
    """Random small configurations: every mask kind of the layout, each with
    every bias and softmax kind, random windows, scales, heads, lengths."""
    rng = np.random.default_rng(zlib.crc32(layout.encode()))
    masks = PADDING_MASKS if layout == "thd" else MASKS
    biases = ["no_bias", "alibi"] + ([] if layout == "thd" else ["pre_scale", "post_scale"])
    for mask in masks:
        for bias_kind in biases:
            for softmax in ("vanilla", "off_by_one", "learnable"):
                kwargs = random_kwargs(rng, layout, mask, bias_kind, softmax)
                fd_check(make_case(int(rng.integers(1 << 30)), **kwargs))


# ---------------------------------------------------------------------------
# Self-checks: identities (no te-run).
# ---------------------------------------------------------------------------

def grads_of(case, **cfg_changes):
    cfg = dataclasses.replace(case.cfg, **cfg_changes)
    o, lse = forward(case.q, case.k, case.v, cfg)
    return backward(case.q, case.k, case.v, o, case.d_o, lse, cfg)


def test_selfcheck_forward_facts():
    """The dense forward on cases small enough to write out by hand."""
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 1, 4, 1, 3))
    cfg = Config("bshd", mask="causal", scale=0.5)
    o, lse = forward(q, k, v, cfg)
    x = 0.5 * q[0, :, 0] @ k[0, :, 0].T
    for i in range(4):
        w = np.exp(x[i, :i + 1])
        np.testing.assert_allclose(o[0, i, 0], w @ v[0, :i + 1, 0] / w.sum(), rtol=1e-13)
        assert lse[0, 0, i, 0] == pytest.approx(math.log(w.sum()), abs=1e-13)
    # Bottom-right, s_q = 2 < s_kv = 4, learnable: query 0 sees keys 0..2.
    alpha = np.full((1, 1, 1, 1), -0.3)
    cfg = Config("bshd", mask="causal_bottom_right", softmax="learnable",
                 softmax_offset=alpha)
    o, lse = forward(q[:, :2], k, v, cfg)
    x = q[0, 0, 0] @ k[0, :3, 0].T / math.sqrt(3)
    assert lse[0, 0, 0, 0] == pytest.approx(math.log(math.exp(-0.3) + np.exp(x).sum()))
    np.testing.assert_allclose(o[0, 0, 0], np.exp(x - lse[0, 0, 0, 0]) @ v[0, :3, 0])
    # A row that sees nothing: O = 0, LSE = log E. The diagonal window
    # [0, 0] with s_q = 4 > s_kv = 2 leaves rows 2, 3 without keys when
    # aligned top-left, rows 0, 1 when aligned bottom-right (the default).
    for softmax, want in (("vanilla", -np.inf), ("off_by_one", 0.0)):
        cfg = Config("bshd", window=(0, 0), softmax=softmax,
                     bottom_right_diagonal=False)
        o, lse = forward(q, k[:, :2], v[:, :2], cfg)
        assert (o[0, 2:] == 0).all() and (lse[0, 0, 2:, 0] == want).all()
        assert (o[0, :2] != 0).all()
        cfg = Config("bshd", window=(0, 0), softmax=softmax)
        o, lse = forward(q, k[:, :2], v[:, :2], cfg)
        assert (o[0, :2] == 0).all() and (lse[0, 0, :2, 0] == want).all()
        if softmax == "vanilla":  # one key each: O is its V row
            np.testing.assert_allclose(o[0, 2:, 0], v[0, :2, 0], rtol=1e-13)


def test_selfcheck_learnable_zero_is_off_by_one():
    case = make_case(2, mask="padding_causal", softmax="learnable",
                     **dict(TINY, lens_q=[4, 1], lens_kv=[5, 2]))
    zero = np.zeros_like(case.cfg.softmax_offset)
    a = grads_of(case, softmax_offset=zero)
    b = grads_of(case, softmax="off_by_one", softmax_offset=None)
    for x, y in zip(a.results()[:3], b.results()):
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15)


def test_selfcheck_row_sums_of_dbias():
    """sum_j dS_ij = D_i (1 - sum_j P_ij) = D_i E exp(-LSE_i): zero for the
    vanilla softmax, and for learnable -d_alpha_h = sum_{n,i,j} dS."""
    case = make_case(3, bias_kind="post_scale", bias_shape="bh", mask="padding",
                     b=2, s_q=6, s_kv=5, lens_q=[6, 3], lens_kv=[5, 2])
    np.testing.assert_allclose(grads_of(case).dbias.sum(-1), 0, atol=1e-13)
    learn = make_case(3, bias_kind="post_scale", bias_shape="bh", mask="padding",
                      softmax="learnable", b=2, s_q=6, s_kv=5, lens_q=[6, 3],
                      lens_kv=[5, 2])
    g = grads_of(learn)
    np.testing.assert_allclose(-g.d_softmax_offset.reshape(-1),
                               g.dbias.sum(axis=(0, 2, 3)), rtol=1e-12)
    # pre_scale bias: dbias is scale * dS, i.e. scale * the post_scale one
    # for the same scores (pre bias B == post bias scale * B).
    pre = make_case(4, bias_kind="pre_scale", bias_shape="h", scale=0.5, **TINY)
    post_cfg = dict(bias_kind="post_scale", bias=pre.cfg.bias * 0.5)
    np.testing.assert_allclose(grads_of(pre).dbias, 0.5 * grads_of(pre, **post_cfg).dbias,
                               rtol=1e-12)
    np.testing.assert_allclose(grads_of(pre).dq, grads_of(pre, **post_cfg).dq, rtol=1e-12)


def test_selfcheck_gqa_is_repeated_mha():
    """GQA gradients: dq as MHA with each kv head repeated, dk / dv the sum of
    the repeated heads' gradients over the group."""
    case = make_case(5, mask="causal", b=2, s_q=5, s_kv=6, h_q=6, h_kv=2, d_qk=3, d_v=2)
    g = grads_of(case)
    mha = dataclasses.replace(case, k=np.repeat(case.k, 3, axis=2),
                              v=np.repeat(case.v, 3, axis=2))
    r = grads_of(mha)
    np.testing.assert_allclose(g.dq, r.dq, rtol=1e-13)
    summed = lambda x: x.reshape(x.shape[:2] + (2, 3) + x.shape[3:]).sum(3)
    np.testing.assert_allclose(g.dk, summed(r.dk), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g.dv, summed(r.dv), rtol=1e-12, atol=1e-15)


def test_selfcheck_layouts_agree():
    case = make_case(6, mask="padding_causal_bottom_right", b=2, s_q=4, s_kv=6, h_q=4,
                     h_kv=2, d_qk=3, d_v=2, lens_q=[4, 4], lens_kv=[6, 6])
    g = grads_of(case)
    full = dict(mask="causal_bottom_right", seqlens_q=None, seqlens_kv=None)
    np.testing.assert_array_equal(grads_of(case, **full).dq, g.dq)
    for layout, axes in (("sbhd", (1, 0, 2, 3)), ("bhsd", (0, 2, 1, 3))):
        moved = Case(dataclasses.replace(case.cfg, layout=layout), "f32",
                     *(x.transpose(axes) for x in (case.q, case.k, case.v, case.d_o)))
        h = grads_of(moved)
        for x, y in zip(h.results(), g.results()):
            np.testing.assert_allclose(x.transpose(axes), y, rtol=1e-14)
    # thd: the two sequences packed, with gaps before, between and after.
    def pack(x, gaps):
        pad = lambda n: np.zeros((n,) + x.shape[2:])
        return np.concatenate([pad(gaps[0]), x[0], pad(gaps[1]), x[1], pad(gaps[2])])
    gq, gkv = (1, 2, 1), (0, 3, 2)
    thd_cfg = Config("thd", mask="padding_causal_bottom_right",
                     cu_seqlens_q=[0, 4, 8], cu_seqlens_kv=[0, 6, 12],
                     seq_offsets_q=[1, 7, 11], seq_offsets_kv=[0, 9, 15])
    thd = Case(thd_cfg, "f32", pack(case.q, gq), pack(case.k, gkv), pack(case.v, gkv),
               pack(case.d_o, gq))
    t = grads_of(thd)
    for x, y, gaps in ((t.dq, g.dq, gq), (t.dk, g.dk, gkv), (t.dv, g.dv, gkv)):
        np.testing.assert_allclose(x, pack(y, gaps), rtol=1e-13, atol=1e-16)
    assert (t.dq[[0, 5, 6, 11]] == 0).all()


def test_selfcheck_uses_given_lse_and_o():
    """P comes from the given LSE and D from the given O: shifting LSE by c
    scales P (so dv) by exp(-c); with O = 0 given, dS = P dP."""
    case = make_case(7, mask="causal", **TINY)
    o, lse = forward(case.q, case.k, case.v, case.cfg)
    g = backward(case.q, case.k, case.v, o, case.d_o, lse, case.cfg)
    g2 = backward(case.q, case.k, case.v, o, case.d_o, lse + 0.5, case.cfg)
    np.testing.assert_allclose(g2.dv, g.dv * math.exp(-0.5), rtol=1e-13)
    g3 = backward(case.q, case.k, case.v, np.zeros_like(o), case.d_o, lse, case.cfg)
    assert np.abs(g3.dq - g.dq).max() > 1e-3


def test_selfcheck_structural_zeros():
    """Gradients no visible score reaches are exactly 0 with M = 0, and
    everything else has M > 0."""
    case = make_case(8, layout="thd", mask="padding_causal_bottom_right", window=(1, 0),
                     softmax="learnable", lens_q=[3, 0, 4, 2], lens_kv=[0, 2, 5, 3],
                     gaps_q=[2, 1, 0, 1, 2], gaps_kv=[1, 0, 2, 1, 1])
    want, mag = case.reference()
    for g, m in zip(want.results(), mag.results()):
        assert (g[m == 0] == 0).all()
    # Sequence 0 has no keys, sequence 1 no queries. Sequence 2 (4 queries,
    # 5 keys, diagonal shifted by 1, window 1 back): query i sees keys
    # i..i+1. Sequence 3 (2 queries, 3 keys): the same. So the live query
    # tokens are sequences 2 and 3, the live keys all of theirs.
    starts_q, _ = packed([3, 0, 4, 2], [2, 1, 0, 1, 2])
    starts_kv, _ = packed([0, 2, 5, 3], [1, 0, 2, 1, 1])
    live_q = np.zeros(case.q.shape[0], bool)
    live_q[starts_q[2]:starts_q[2] + 4] = live_q[starts_q[3]:starts_q[3] + 2] = True
    live_kv = np.zeros(case.k.shape[0], bool)
    live_kv[starts_kv[2]:starts_kv[2] + 5] = live_kv[starts_kv[3]:starts_kv[3] + 3] = True
    assert ((mag.dq != 0).any(axis=(1, 2)) == live_q).all()
    assert ((mag.dk != 0).any(axis=(1, 2)) == live_kv).all()
    assert ((mag.dv != 0).any(axis=(1, 2)) == live_kv).all()
    assert (want.dq[~live_q] == 0).all() and (want.dk[~live_kv] == 0).all()


# Configurations of the te-run tests below, filled in as they are defined.
TE_RUN_CASES = {}


def te_case(name, seed, **kwargs):
    TE_RUN_CASES[name] = (seed, kwargs)
    return name


def test_selfcheck_f32_model_within_tolerance():
    """An all-f32 evaluation of every te-run configuration stays within a
    quarter of the f32 tolerance (1e-4 relative to M) before rounding, and
    rounded to the result's element type within the tolerance of that type
    (for bf16 / f16 the final rounding alone is up to half an ulp, 2^-8
    resp. 2^-11 relative, of the 2^-7 resp. 2^-10 allowed)."""
    worst_f32, worst_elem = 0.0, 0.0
    for name, (seed, kwargs) in TE_RUN_CASES.items():
        case = make_case(seed, **kwargs)
        want, mag = case.reference()
        model = case.reference(np.float32)[0]
        for got, w, m, elem in zip(model.results(), want.results(), mag.results(),
                                   case.result_elems()):
            got = got.astype(np.float64)
            assert (got[m == 0] == 0).all(), name
            for value, tol_elem in ((got, "f32"), (round_to(got, elem), elem)):
                tol = tolerance(w, m, tol_elem)
                live = tol > 0
                ratio = (np.abs(value - w)[live] / tol[live]).max(initial=0.0)
                if tol_elem == "f32":
                    worst_f32 = max(worst_f32, ratio)
                else:
                    worst_elem = max(worst_elem, ratio)
    assert len(TE_RUN_CASES) > 50
    assert worst_f32 < 0.25, worst_f32
    assert worst_elem < 0.75, worst_elem


def test_selfcheck_tolerance_catches_bugs():
    """Plausible kernel bugs exceed the tolerances."""
    case = make_case(9, mask="causal", bias_kind="post_scale", softmax="learnable",
                     b=2, s_q=9, s_kv=9, h_q=4, h_kv=2, d_qk=8, d_v=8)
    want, mag = case.reference()
    def bwd(lse=case.lse, **changes):
        return backward(case.q, case.k, case.v, case.o, case.d_o, lse,
                        dataclasses.replace(case.cfg, **changes))
    bugs = {
        "no scale": bwd(scale=1.0),
        "bias before the scale": bwd(bias_kind="pre_scale"),
        "one key too few": bwd(window=(7, 0)),
        "lse off by 0.1": bwd(lse=case.lse + 0.1),
        "alpha ignored": bwd(softmax_offset=np.zeros_like(case.cfg.softmax_offset)),
    }
    for bug, got in bugs.items():
        caught = False
        for g, w, m in zip(got.results(), want.results(), mag.results()):
            if (np.abs(g - w) > tolerance(w, m, "bf16")).any():
                caught = True
        assert caught, bug


# ---------------------------------------------------------------------------
# te-run against the reference.
# ---------------------------------------------------------------------------

def run_named(te_run, name):
    seed, kwargs = TE_RUN_CASES[name]
    return run_case(te_run, make_case(seed, **kwargs))


SEQ_SHAPES = [(9, 9), (7, 12), (12, 7)]

MASK_CASES = [te_case(f"mask-{mask}-{s_q}x{s_kv}", 1, mask=mask, s_q=s_q, s_kv=s_kv,
                      b=3, h_q=4, h_kv=2,
                      lens_q=[s_q, 4, 0] if mask in PADDING_MASKS else None,
                      lens_kv=[s_kv, 0, 5] if mask in PADDING_MASKS else None)
              for mask in MASKS for s_q, s_kv in SEQ_SHAPES]


@pytest.mark.parametrize("name", MASK_CASES)
def test_mask_kinds(te_run, name):
    run_named(te_run, name)


ARBITRARY_CASES = [te_case(f"arbitrary-{shape}", 2, mask="arbitrary", mask_shape=shape,
                           s_q=6, s_kv=10) for shape in ("1", "b", "h")]


@pytest.mark.parametrize("name", ARBITRARY_CASES)
def test_arbitrary_mask_broadcast(te_run, name):
    run_named(te_run, name)


WINDOWS = [
    ("no_mask", (2, 2), 9, 9),
    ("no_mask", (3, 0), 9, 9),
    ("no_mask", (0, 2), 9, 9),
    ("no_mask", (0, 0), 12, 7),          # rows 7.. see nothing
    ("no_mask", (1, 4), 7, 12),
    ("padding", (1, 3), 9, 11),
    ("causal", (2, 0), 9, 9),
    ("causal", (4, -1), 9, 12),
    ("causal_bottom_right", (2, 0), 7, 12),
    ("causal_bottom_right", (3, -1), 12, 7),
    ("padding_causal", (2, 0), 9, 9),
    ("padding_causal_bottom_right", (2, -1), 7, 12),
    ("padding_causal_bottom_right", (0, 0), 12, 7),
    ("arbitrary", (2, 2), 9, 9),
]
WINDOW_CASES = [te_case(f"window-{m}-{w[0]}_{w[1]}-{sq}x{skv}", 3, mask=m, window=w,
                        s_q=sq, s_kv=skv,
                        lens_q=[sq, 5] if m in PADDING_MASKS else None,
                        lens_kv=[skv - 2, 6] if m in PADDING_MASKS else None)
                for m, w, sq, skv in WINDOWS]
# Windows and ALiBi on the top-left diagonal (bottom_right_diagonal false),
# and the default bottom-right one, where s_q != s_kv makes them differ.
WINDOW_CASES += [te_case(f"diagonal-{m}-{bias}-{d}-{sq}x{skv}", 3, mask=m, window=w,
                         s_q=sq, s_kv=skv, bias_kind=bias, bottom_right_diagonal=d,
                         lens_q=[sq, 5] if m in PADDING_MASKS else None,
                         lens_kv=[skv - 2, 6] if m in PADDING_MASKS else None)
                 for m, w, sq, skv in (("no_mask", (2, 1), 7, 12),
                                       ("padding", (1, 2), 9, 11),
                                       ("arbitrary", (3, 0), 11, 6))
                 for bias in ("no_bias", "alibi") for d in (None, False)]
WINDOW_CASES.append(te_case("window-thd", 3, layout="thd",
                            mask="padding_causal_bottom_right", window=(1, 0),
                            lens_q=[3, 0, 6, 4], lens_kv=[4, 3, 8, 5],
                            gaps_q=[1, 2, 0, 3, 2], gaps_kv=[0, 1, 2, 0, 4]))


@pytest.mark.parametrize("name", WINDOW_CASES)
def test_window(te_run, name):
    run_named(te_run, name)


GQA_CASES = [te_case(f"heads-{layout}-{h_q}-{h_kv}", 4, layout=layout,
                     mask="padding_causal" if layout == "thd" else "causal",
                     h_q=h_q, h_kv=h_kv, s_q=10)
             for layout in LAYOUTS for h_q, h_kv in ((4, 4), (6, 2), (8, 1))]


@pytest.mark.parametrize("name", GQA_CASES)
def test_gqa_mqa(te_run, name):
    run_named(te_run, name)


LAYOUT_CASES = [te_case(f"layout-{layout}-{elem}", 5, layout=layout, elem=elem,
                        mask="padding_causal", s_q=11, s_kv=11, h_q=4, h_kv=2, d_qk=16,
                        lens_q=None if layout == "thd" else [11, 6],
                        lens_kv=None if layout == "thd" else [11, 9])
                for layout in LAYOUTS for elem in ("f32", "bf16", "f16")]


@pytest.mark.parametrize("name", LAYOUT_CASES)
def test_layouts_and_types(te_run, name):
    run_named(te_run, name)


THD_VARIANTS = {
    # Ragged self-attention lengths with an empty sequence.
    "ragged": dict(lens_q=[3, 0, 7, 5]),
    # Different kv lengths, an empty kv with queries, tokens after the end.
    "cross": dict(lens_q=[3, 0, 7, 5], lens_kv=[5, 2, 4, 0], gaps_q=[0, 0, 0, 0, 3],
                  gaps_kv=[0, 0, 0, 0, 1]),
    # seq_offsets: padding before, between and after the sequences.
    "offsets": dict(lens_q=[3, 0, 7, 5], lens_kv=[4, 3, 9, 5], gaps_q=[1, 2, 0, 3, 2],
                    gaps_kv=[0, 1, 2, 0, 4]),
}
THD_CASES = [te_case(f"thd-{mask}-{variant}-{elem}", 6, layout="thd", elem=elem,
                     mask=mask, h_q=4, h_kv=2, **THD_VARIANTS[variant])
             for mask in PADDING_MASKS for variant in THD_VARIANTS
             for elem in ("f32", "bf16")]


@pytest.mark.parametrize("name", THD_CASES)
def test_thd(te_run, name):
    run_named(te_run, name)


BIAS_CASES = [te_case(f"bias-{kind}-{shape}", 7, bias_kind=kind, bias_shape=shape,
                      mask="causal_bottom_right", s_q=7, s_kv=12, scale=0.3)
              for kind in ("pre_scale", "post_scale") for shape in ("1", "b", "h", "bh")]
BIAS_CASES += [te_case(f"bias-{kind}-{shape}-bf16-{be}", 7, elem="bf16", bias_elem=be,
                       bias_kind=kind, bias_shape=shape, mask="padding", layout="sbhd",
                       lens_q=[9, 5], lens_kv=[9, 4])
               for kind in ("pre_scale", "post_scale") for shape in ("h", "bh")
               for be in ("f32", "bf16")]


@pytest.mark.parametrize("name", BIAS_CASES)
def test_bias_tensor(te_run, name):
    """dbias: summed over the broadcast dimensions, in bias_tensor's type."""
    run_named(te_run, name)


ALIBI_CASES = [te_case(f"alibi-{shape}-{mask}-{sq}x{skv}", 8, bias_kind="alibi",
                       slopes_shape=shape, mask=mask, s_q=sq, s_kv=skv,
                       lens_q=[sq, 3] if mask in PADDING_MASKS else None,
                       lens_kv=[skv, 8] if mask in PADDING_MASKS else None)
               for shape in ("h", "bh")
               for mask, sq, skv in (("no_mask", 7, 12), ("causal", 12, 7),
                                     ("padding_causal_bottom_right", 7, 12))]
ALIBI_CASES += [te_case(f"alibi-thd-{shape}", 8, layout="thd", mask="padding",
                        bias_kind="alibi", slopes_shape=shape, **THD_VARIANTS["cross"])
                for shape in ("h", "bh")]


@pytest.mark.parametrize("name", ALIBI_CASES)
def test_alibi(te_run, name):
    run_named(te_run, name)


SOFTMAX_CASES = [te_case(f"softmax-{softmax}-{mask}-{sq}x{skv}", 9, softmax=softmax,
                         mask=mask, s_q=sq, s_kv=skv, b=3,
                         lens_q=[9, 0, 6] if mask == "padding" else None,
                         lens_kv=[9, 4, 0] if mask == "padding" else None)
                 for softmax in ("vanilla", "off_by_one", "learnable")
                 for mask, sq, skv in (("causal_bottom_right", 12, 7), ("padding", 9, 9),
                                       ("no_mask", 5, 16))]
SOFTMAX_CASES += [te_case(f"softmax-{softmax}-thd", 9, layout="thd", mask="padding_causal",
                          softmax=softmax, **THD_VARIANTS["offsets"])
                  for softmax in ("off_by_one", "learnable")]
SOFTMAX_CASES += [te_case(f"softmax-learnable-{elem}", 9, elem=elem, softmax="learnable",
                          mask="causal", h_q=4, h_kv=1) for elem in ("bf16", "f16")]


@pytest.mark.parametrize("name", SOFTMAX_CASES)
def test_softmax_kinds(te_run, name):
    """d_softmax_offset for learnable (f32 [1, h_q, 1, 1])."""
    run_named(te_run, name)


HEAD_DIM_CASES = [te_case(f"head-dims-{d_qk}-{d_v}-{elem}", 10, elem=elem, mask="causal",
                          layout="bhsd", d_qk=d_qk, d_v=d_v)
                  for d_qk, d_v in ((16, 4), (4, 12), (1, 3)) for elem in ("f32", "bf16")]


@pytest.mark.parametrize("name", HEAD_DIM_CASES)
def test_head_dims(te_run, name):
    run_named(te_run, name)


SCALE_CASES = [te_case(f"scale-{scale}", 11, mask="padding_causal_bottom_right",
                       scale=scale, s_q=8, s_kv=12, bias_kind="pre_scale", bias_shape="b")
               for scale in (0.3, -0.7, 2.0)]


@pytest.mark.parametrize("name", SCALE_CASES)
def test_explicit_scale(te_run, name):
    run_named(te_run, name)


DEAD_CASES = [te_case(f"dead-rows-{softmax}", 12, mask="padding_causal_bottom_right",
                      window=(1, 0), softmax=softmax, b=4, s_q=12, s_kv=7,
                      lens_q=[12, 0, 5, 9], lens_kv=[7, 3, 0, 2])
              for softmax in ("vanilla", "off_by_one", "learnable")]


@pytest.mark.parametrize("name", DEAD_CASES)
def test_fully_masked_rows_and_keys(te_run, name):
    """Padding rows, a batch entry without keys, rows above the bottom-right
    diagonal, keys beyond len_kv and keys no window reaches: exact zeros."""
    seed, kwargs = TE_RUN_CASES[name]
    case = make_case(seed, **kwargs)
    _, mag = case.reference()
    assert (mag.dq == 0).all(axis=-1).any() and (mag.dk == 0).all(axis=-1).any()
    run_case(te_run, case)


EVERYTHING_CASES = [te_case(f"everything-{elem}", 13, layout="sbhd", elem=elem,
                            mask="padding_causal_bottom_right", window=(3, 0), scale=0.4,
                            bias_kind="post_scale", bias_shape="h", softmax="learnable",
                            b=3, s_q=9, s_kv=14, h_q=8, h_kv=2, d_qk=16, d_v=8,
                            lens_q=[9, 2, 6], lens_kv=[14, 5, 3])
                    for elem in ("f32", "bf16")]
EVERYTHING_CASES += [te_case(f"everything-thd-{elem}", 14, layout="thd", elem=elem,
                             mask="padding_causal_bottom_right", window=(2, -1), scale=-0.5,
                             bias_kind="alibi", slopes_shape="bh", softmax="learnable",
                             h_q=6, h_kv=3, d_qk=12, d_v=16, **THD_VARIANTS["offsets"])
                     for elem in ("f32", "bf16")]
EVERYTHING_CASES.append(te_case("largest", 15, mask="causal", s_q=24, s_kv=24, h_q=4,
                                h_kv=2, d_qk=16, d_v=16, o_scale=4.0))


@pytest.mark.parametrize("name", EVERYTHING_CASES)
def test_everything_at_once(te_run, name):
    run_named(te_run, name)


@pytest.mark.parametrize("layout", ["bshd", "thd"])
def test_given_o_and_lse_are_used(te_run, layout):
    """The contract: P_ij = exp(x_ij - lse_i) from the GIVEN lse and
    D_i = d_o_i . o_i from the GIVEN o, not from a recomputed forward. Perturb
    o and lse on the rows that see a key (rows that see none keep O = 0 and
    LSE = log E, which is all the contract says about them)."""
    kwargs = dict(mask="padding_causal", softmax="learnable", h_q=4, h_kv=2)
    if layout == "thd":
        kwargs.update(layout="thd", bias_kind="alibi", **THD_VARIANTS["offsets"])
    else:
        kwargs.update(bias_kind="post_scale", lens_q=[9, 5], lens_kv=[9, 7])
    case = make_case(16, **kwargs)
    rng = np.random.default_rng(16)
    live = (case.o != 0).any(axis=-1)                  # [tokens..., h]
    noise = 0.1 * rng.standard_normal(case.o.shape) * live[..., None]
    case.o = round_to(case.o + noise, case.elem)
    lse_live = live if layout == "thd" else np.moveaxis(live, 1, 2)   # bshd -> bhs
    shift = rng.uniform(-0.3, 0.3, case.lse.shape) * lse_live[..., None]
    case.lse = (case.lse + shift).astype(np.float32)
    run_case(te_run, case)


# ---------------------------------------------------------------------------
# The programs parse and verify (te-opt; no CPU lowering needed).
# ---------------------------------------------------------------------------

TE_OPT = os.environ.get("TE_OPT", str(Path(TE_RUN).with_name("te-opt")))


@pytest.mark.skipif(not Path(TE_OPT).exists(), reason="te-opt not built")
def test_programs_verify(tmp_path):
    texts = []
    for name, (seed, kwargs) in TE_RUN_CASES.items():
        text, _ = program_text(make_case(seed, **kwargs))
        texts.append(text.replace("@attention_backward(", f"@case{len(texts)}("))
    path = tmp_path / "all.mlir"
    path.write_text("\n".join(texts))
    proc = subprocess.run([TE_OPT, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("te.attention_backward") == len(texts)
