"""te.attention (forward) compiled for the CPU against a numpy reference.

Two groups of tests live here:

* `test_selfcheck_*` validate the reference in attention_reference.py
  itself and do NOT run te-run: against `naive_attention` below (a dense,
  loop-based, literal transcription of the op's contract, computed
  differently: one full score matrix per batch entry -- for thd a single
  token-by-token matrix over the whole packed tensor -- with masks built
  entry by entry and the softmax written as exp(x) / (E + sum exp(x))
  without any max-shift), and against facts that need no implementation.
  Select them with `-k selfcheck`.
* every other test builds a te.attention program, runs it through te-run
  on seeded random inputs and compares O (and LSE) with the reference.

Tolerances (the kernel computes in f32, the reference in f64):
* f32 inputs: rtol = atol = 1e-5 on O and LSE. Each score carries an f32
  error of about d_qk * 2^-24 * |q||k| (<~ 2e-6 here), exp turns that into
  the same relative error on each weight, and O is a weighted mean of
  |v| <~ 4, so |dO| is a few 1e-6 at worst; test_selfcheck_f32_model checks
  that an all-f32 evaluation stays well inside these bounds.
* bf16 / f16 inputs: the reference runs on the rounded inputs and its O is
  rounded to the element type; the kernel may land on the neighbouring
  value when the f64 result is close to a rounding boundary, so one ulp of
  the element type (2^-8 / 2^-11 relative, measured exactly at the value)
  plus atol 1e-5 for results near zero is allowed. LSE is f32 either way.
* rows without a visible key must give exactly O = 0 and LSE = log(E).
"""
import math
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from attention_reference import (LAYOUTS, MASKS, PADDING_MASKS, attention,
                                 round_to, ulp)

F32_TOL = 1e-5
NARROW_ATOL = 1e-5
CAUSAL_MASKS = ("causal", "causal_bottom_right", "padding_causal",
                "padding_causal_bottom_right")
BOTTOM_RIGHT = ("causal_bottom_right", "padding_causal_bottom_right")

# ---------------------------------------------------------------------------
# Cases: seeded random inputs for one te.attention configuration.
# ---------------------------------------------------------------------------

# Optional operand groups in the order of the op's assembly format, with the
# reference's keyword for each operand.
GROUPS = (
    ("cu_seqlens", ("cu_seqlens_q", "cu_seqlens_kv")),
    ("seq_offsets", ("seq_offsets_q", "seq_offsets_kv")),
    ("seqlens", ("seqlens_q", "seqlens_kv")),
    ("mask_tensor", ("mask_tensor",)),
    ("bias_tensor", ("bias",)),
    ("alibi_slopes", ("alibi_slopes",)),
    ("softmax_offset", ("softmax_offset",)),
)


def head_shape(layout, b, s, h, d):
    return {"bshd": (b, s, h, d), "sbhd": (s, b, h, d), "bhsd": (b, h, s, d),
            "thd": (s, h, d)}[layout]


def broadcast_shape(kind, b, h, s_q, s_kv):
    """[1 or b, 1 or h, s_q, s_kv] from "bh", "b", "h" or "1"."""
    return (b if "b" in kind else 1, h if "h" in kind else 1, s_q, s_kv)


def pack(lens, gaps):
    """Starts of ragged sequences with `gaps[n]` free tokens before sequence
    n (and gaps[len(lens)] after the last one); returns starts, total."""
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
    layout: str
    elem: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: str = "no_mask"
    window: tuple = None
    scale: float = None
    bias_kind: str = "no_bias"
    softmax: str = "vanilla"
    operands: dict = field(default_factory=dict)   # reference keyword -> array
    bias_elem: str = "f32"
    return_lse: bool = True
    bottom_right_diagonal: bool = None

    def reference_kwargs(self):
        return dict(mask=self.mask, window=self.window, scale=self.scale,
                    bias_kind=self.bias_kind, softmax=self.softmax,
                    bottom_right_diagonal=self.bottom_right_diagonal,
                    **self.operands)

    def reference(self):
        return attention(self.q, self.k, self.v, self.layout,
                         **self.reference_kwargs())

    def naive(self, dtype=np.float64):
        return naive_attention(self.q, self.k, self.v, self.layout,
                               dtype=dtype, **self.reference_kwargs())


def make_case(seed=0, *, layout="bshd", elem="f32", mask="no_mask",
              window=None, scale=None, bias_kind="no_bias", softmax="vanilla",
              b=2, s_q=9, s_kv=None, h_q=4, h_kv=None, d_qk=16, d_v=None,
              lens_q=None, lens_kv=None, gaps_q=None, gaps_kv=None,
              bias_shape="bh", bias_elem="f32", slopes_shape="h",
              mask_shape="bh", return_lse=True, bottom_right_diagonal=None):
    """Random inputs (N(0,1), rounded to `elem`) for one configuration.

    Non-thd padding masks take per-sequence lengths lens_q / lens_kv
    (default: random, the first entry full). thd takes ragged lens_q /
    lens_kv (default [3, 0, 7, 5] for both) and, with gaps_q / gaps_kv,
    seq_offsets with that many free tokens before each sequence (one more
    entry: free tokens after the last one).
    """
    rng = np.random.default_rng(seed)
    s_kv = s_q if s_kv is None else s_kv
    h_kv = h_q if h_kv is None else h_kv
    d_v = d_qk if d_v is None else d_v
    ops = {}
    if layout == "thd":
        lens_q = [3, 0, 7, 5] if lens_q is None else list(lens_q)
        lens_kv = list(lens_q) if lens_kv is None else list(lens_kv)
        b = len(lens_q)
        starts_q, s_q = pack(lens_q, gaps_q)
        starts_kv, s_kv = pack(lens_kv, gaps_kv)
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
        ops["mask_tensor"] = rng.random(
            broadcast_shape(mask_shape, b, h_q, s_q, s_kv)) < 0.3
    if bias_kind in ("pre_scale", "post_scale"):
        ops["bias"] = round_to(rng.standard_normal(
            broadcast_shape(bias_shape, b, h_q, s_q, s_kv)), bias_elem)
    if bias_kind == "alibi":
        ops["alibi_slopes"] = rng.uniform(
            0.05, 0.6, (h_q,) if slopes_shape == "h" else (b, h_q)).astype(np.float32)
    if softmax == "learnable":
        ops["softmax_offset"] = rng.standard_normal((1, h_q, 1, 1)).astype(np.float32)
    q = round_to(rng.standard_normal(head_shape(layout, b, s_q, h_q, d_qk)), elem)
    k = round_to(rng.standard_normal(head_shape(layout, b, s_kv, h_kv, d_qk)), elem)
    v = round_to(rng.standard_normal(head_shape(layout, b, s_kv, h_kv, d_v)), elem)
    if scale is not None:
        scale = float(np.float32(scale))   # the attribute is an f32
    return Case(layout, elem, q, k, v, mask=mask,
                window=None if window is None else tuple(window), scale=scale,
                bias_kind=bias_kind, softmax=softmax, operands=ops,
                bias_elem=bias_elem, return_lse=return_lse,
                bottom_right_diagonal=bottom_right_diagonal)


# ---------------------------------------------------------------------------
# Programs and comparison.
# ---------------------------------------------------------------------------

def tensor_type(shape, elem):
    return "tensor<" + "".join(f"{n}x" for n in shape) + elem + ">"


def operand_elem(case, name, array):
    if name in ("q", "k", "v"):
        return case.elem
    if name == "bias":
        return case.bias_elem
    if array.dtype == np.bool_:
        return "i1"
    if array.dtype == np.int32:
        return "i32"
    return "f32"


def program_text(case):
    """The te.attention program for `case`, and its inputs in order."""
    names = ["q", "k", "v"]
    arrays = {"q": case.q, "k": case.k, "v": case.v, **case.operands}
    config = [f"layout {case.layout}", f"mask {case.mask}"]
    if case.window is not None:
        config.append(f"window [{case.window[0]}, {case.window[1]}]")
    if case.bottom_right_diagonal is not None:
        config.append("bottom_right_diagonal "
                      + str(case.bottom_right_diagonal).lower())
    if case.scale is not None:
        config.append(f"scale {case.scale!r}")
    config += [f"bias {case.bias_kind}", f"softmax {case.softmax}"]
    for keyword, members in GROUPS:
        if members[0] in case.operands:
            names += members
            config.append(f"{keyword}(" + ", ".join(f"%{m}" for m in members) + ")")
    types = [tensor_type(arrays[n].shape, operand_elem(case, n, arrays[n]))
             for n in names]
    o_type = tensor_type(case.q.shape[:-1] + case.v.shape[-1:], case.elem)
    h_q = case.q.shape[1 if case.layout == "bhsd" else -2]
    if case.layout == "thd":
        lse_shape = (case.q.shape[0], h_q, 1)
    else:
        qb = case.q.transpose({"bshd": (0, 2, 1, 3), "sbhd": (1, 2, 0, 3),
                               "bhsd": (0, 1, 2, 3)}[case.layout])
        lse_shape = (qb.shape[0], h_q, qb.shape[2], 1)
    results = [o_type] + ([tensor_type(lse_shape, "f32")] if case.return_lse else [])
    values = ", ".join(["%o"] + (["%lse"] if case.return_lse else []))
    if case.return_lse:
        config.append("{return_lse}")
    signature = ", ".join(f"%{n}: {t}" for n, t in zip(names, types))
    result_list = ", ".join(results)
    text = f"""
func.func @attention({signature}) -> ({result_list}) {{
  {values} = te.attention %q, %k, %v {" ".join(config)}
      : ({", ".join(types)}) -> ({result_list})
  return {values} : {result_list}
}}
"""
    return text, [arrays[n] for n in names]


def compare(case, got_o, got_lse=None):
    """Checks te-run's outputs against the reference (see the tolerances)."""
    want_o, want_lse = case.reference()
    assert got_o.shape == want_o.shape, (got_o.shape, want_o.shape)
    got_o = got_o.astype(np.float64)
    # Rows without a visible key: exactly zero.
    dead = (want_o == 0).all(axis=-1)
    assert (got_o[dead] == 0).all(), "rows without a visible key must be 0"
    if case.elem == "f32":
        np.testing.assert_allclose(got_o, want_o, rtol=F32_TOL, atol=F32_TOL)
    else:
        want_r = round_to(want_o, case.elem).astype(np.float64)
        err = np.abs(got_o - want_r)
        allowed = ulp(want_r, case.elem) + NARROW_ATOL
        bad = ~(err <= allowed)
        assert not bad.any(), (
            f"{bad.sum()} of {bad.size} outside 1 {case.elem} ulp; first at "
            f"{np.argwhere(bad)[0]}: got {got_o[bad][0]!r}, want {want_r[bad][0]!r}"
            f" (unrounded {want_o[bad][0]!r})")
    if got_lse is not None:
        assert got_lse.shape == want_lse.shape, (got_lse.shape, want_lse.shape)
        np.testing.assert_allclose(got_lse.astype(np.float64), want_lse,
                                   rtol=F32_TOL, atol=F32_TOL)


def run_case(te_run, case):
    text, inputs = program_text(case)
    outputs = te_run.run_kernel(te_run.program(text), inputs, outputs_f32=True)
    assert len(outputs) == (2 if case.return_lse else 1)
    compare(case, *outputs)
    return outputs


# ---------------------------------------------------------------------------
# The naive dense implementation (self-checks only).
# ---------------------------------------------------------------------------

def _at(layout, n, s, h):
    """Index of (batch n, position s, head h) in a non-thd tensor."""
    return {"bshd": (n, s, h), "sbhd": (s, n, h), "bhsd": (n, h, s)}[layout]


def naive_attention(q, k, v, layout, *, mask="no_mask", window=None,
                    scale=None, bias_kind="no_bias", bias=None,
                    alibi_slopes=None, softmax="vanilla", softmax_offset=None,
                    seqlens_q=None, seqlens_kv=None, cu_seqlens_q=None,
                    cu_seqlens_kv=None, seq_offsets_q=None,
                    seq_offsets_kv=None, mask_tensor=None,
                    bottom_right_diagonal=None, dtype=np.float64):
    """Literal, loop-based te.attention; `dtype` float32 models the kernel."""
    # Where windows, ALiBi and the causal mask put the diagonal (TE's
    # DotProductAttention): fixed by the causal kinds, else the caller's
    # choice, bottom-right by default.
    if mask in ("causal", "padding_causal"):
        bottom_right = False
    elif mask in BOTTOM_RIGHT:
        bottom_right = True
    else:
        bottom_right = bottom_right_diagonal in (None, True)
    f = dtype
    q, k, v = (np.asarray(a, np.float64).astype(f) for a in (q, k, v))
    heads_axis = 1 if layout == "thd" else layout.index("h")
    h_q, h_kv = q.shape[heads_axis], k.shape[heads_axis]
    d_qk, d_v = q.shape[-1], v.shape[-1]
    scale = f(1.0 / math.sqrt(d_qk)) if scale is None else f(scale)
    left, right = (-1, -1) if window is None else window
    if softmax == "vanilla":
        extra = [f(0.0)] * h_q
    elif softmax == "off_by_one":
        extra = [f(1.0)] * h_q
    else:
        extra = [np.exp(f(a)) for a in np.ravel(softmax_offset)]
    group = h_q // h_kv

    # Token tables: who[r] = (sequence, position) or None; lengths per sequence.
    if layout == "thd":
        cu_q, cu_kv = list(map(int, cu_seqlens_q)), list(map(int, cu_seqlens_kv))
        count = len(cu_q) - 1
        len_q = [cu_q[n + 1] - cu_q[n] for n in range(count)]
        len_kv = [cu_kv[n + 1] - cu_kv[n] for n in range(count)]
        start_q = cu_q if seq_offsets_q is None else list(map(int, seq_offsets_q))
        start_kv = cu_kv if seq_offsets_kv is None else list(map(int, seq_offsets_kv))
        who_q, who_kv = [None] * q.shape[0], [None] * k.shape[0]
        for n in range(count):
            for p in range(len_q[n]):
                assert who_q[start_q[n] + p] is None, "overlapping sequences"
                who_q[start_q[n] + p] = (n, p)
            for p in range(len_kv[n]):
                assert who_kv[start_kv[n] + p] is None, "overlapping sequences"
                who_kv[start_kv[n] + p] = (n, p)
        entries = [(who_q, who_kv)]
        dense_q = [q.transpose(1, 0, 2)]
        dense_k = [k.transpose(1, 0, 2)]
        dense_v = [v.transpose(1, 0, 2)]
    else:
        dims = dict(zip(layout, q.shape))
        batch, s_q = dims["b"], dims["s"]
        s_kv = dict(zip(layout, k.shape))["s"]
        if mask in PADDING_MASKS:
            len_q, len_kv = list(map(int, seqlens_q)), list(map(int, seqlens_kv))
        else:
            len_q, len_kv = [s_q] * batch, [s_kv] * batch
        entries, dense_q, dense_k, dense_v = [], [], [], []
        for n in range(batch):
            entries.append(([(n, i) for i in range(s_q)],
                            [(n, j) for j in range(s_kv)]))
            gather = lambda x, s, heads: np.array(
                [[x[_at(layout, n, p, h)] for p in range(s)] for h in range(heads)])
            dense_q.append(gather(q, s_q, h_q))
            dense_k.append(gather(k, s_kv, h_kv))
            dense_v.append(gather(v, s_kv, h_kv))

    def visible(h, who_i, who_j):
        if who_i is None or who_j is None or who_i[0] != who_j[0]:
            return False
        n, i = who_i
        _, j = who_j
        lq, lkv = len_q[n], len_kv[n]
        if i >= lq or j >= lkv:        # padding query row / padding key
            return False
        shift = lkv - lq if bottom_right else 0
        if mask in CAUSAL_MASKS and not j <= i + shift:
            return False
        if mask == "arbitrary":
            m = mask_tensor
            if m[0 if m.shape[0] == 1 else n, 0 if m.shape[1] == 1 else h, i, j]:
                return False
        if left != -1 and j < i + shift - left:
            return False
        if right != -1 and j > i + shift + right:
            return False
        return True

    def score(dot, h, who_i, who_j):
        n, i = who_i
        j = who_j[1]
        if bias_kind == "pre_scale":
            return scale * (dot + f(bias[0 if bias.shape[0] == 1 else n,
                                         0 if bias.shape[1] == 1 else h, i, j]))
        if bias_kind == "post_scale":
            return scale * dot + f(bias[0 if bias.shape[0] == 1 else n,
                                        0 if bias.shape[1] == 1 else h, i, j])
        if bias_kind == "alibi":
            slopes = np.asarray(alibi_slopes)
            slope = slopes[h] if slopes.ndim == 1 else slopes[n, h]
            shift = len_kv[n] - len_q[n] if bottom_right else 0
            return scale * dot - f(slope) * f(abs(i + shift - j))
        return scale * dot

    outs, lses = [], []
    for (who_q, who_kv), qd, kd, vd in zip(entries, dense_q, dense_k, dense_v):
        k_rep = np.repeat(kd, group, axis=0)
        v_rep = np.repeat(vd, group, axis=0)
        dots = qd @ k_rep.transpose(0, 2, 1)          # the full score matrix
        o = np.zeros((h_q, len(who_q), d_v), f)
        lse = np.zeros((h_q, len(who_q)), f)
        for h in range(h_q):
            for r, who_i in enumerate(who_q):
                cols = [c for c, who_j in enumerate(who_kv)
                        if visible(h, who_i, who_j)]
                if not cols:
                    lse[h, r] = -np.inf if extra[h] == 0 else np.log(extra[h])
                    continue
                x = np.array([score(dots[h, r, c], h, who_i, who_kv[c])
                              for c in cols], f)
                e = np.exp(x)
                denom = extra[h] + e.sum(dtype=f)
                o[h, r] = (e / denom) @ v_rep[h, cols]
                lse[h, r] = np.log(denom)
        outs.append(o)
        lses.append(lse)

    if layout == "thd":
        return outs[0].transpose(1, 0, 2), lses[0].T[..., None]
    out = np.zeros(head_shape(layout, len(outs), len(entries[0][0]), h_q, d_v), f)
    for n, o in enumerate(outs):
        for h in range(h_q):
            for s in range(o.shape[1]):
                out[_at(layout, n, s, h)] = o[h, s]
    return out, np.stack(lses)[..., None]


# ---------------------------------------------------------------------------
# Self-checks of the reference (no te-run needed).
# ---------------------------------------------------------------------------

def valid_combinations():
    for layout in LAYOUTS:
        for mask in MASKS:
            if layout == "thd" and mask not in PADDING_MASKS:
                continue
            yield layout, mask


def random_case(rng, layout, mask, bias_kind, softmax):
    """A random small configuration with every option drawn at random."""
    h_kv = int(rng.choice([1, 2]))
    h_q = h_kv * int(rng.choice([1, 2, 3]))
    s_q, s_kv = (int(s) for s in rng.integers(1, 11, 2))
    causal = mask in CAUSAL_MASKS
    window = None
    if rng.random() < 0.6:
        # TE's windows: causal masks [>= -1, 0 or -1], the others [-1, -1]
        # or both bounds >= 0.
        if causal:
            window = (int(rng.integers(-1, 5)), int(rng.integers(-1, 1)))
        elif rng.random() < 0.2:
            window = (-1, -1)
        else:
            window = (int(rng.integers(0, 5)), int(rng.integers(0, 5)))
    # bottom_right_diagonal: unset, or a value the mask allows.
    allowed = {"causal": [False], "padding_causal": [False],
               "causal_bottom_right": [True],
               "padding_causal_bottom_right": [True]}.get(mask, [False, True])
    choice = int(rng.integers(0, len(allowed) + 1))
    bottom_right_diagonal = None if choice == len(allowed) else allowed[choice]
    kwargs = dict(layout=layout, mask=mask, bias_kind=bias_kind,
                  bottom_right_diagonal=bottom_right_diagonal,
                  softmax=softmax, b=int(rng.integers(1, 4)), s_q=s_q,
                  s_kv=s_kv, h_q=h_q, h_kv=h_kv,
                  d_qk=int(rng.integers(1, 9)), d_v=int(rng.integers(1, 9)),
                  window=window,
                  scale=None if rng.random() < 0.5 else rng.uniform(-1.5, 1.5),
                  bias_shape=str(rng.choice(["bh", "b", "h", "1"])),
                  slopes_shape=str(rng.choice(["h", "bh"])),
                  mask_shape=str(rng.choice(["bh", "b", "h", "1"])))
    if layout == "thd":
        count = int(rng.integers(1, 5))
        kwargs["lens_q"] = [int(x) for x in rng.integers(0, 8, count)]
        kwargs["lens_kv"] = [int(x) for x in rng.integers(0, 8, count)]
        if rng.random() < 0.5:
            kwargs["gaps_q"] = [int(x) for x in rng.integers(0, 3, count + 1)]
            kwargs["gaps_kv"] = [int(x) for x in rng.integers(0, 3, count + 1)]
    elif mask in PADDING_MASKS:
        b = kwargs["b"]
        kwargs["lens_q"] = rng.integers(0, s_q + 1, b)
        kwargs["lens_kv"] = rng.integers(0, s_kv + 1, b)
    return make_case(int(rng.integers(1 << 30)), **kwargs)


@pytest.mark.parametrize("layout,mask", list(valid_combinations()))
def test_selfcheck_reference_matches_naive(layout, mask):
    """Reference == naive dense implementation on random configurations
    covering every layout x mask, each with every bias and softmax kind and
    random windows, scales, GQA/MQA, head dims, lengths (zero included)."""
    rng = np.random.default_rng(zlib.crc32(f"{layout} {mask}".encode()))
    biases = ["no_bias", "alibi"] + ([] if layout == "thd" else ["pre_scale", "post_scale"])
    for bias_kind in biases:
        for softmax in ("vanilla", "off_by_one", "learnable"):
            for _ in range(3):
                case = random_case(rng, layout, mask, bias_kind, softmax)
                want_o, want_lse = case.reference()
                got_o, got_lse = case.naive()
                np.testing.assert_allclose(got_o, want_o, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(got_lse, want_lse, rtol=1e-6, atol=1e-6)


SELFCHECK_FIXED = [
    dict(layout="thd", mask="padding", lens_q=[3, 0, 7, 5]),
    dict(layout="thd", mask="padding_causal", lens_q=[3, 0, 7, 5], lens_kv=[5, 2, 7, 0]),
    dict(layout="thd", mask="padding_causal_bottom_right", lens_q=[3, 0, 7, 5],
         lens_kv=[6, 2, 4, 9], gaps_q=[1, 2, 0, 3, 2], gaps_kv=[0, 1, 2, 0, 4],
         window=(2, 0), bias_kind="alibi", slopes_shape="bh", softmax="learnable"),
    dict(layout="bshd", mask="padding_causal_bottom_right", s_q=13, s_kv=7, b=3,
         lens_q=[13, 5, 0], lens_kv=[7, 0, 4], softmax="off_by_one", window=(1, 0)),
    dict(layout="sbhd", mask="arbitrary", mask_shape="h", window=(2, 2),
         bias_kind="pre_scale", bias_shape="b", softmax="learnable", h_q=8, h_kv=2),
    dict(layout="bhsd", mask="causal_bottom_right", s_q=13, s_kv=7, h_q=8, h_kv=1,
         d_qk=32, d_v=8, bias_kind="post_scale", bias_shape="1", window=(3, -1)),
    dict(layout="bshd", mask="no_mask", s_q=13, s_kv=7, window=(0, 0),
         bias_kind="alibi", scale=-0.7),
]


@pytest.mark.parametrize("kwargs", SELFCHECK_FIXED)
def test_selfcheck_reference_matches_naive_fixed(kwargs):
    """The shapes the te-run tests use, incl. zero-length thd sequences,
    seq_offsets gaps, fully masked rows and all-padding batch entries."""
    case = make_case(11, **kwargs)
    want_o, want_lse = case.reference()
    got_o, got_lse = case.naive()
    np.testing.assert_allclose(got_o, want_o, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_lse, want_lse, rtol=1e-6, atol=1e-6)


def test_selfcheck_f32_model_within_tolerance():
    """An all-f32 evaluation (the naive code in float32) of the te-run test
    configurations stays far inside rtol = atol = 1e-5 of the f64 reference,
    and inside it where the scores are large: ALiBi at scale 2 and the
    pre-scale bias give scores (and lse) up to about 40, whose f32 rounding
    alone is 40 * 2^-24 before exp amplifies it into o. How much of that the
    model shows depends on the host's f32 dot and exp kernels: up to 2.5e-6
    on hosts with AVX-512, 8.1e-6 on an AMD EPYC with AVX2 only."""
    def worst(cases):
        excess_max = 0.0
        for case in cases:
            want_o, want_lse = case.reference()
            got_o, got_lse = case.naive(np.float32)
            for got, want in ((got_o, want_o), (got_lse, want_lse)):
                finite = np.isfinite(want)
                assert (got[~finite] == want[~finite]).all()
                excess = np.abs(got[finite] - want[finite]) / (1 + np.abs(want[finite]))
                excess_max = max(excess_max, excess.max(initial=0.0))
        return excess_max

    plain = [make_case(3, **kw) for kw in SELFCHECK_FIXED] + [
        make_case(4, mask="causal", s_q=33, s_kv=33, h_q=2, d_qk=32)]
    large = [make_case(5, mask="no_mask", bias_kind="alibi", s_q=33, s_kv=33, h_q=2,
                       d_qk=32, scale=2.0),
             make_case(6, mask="no_mask", bias_kind="pre_scale", s_q=20, h_q=2,
                       d_qk=32, scale=1.0)]
    assert worst(plain) < F32_TOL / 4
    assert worst(large) < F32_TOL


# Facts that need no implementation.

def one_head(q, k, v, **kwargs):
    """Reference on single [s, d] matrices (bshd with b = h = 1)."""
    o, lse = attention(q[None, :, None], k[None, :, None], v[None, :, None],
                       "bshd", **kwargs)
    return o[0, :, 0], lse[0, 0, :, 0]


def test_selfcheck_causal_first_row_is_v0():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 6, 5))
    o, lse = one_head(q, k, v, mask="causal")
    assert np.array_equal(o[0], v[0])
    assert lse[0] == pytest.approx(q[0] @ k[0] / math.sqrt(5), abs=1e-15)
    # Bottom-right with s_kv = s_q + 2: the first query sees keys 0..2.
    o, _ = one_head(q[:4], k, v, mask="causal_bottom_right")
    x = q[0] @ k[:3].T / math.sqrt(5)
    p = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(o[0], p @ v[:3], rtol=1e-14)


def test_selfcheck_uniform_scores_average_v():
    rng = np.random.default_rng(2)
    k, v = rng.standard_normal((2, 7, 4))
    q = np.zeros((7, 4))
    o, lse = one_head(q, k, v)
    np.testing.assert_allclose(o, np.broadcast_to(v.mean(0), o.shape), rtol=1e-14)
    np.testing.assert_allclose(lse, np.log(7), rtol=1e-14)
    o, lse = one_head(q, k, v, mask="causal")
    for i in range(7):
        np.testing.assert_allclose(o[i], v[:i + 1].mean(0), rtol=1e-13)
        assert lse[i] == pytest.approx(math.log(i + 1), abs=1e-14)
    # off_by_one with n zero scores: P = 1 / (n + 1) each.
    o, lse = one_head(q, k, v, softmax="off_by_one")
    np.testing.assert_allclose(o[0], v.sum(0) / 8, rtol=1e-13)
    np.testing.assert_allclose(lse, np.log(8), rtol=1e-14)


def test_selfcheck_very_negative_scores():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((3, 5, 4))
    bias = np.full((1, 1, 5, 5), -1000.0)
    o, lse = one_head(q, k, v, softmax="off_by_one", bias_kind="post_scale", bias=bias)
    assert np.abs(o).max() < 1e-300 and np.abs(lse).max() < 1e-300
    # Vanilla softmax is shift-invariant: same O, LSE shifted by -1000.
    o0, lse0 = one_head(q, k, v)
    o1, lse1 = one_head(q, k, v, bias_kind="post_scale", bias=bias)
    np.testing.assert_allclose(o1, o0, rtol=1e-12)
    np.testing.assert_allclose(lse1, lse0 - 1000, rtol=1e-14)


def test_selfcheck_lse_is_logsumexp():
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 6, 8))
    x = q @ k.T * 0.3
    causal = np.tril(np.ones((6, 6), bool))
    for softmax, log_e in (("vanilla", None), ("off_by_one", 0.0), ("learnable", -0.4)):
        kwargs = {}
        if softmax == "learnable":
            kwargs["softmax_offset"] = np.full((1, 1, 1, 1), log_e)
        o, lse = one_head(q, k, v, scale=0.3, mask="causal", softmax=softmax, **kwargs)
        for i in range(6):
            terms = list(x[i, causal[i]]) + ([] if log_e is None else [log_e])
            want = math.log(math.fsum(math.exp(t) for t in terms))
            assert lse[i] == pytest.approx(want, abs=1e-13)
            p = np.exp(x[i, causal[i]] - want)
            np.testing.assert_allclose(o[i], p @ v[causal[i]], rtol=1e-12)


def test_selfcheck_weights_sum():
    """With v = 1: O = sum of P = 1 - E * exp(-LSE) (1 for vanilla)."""
    for softmax in ("vanilla", "off_by_one", "learnable"):
        case = make_case(5, mask="padding_causal", softmax=softmax, d_v=1)
        case.v[:] = 1.0
        o, lse = case.reference()
        log_e = {"vanilla": -np.inf, "off_by_one": 0.0}.get(softmax)
        if log_e is None:
            log_e = case.operands["softmax_offset"].reshape(1, -1, 1, 1)
        live = (o != 0).any(-1)   # bshd [b, s, h]
        with np.errstate(invalid="ignore"):     # -inf - -inf on dead rows
            want = 1 - np.exp(log_e - lse)           # [b, h, s, 1]
        np.testing.assert_allclose(o[..., 0][live], want[..., 0].transpose(0, 2, 1)[live],
                                   rtol=1e-13)


def test_selfcheck_empty_rows_give_log_e():
    """Fully masked rows, padding rows and thd tokens outside sequences."""
    for softmax, want in (("vanilla", -np.inf), ("off_by_one", 0.0), ("learnable", None)):
        case = make_case(6, layout="thd", mask="padding_causal_bottom_right",
                         lens_q=[3, 0, 4], lens_kv=[0, 5, 2], gaps_q=[2, 1, 1, 3],
                         gaps_kv=[0, 0, 0, 0], softmax=softmax)
        o, lse = case.reference()
        # Seq 0 has no keys, seq 2's first two queries are above the diagonal.
        dead = np.ones(case.q.shape[0], bool)
        dead[[2 + 4 + 1 + 2, 2 + 4 + 1 + 3]] = False   # seq 2, positions 2 and 3
        assert (o[dead] == 0).all() and (o[~dead] != 0).all()
        expect = want if want is not None else case.operands["softmax_offset"].reshape(-1)
        assert (lse[dead, :, 0] == expect).all()


def test_selfcheck_equivalences():
    base = dict(b=2, s_q=7, s_kv=7, h_q=4, d_qk=8)
    ref = lambda case, **kw: attention(case.q, case.k, case.v, case.layout,
                                       **{**case.reference_kwargs(), **kw})
    c = make_case(7, **base)
    full = np.array([7, 7], np.int32)
    # Padding masks with full lengths are their non-padding counterparts.
    for padded, plain in (("padding", "no_mask"), ("padding_causal", "causal"),
                          ("padding_causal_bottom_right", "causal_bottom_right")):
        a = ref(c, mask=padded, seqlens_q=full, seqlens_kv=full)
        b = ref(c, mask=plain)
        np.testing.assert_array_equal(a[0], b[0])
    # Windows: [-1, -1] is no window, whatever the diagonal; a window
    # reaching every key changes nothing. On no_mask the window's diagonal
    # is bottom-right unless bottom_right_diagonal is false (TE's default),
    # so with s_kv > s_q window [s_kv, 0] is causal_bottom_right, and the
    # top-left window [s_kv, s_kv - s_q] is too.
    np.testing.assert_array_equal(ref(c, window=(-1, -1))[0], ref(c)[0])
    np.testing.assert_array_equal(ref(c, window=(7, 7))[0], ref(c)[0])
    np.testing.assert_array_equal(ref(c, window=(7, 0))[0], ref(c, mask="causal")[0])
    wide = make_case(8, **{**base, "s_kv": 11})
    np.testing.assert_array_equal(
        ref(wide, window=(-1, -1), bottom_right_diagonal=False)[0], ref(wide)[0])
    np.testing.assert_array_equal(ref(wide, window=(11, 0))[0],
                                  ref(wide, mask="causal_bottom_right")[0])
    np.testing.assert_array_equal(
        ref(wide, window=(11, 0), bottom_right_diagonal=False)[0],
        ref(wide, mask="causal")[0])
    np.testing.assert_array_equal(
        ref(wide, window=(11, 4), bottom_right_diagonal=False)[0],
        ref(wide, mask="causal_bottom_right")[0])
    np.testing.assert_array_equal(
        ref(wide, window=(2, 1), bottom_right_diagonal=True)[0],
        ref(wide, window=(2, 1))[0])
    # causal_bottom_right's window is bottom-right whatever the default.
    np.testing.assert_array_equal(
        ref(wide, mask="causal_bottom_right", window=(2, 0))[0],
        ref(wide, window=(2, 0))[0])
    # arbitrary with the upper triangle excluded is causal.
    upper = ~np.tril(np.ones((7, 7), bool))[None, None]
    np.testing.assert_array_equal(ref(c, mask="arbitrary", mask_tensor=upper)[0],
                                  ref(c, mask="causal")[0])
    # pre_scale bias B == post_scale bias scale * B.
    bias = np.random.default_rng(9).standard_normal((2, 4, 7, 7))
    np.testing.assert_allclose(ref(c, bias_kind="pre_scale", bias=bias, scale=0.4)[0],
                               ref(c, bias_kind="post_scale", bias=0.4 * bias, scale=0.4)[0],
                               rtol=1e-12)
    # alibi == post_scale with the explicit bottom-right distance matrix.
    slopes = np.array([0.1, 0.2, 0.3, 0.5])
    dist = np.abs(np.arange(11)[None] - np.arange(7)[:, None] - 4)
    np.testing.assert_allclose(
        ref(wide, bias_kind="alibi", alibi_slopes=slopes)[0],
        ref(wide, bias_kind="post_scale", bias=-(slopes[:, None, None] * dist)[None])[0],
        rtol=1e-12)
    # Top-left ALiBi (bottom_right_diagonal false) uses |i - j|.
    flat = np.abs(np.arange(11)[None] - np.arange(7)[:, None])
    np.testing.assert_allclose(
        ref(wide, bias_kind="alibi", alibi_slopes=slopes,
            bottom_right_diagonal=False)[0],
        ref(wide, bias_kind="post_scale", bias=-(slopes[:, None, None] * flat)[None])[0],
        rtol=1e-12)
    # learnable alpha = 0 is off_by_one.
    zero = np.zeros((1, 4, 1, 1))
    np.testing.assert_allclose(ref(c, softmax="learnable", softmax_offset=zero)[1],
                               ref(c, softmax="off_by_one")[1], rtol=1e-15)
    # Doubling q and halving the scale changes nothing.
    np.testing.assert_allclose(
        attention(2 * c.q, c.k, c.v, "bshd", scale=0.25)[0],
        attention(c.q, c.k, c.v, "bshd", scale=0.5)[0], rtol=1e-13)


def test_selfcheck_layouts_and_heads_agree():
    c = make_case(10, mask="causal", b=2, s_q=6, s_kv=9, h_q=6, h_kv=2, d_qk=4, d_v=3)
    o, lse = attention(c.q, c.k, c.v, "bshd", mask="causal")
    for layout, axes in (("sbhd", (1, 0, 2, 3)), ("bhsd", (0, 2, 1, 3))):
        o2, lse2 = attention(*(a.transpose(axes) for a in (c.q, c.k, c.v)), layout,
                             mask="causal")
        np.testing.assert_array_equal(o2.transpose(axes), o)
        np.testing.assert_array_equal(lse2, lse)
    # GQA: the same as MHA with each kv head repeated for its query heads.
    o3, _ = attention(c.q, np.repeat(c.k, 3, axis=2), np.repeat(c.v, 3, axis=2),
                      "bshd", mask="causal")
    np.testing.assert_allclose(o3, o, rtol=1e-15)
    # thd with two full-length sequences (with and without offsets) is bshd.
    cu_q, cu_kv = np.array([0, 6, 12]), np.array([0, 9, 18])
    o4, lse4 = attention(c.q.reshape(12, 6, 4), c.k.reshape(18, 2, 4),
                         c.v.reshape(18, 2, 3), "thd", mask="padding_causal",
                         cu_seqlens_q=cu_q, cu_seqlens_kv=cu_kv)
    np.testing.assert_allclose(o4.reshape(o.shape), o, rtol=1e-15)
    np.testing.assert_allclose(lse4.reshape(2, 6, 6).transpose(0, 2, 1),
                               lse[..., 0], rtol=1e-15)
    pad = lambda x: np.concatenate([np.zeros((1,) + x.shape[1:]), x[:len(x) // 2],
                                    np.zeros((2,) + x.shape[1:]), x[len(x) // 2:]])
    o5, lse5 = attention(pad(c.q.reshape(12, 6, 4)), pad(c.k.reshape(18, 2, 4)),
                         pad(c.v.reshape(18, 2, 3)), "thd", mask="padding_causal",
                         cu_seqlens_q=cu_q, cu_seqlens_kv=cu_kv,
                         seq_offsets_q=[1, 9, 15], seq_offsets_kv=[1, 12, 21])
    keep = np.r_[1:7, 9:15]
    np.testing.assert_array_equal(o5[keep], o4)
    assert (o5[[0, 7, 8]] == 0).all() and np.isneginf(lse5[[0, 7, 8]]).all()


def test_selfcheck_programs_parse():
    """The program builder emits what the round-trip tests spell."""
    text, inputs = program_text(make_case(
        0, layout="thd", mask="padding_causal", window=(2, 0), scale=0.3,
        bias_kind="alibi", softmax="learnable", gaps_q=[0, 1, 0, 0, 2]))
    assert ("layout thd mask padding_causal window [2, 0] scale 0.30000001192092896 "
            "bias alibi softmax learnable cu_seqlens(%cu_seqlens_q, %cu_seqlens_kv) "
            "seq_offsets(%seq_offsets_q, %seq_offsets_kv) alibi_slopes(%alibi_slopes) "
            "softmax_offset(%softmax_offset) {return_lse}") in text
    assert "-> (tensor<18x4x16xf32>, tensor<18x4x1xf32>)" in text
    assert [a.dtype for a in inputs[3:]] == [np.int32] * 4 + [np.float32] * 2


# ---------------------------------------------------------------------------
# te-run against the reference.
# ---------------------------------------------------------------------------

SEQ_SHAPES = [(9, 9), (7, 13), (13, 7)]


@pytest.mark.parametrize("s_q,s_kv", SEQ_SHAPES)
@pytest.mark.parametrize("mask", MASKS)
def test_mask_kinds(te_run, mask, s_q, s_kv):
    run_case(te_run, make_case(1, mask=mask, s_q=s_q, s_kv=s_kv, b=3,
                               lens_q=[s_q, 4, 1] if mask in PADDING_MASKS else None,
                               lens_kv=[s_kv, 2, 6] if mask in PADDING_MASKS else None))


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("layout", ["bshd", "sbhd", "bhsd"])
def test_layouts_and_types(te_run, layout, elem):
    run_case(te_run, make_case(2, layout=layout, elem=elem, mask="padding_causal",
                               s_q=11, s_kv=11, h_q=4, h_kv=2, d_qk=32))


THD_VARIANTS = {
    # Ragged self-attention lengths with an empty sequence.
    "ragged": dict(lens_q=[3, 0, 7, 5]),
    # Different kv lengths, one empty kv with queries, tokens after the end.
    "cross": dict(lens_q=[3, 0, 7, 5], lens_kv=[5, 2, 4, 0], gaps_q=[0, 0, 0, 0, 3],
                  gaps_kv=[0, 0, 0, 0, 1]),
    # seq_offsets: padding between (and before, and after) the sequences.
    "offsets": dict(lens_q=[3, 0, 7, 5], lens_kv=[4, 3, 9, 5], gaps_q=[1, 2, 0, 3, 2],
                    gaps_kv=[0, 1, 2, 0, 4]),
}


@pytest.mark.parametrize("elem", ["f32", "bf16"])
@pytest.mark.parametrize("variant", list(THD_VARIANTS))
@pytest.mark.parametrize("mask", PADDING_MASKS)
def test_thd(te_run, mask, variant, elem):
    run_case(te_run, make_case(3, layout="thd", elem=elem, mask=mask, h_q=4, h_kv=2,
                               **THD_VARIANTS[variant]))


WINDOWS = [
    ("no_mask", (2, 2), 9, 9),
    ("no_mask", (3, 0), 9, 9),
    ("no_mask", (0, 2), 9, 9),
    ("no_mask", (0, 0), 13, 7),          # diagonal; rows 7.. see nothing
    ("no_mask", (1, 4), 7, 13),
    ("padding", (1, 3), 9, 11),
    ("causal", (2, 0), 9, 9),
    ("causal", (4, -1), 9, 13),
    ("causal_bottom_right", (2, 0), 7, 13),
    ("causal_bottom_right", (3, -1), 13, 7),
    ("padding_causal", (2, 0), 9, 9),
    ("padding_causal_bottom_right", (2, -1), 7, 13),
    ("padding_causal_bottom_right", (0, 0), 13, 7),
    ("arbitrary", (2, 2), 9, 9),
]


@pytest.mark.parametrize("mask,window,s_q,s_kv", WINDOWS)
def test_window(te_run, mask, window, s_q, s_kv):
    run_case(te_run, make_case(4, mask=mask, window=window, s_q=s_q, s_kv=s_kv,
                               lens_q=[s_q, 5] if mask in PADDING_MASKS else None,
                               lens_kv=[s_kv - 2, 6] if mask in PADDING_MASKS else None))


# The diagonal that windows and ALiBi align to (bottom_right_diagonal): TE's
# default (bottom-right for no_mask, padding and arbitrary) and each explicit
# value, with s_q != s_kv so that the alignments differ; thd and padding use
# the actual lengths.
DIAGONALS = [
    ("no_mask", (2, 1), 7, 13, None),
    ("no_mask", (2, 1), 7, 13, False),
    ("no_mask", (1, 0), 13, 7, True),
    ("no_mask", (1, 0), 13, 7, False),
    ("padding", (1, 2), 9, 13, None),
    ("padding", (1, 2), 9, 13, False),
    ("arbitrary", (3, 0), 11, 6, None),
    ("arbitrary", (3, 0), 11, 6, False),
    ("causal", (2, 0), 7, 13, False),
    ("padding_causal_bottom_right", (2, 0), 7, 13, True),
]


@pytest.mark.parametrize("bias_kind", ["no_bias", "alibi"])
@pytest.mark.parametrize("mask,window,s_q,s_kv,diagonal", DIAGONALS)
def test_window_diagonal(te_run, mask, window, s_q, s_kv, diagonal, bias_kind):
    run_case(te_run, make_case(
        12, mask=mask, window=window, s_q=s_q, s_kv=s_kv, bias_kind=bias_kind,
        bottom_right_diagonal=diagonal,
        lens_q=[s_q, 5] if mask in PADDING_MASKS else None,
        lens_kv=[s_kv - 2, 6] if mask in PADDING_MASKS else None))


@pytest.mark.parametrize("diagonal", [None, False])
def test_thd_window_diagonal(te_run, diagonal):
    run_case(te_run, make_case(
        13, layout="thd", mask="padding", window=(1, 1), bias_kind="alibi",
        bottom_right_diagonal=diagonal, lens_q=[3, 5, 2], lens_kv=[6, 2, 2],
        gaps_q=[0, 1, 0, 1], gaps_kv=[1, 0, 0, 2]))


# Without an arbitrary mask, a bias tensor, dropout or thd, the forward pass
# runs on tiles of 64 query rows, micro-blocks of 4 rows and chunks of 32 keys
# (docs/CPULowering.md). These shapes cross every one of those boundaries:
# several tiles with a partial last one, key tails, d_v in several groups of
# 64 columns and not a multiple of 16, windows whose chunks a micro-block
# skips, padding rows past the sequence lengths.
BLOCKED = {
    "tiles_and_key_tail": dict(mask="no_mask", s_q=130, s_kv=97, d_qk=64, d_v=64),
    "gqa_causal_dv80": dict(mask="causal", s_q=150, s_kv=150, h_q=4, h_kv=2,
                            d_qk=32, d_v=80),
    "bottom_right_dv24": dict(mask="causal_bottom_right", s_q=70, s_kv=140,
                              d_qk=16, d_v=24),
    "sliding_window": dict(mask="no_mask", window=(20, 5), s_q=140, s_kv=140),
    "window_left_only": dict(mask="causal", window=(33, 0), s_q=100, s_kv=100),
    "padding_causal": dict(mask="padding_causal", s_q=133, s_kv=133, b=3,
                           lens_q=[133, 70, 0], lens_kv=[133, 90, 5]),
    "padding_bottom_right_window": dict(
        mask="padding_causal_bottom_right", s_q=100, s_kv=120,
        lens_q=[100, 37], lens_kv=[120, 66], window=(10, 0)),
    "alibi": dict(mask="no_mask", bias_kind="alibi", slopes_shape="bh",
                  s_q=90, s_kv=75),
    "alibi_top_left": dict(mask="no_mask", bias_kind="alibi", s_q=90,
                           s_kv=150, bottom_right_diagonal=False),
    "window_top_left": dict(mask="no_mask", window=(30, 3), s_q=70, s_kv=160,
                            bottom_right_diagonal=False),
    "padding_window_bottom_right": dict(
        mask="padding", window=(12, 4), s_q=100, s_kv=130,
        lens_q=[100, 41], lens_kv=[130, 77]),
    "learnable": dict(mask="causal", softmax="learnable", s_q=81, s_kv=81),
    "off_by_one_diagonal": dict(mask="no_mask", softmax="off_by_one",
                                window=(0, 0), s_q=100, s_kv=70),
    "bhsd_bf16": dict(layout="bhsd", elem="bf16", mask="causal", s_q=100,
                      s_kv=100, d_qk=64, d_v=64),
    "sbhd_f16": dict(layout="sbhd", elem="f16", mask="no_mask", s_q=66,
                     s_kv=200),
}


@pytest.mark.parametrize("name", list(BLOCKED))
def test_blocked_path_boundaries(te_run, name):
    run_case(te_run, make_case(12, **BLOCKED[name]))


def test_window_thd(te_run):
    run_case(te_run, make_case(4, layout="thd", mask="padding_causal_bottom_right",
                               window=(1, 0), **THD_VARIANTS["offsets"]))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("h_q,h_kv", [(8, 2), (8, 1)])
def test_gqa_mqa(te_run, h_q, h_kv, layout):
    mask = "padding_causal" if layout == "thd" else "causal"
    run_case(te_run, make_case(5, layout=layout, mask=mask, h_q=h_q, h_kv=h_kv,
                               d_qk=8, s_q=10))


@pytest.mark.parametrize("shape", ["1", "bh", "h", "b"])
@pytest.mark.parametrize("bias_kind", ["pre_scale", "post_scale"])
def test_bias_tensor(te_run, bias_kind, shape):
    run_case(te_run, make_case(6, mask="causal_bottom_right", bias_kind=bias_kind,
                               bias_shape=shape, s_q=7, s_kv=12, scale=0.2))


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_bias_tensor_in_q_type(te_run, elem):
    run_case(te_run, make_case(6, elem=elem, bias_kind="post_scale", bias_elem=elem,
                               layout="sbhd"))


@pytest.mark.parametrize("mask,s_q,s_kv", [("no_mask", 7, 13), ("no_mask", 13, 7),
                                           ("causal", 9, 9),
                                           ("padding_causal_bottom_right", 7, 13)])
@pytest.mark.parametrize("slopes_shape", ["h", "bh"])
def test_alibi(te_run, slopes_shape, mask, s_q, s_kv):
    run_case(te_run, make_case(7, mask=mask, bias_kind="alibi",
                               slopes_shape=slopes_shape, s_q=s_q, s_kv=s_kv,
                               lens_q=[s_q, 3] if mask in PADDING_MASKS else None,
                               lens_kv=[s_kv, 8] if mask in PADDING_MASKS else None))


@pytest.mark.parametrize("slopes_shape", ["h", "bh"])
def test_alibi_thd(te_run, slopes_shape):
    run_case(te_run, make_case(7, layout="thd", mask="padding", bias_kind="alibi",
                               slopes_shape=slopes_shape, **THD_VARIANTS["cross"]))


@pytest.mark.parametrize("softmax", ["vanilla", "off_by_one", "learnable"])
@pytest.mark.parametrize("mask,s_q,s_kv", [("causal_bottom_right", 13, 7),
                                           ("padding", 9, 9), ("no_mask", 5, 17)])
def test_softmax_kinds(te_run, softmax, mask, s_q, s_kv):
    run_case(te_run, make_case(8, mask=mask, softmax=softmax, s_q=s_q, s_kv=s_kv, b=3,
                               lens_q=[9, 0, 6] if mask == "padding" else None,
                               lens_kv=[9, 4, 0] if mask == "padding" else None))


@pytest.mark.parametrize("softmax", ["off_by_one", "learnable"])
def test_softmax_kinds_thd(te_run, softmax):
    run_case(te_run, make_case(8, layout="thd", mask="padding_causal", softmax=softmax,
                               **THD_VARIANTS["cross"]))


@pytest.mark.parametrize("elem", ["f32", "bf16"])
@pytest.mark.parametrize("d_qk,d_v", [(32, 8), (8, 24), (1, 3)])
def test_head_dims(te_run, d_qk, d_v, elem):
    run_case(te_run, make_case(9, elem=elem, mask="causal", d_qk=d_qk, d_v=d_v,
                               layout="bhsd"))


@pytest.mark.parametrize("scale", [0.3, -0.7, 2.0])
def test_explicit_scale(te_run, scale):
    run_case(te_run, make_case(10, mask="padding_causal_bottom_right", scale=scale,
                               s_q=8, s_kv=12))


@pytest.mark.parametrize("softmax", ["vanilla", "off_by_one", "learnable"])
def test_fully_masked_rows(te_run, softmax):
    """Every way a row ends up empty, in one op: padding rows (len_q = 0 for
    a whole batch entry), no keys (len_kv = 0), rows above the bottom-right
    diagonal, and a window that leaves nothing left of the diagonal."""
    case = make_case(11, mask="padding_causal_bottom_right", window=(1, 0),
                     softmax=softmax, b=4, s_q=13, s_kv=7,
                     lens_q=[13, 0, 5, 9], lens_kv=[7, 3, 0, 2])
    o, lse = case.reference()
    assert (o == 0).all(axis=-1).any() and not (o == 0).all()
    run_case(te_run, case)


def test_arbitrary_mask_all_excluded_row(te_run):
    case = make_case(12, mask="arbitrary", mask_shape="b", softmax="learnable")
    case.operands["mask_tensor"][0, 0, 3, :] = True    # row 3 of batch 0: nothing
    case.operands["mask_tensor"][1, 0, :, 5] = True    # key 5 of batch 1: nobody
    run_case(te_run, case)


@pytest.mark.parametrize("shape", ["1", "b", "h"])
def test_arbitrary_mask_broadcast(te_run, shape):
    run_case(te_run, make_case(12, mask="arbitrary", mask_shape=shape, s_q=6, s_kv=10))


def test_without_lse(te_run):
    run_case(te_run, make_case(13, mask="causal", return_lse=False))


def test_largest_sizes(te_run):
    run_case(te_run, make_case(14, mask="causal", s_q=33, s_kv=33, h_q=4, h_kv=2,
                               d_qk=32, d_v=32))


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16"])
def test_everything_at_once(te_run, elem):
    run_case(te_run, make_case(
        15, layout="sbhd", elem=elem, mask="padding_causal_bottom_right",
        window=(3, 0), scale=0.4, bias_kind="post_scale", bias_shape="h",
        softmax="learnable", b=3, s_q=9, s_kv=14, h_q=8, h_kv=2, d_qk=16, d_v=8,
        lens_q=[9, 2, 6], lens_kv=[14, 5, 3]))


@pytest.mark.parametrize("elem", ["f32", "bf16"])
def test_everything_at_once_thd(te_run, elem):
    run_case(te_run, make_case(
        16, layout="thd", elem=elem, mask="padding_causal_bottom_right",
        window=(2, -1), scale=-0.5, bias_kind="alibi", slopes_shape="bh",
        softmax="off_by_one", h_q=6, h_kv=3, d_qk=12, d_v=20,
        **THD_VARIANTS["offsets"]))
