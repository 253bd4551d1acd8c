"""Independent float64 reference for te.attention_backward.

Written from the op's contract (include/te/Dialect/TE/IR/TEOps.td), not from
any lowering, and self-contained: it carries its own dense forward, so it
does not depend on attention_reference.py.

Forward, per batch entry n (a packed sequence for `thd`) and query head h,
whose key/value head is h // (H_q // H_kv):

    x_ij = scale * q_i.k_j                              (no_bias)
         = scale * (q_i.k_j + bias_ij)                  (pre_scale)
         = scale * q_i.k_j + bias_ij                    (post_scale)
         = scale * q_i.k_j - slope_h * |i - j + shift|     (alibi)
    LSE_i = log(E + sum_{j visible} exp(x_ij)),  E = 0 / 1 / exp(alpha_h)
    P_ij  = exp(x_ij - LSE_i) for visible j, else 0
    O_i   = sum_j P_ij v_j          (O = 0, LSE = log E without visible keys)

Backward, from the GIVEN o, d_o and lse (what the kernel receives):

    D_i   = d_o_i . o_i
    dP_ij = d_o_i . v_j
    dS_ij = P_ij (dP_ij - D_i),  P_ij = exp(x_ij - LSE_i) from the given LSE
    dq_i  = scale * sum_j dS_ij k_j
    dk_j  = scale * sum_{h in group, i} dS_ij q_i
    dv_j  = sum_{h in group, i} P_ij d_o_i
    dbias = dS (post_scale) or scale * dS (pre_scale), summed over the
            dimensions bias_tensor broadcasts ([1|b, 1|h_q, s_q, s_kv])
    d_alpha_h = -sum_{n, i} exp(alpha_h - LSE_i) D_i   (LSE = -inf rows: 0)

(i runs over all s_q rows of each batch entry, over the tokens of the
sequences for thd; rows without a visible key add nothing as long as their
o is 0, as the forward makes it.)

The softmax's extra denominator term does not change dS: dS_ij/dx_ik is
P_ij (delta_jk - P_ik) with or without it. Dropout is not modelled.

Visibility of key j for query i (0-based positions inside the sequence):
j < len_kv and i < len_q; causal masks: j <= i + shift; window [left,
right]: j >= i + shift - left (left >= 0), j <= i + shift + right
(right >= 0). shift = len_kv - len_q when the diagonal is aligned
bottom-right, 0 when top-left: causal and padding_causal are top-left, the
*_bottom_right kinds bottom-right, and the others follow
`bottom_right_diagonal` (bottom-right when None), as in TE's
DotProductAttention; arbitrary: not mask_tensor[n,h,i,j]
(broadcast). len_q / len_kv are seqlens for the padding kinds, cu_seqlens
differences for thd, and s_q / s_kv otherwise. thd sequence n occupies tokens
[start_n, start_n + len_n) with start = seq_offsets (or cu_seqlens); tokens
outside every sequence get O = 0, LSE = log E and zero gradients.

`backward(..., magnitudes=True)` also returns, for every result, the same sum
with every term replaced by its absolute value (|dP| -> sum |d_o||v|,
|D| -> sum |d_o o|). The tests scale their tolerances with it: it bounds what
any rounding of the individual terms can do to the result.
"""
from dataclasses import dataclass

import ml_dtypes
import numpy as np

LAYOUTS = ("bshd", "sbhd", "bhsd", "thd")
MASKS = ("no_mask", "padding", "causal", "causal_bottom_right",
         "padding_causal", "padding_causal_bottom_right", "arbitrary")
PADDING_MASKS = ("padding", "padding_causal", "padding_causal_bottom_right")
CAUSAL_MASKS = ("causal", "causal_bottom_right", "padding_causal",
                "padding_causal_bottom_right")
BOTTOM_RIGHT_MASKS = ("causal_bottom_right", "padding_causal_bottom_right")
BIAS_KINDS = ("no_bias", "pre_scale", "post_scale", "alibi")
SOFTMAX_KINDS = ("vanilla", "off_by_one", "learnable")

ELEM_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
# Significand bits including the implicit one.
PRECISION = {"f32": 24, "f16": 11, "bf16": 8}


def round_to(x, elem):
    """x rounded to nearest-even `elem` values, returned as float32 (te-run
    rounds f32 inputs to bf16/f16 arguments, exactly for these values)."""
    x = np.asarray(x, np.float64).astype(np.float32)
    return x.astype(ELEM_TYPES[elem]).astype(np.float32)


# Layout <-> [b, h, s, d] permutations.
_TO_BHSD = {"bshd": (0, 2, 1, 3), "sbhd": (1, 2, 0, 3), "bhsd": (0, 1, 2, 3)}


def _to_bhsd(x, layout):
    return x.transpose(_TO_BHSD[layout])


def _from_bhsd(x, layout):
    return x.transpose(np.argsort(_TO_BHSD[layout]))


def heads_of(x, layout):
    return x.shape[1] if layout in ("bhsd", "thd") else x.shape[2]


@dataclass
class Config:
    """Everything but q, k, v (and o, d_o, lse) that te.attention takes."""
    layout: str
    mask: str = "no_mask"
    window: tuple = None            # (left, right); None = (-1, -1)
    scale: float = None             # None = 1 / sqrt(d_qk)
    bias_kind: str = "no_bias"
    bias: np.ndarray = None         # [1|b, 1|h_q, s_q, s_kv]
    alibi_slopes: np.ndarray = None  # [h_q] or [b, h_q]
    softmax: str = "vanilla"
    softmax_offset: np.ndarray = None  # [1, h_q, 1, 1]
    seqlens_q: np.ndarray = None
    seqlens_kv: np.ndarray = None
    cu_seqlens_q: np.ndarray = None
    cu_seqlens_kv: np.ndarray = None
    seq_offsets_q: np.ndarray = None
    seq_offsets_kv: np.ndarray = None
    mask_tensor: np.ndarray = None  # bool, broadcastable to [b, h_q, s_q, s_kv]
    bottom_right_diagonal: bool = None  # None: TE's default for the mask

    def bottom_right(self):
        if self.mask in ("causal", "padding_causal"):
            return False
        if self.mask in BOTTOM_RIGHT_MASKS:
            return True
        return True if self.bottom_right_diagonal is None else self.bottom_right_diagonal

    def shift(self, seg):
        return seg.len_kv - seg.len_q if self.bottom_right() else 0

    def check(self):
        assert self.layout in LAYOUTS, self.layout
        assert self.mask in MASKS, self.mask
        assert self.bias_kind in BIAS_KINDS and self.softmax in SOFTMAX_KINDS
        if self.layout == "thd":
            assert self.mask in PADDING_MASKS
            assert self.bias_kind not in ("pre_scale", "post_scale")
        if self.window is not None and self.mask in CAUSAL_MASKS:
            assert self.window[1] in (-1, 0)
        assert (self.bias is not None) == (self.bias_kind in ("pre_scale", "post_scale"))
        assert (self.alibi_slopes is not None) == (self.bias_kind == "alibi")
        assert (self.softmax_offset is not None) == (self.softmax == "learnable")
        assert (self.mask_tensor is not None) == (self.mask == "arbitrary")


@dataclass
class _Segment:
    """One attention problem: batch entry (or thd sequence) n."""
    n: int              # index into bias / slopes / mask_tensor batch dims
    entry: int          # which canonical [h, tokens, d] tensor it lives in
    rows: np.ndarray    # token positions of its queries in that tensor
    cols: np.ndarray    # token positions of its keys
    len_q: int
    len_kv: int


def _canonical(x, layout):
    """List of [h, tokens, d] float arrays: one per batch entry, or one for thd."""
    if layout == "thd":
        return [x.transpose(1, 0, 2)]
    return list(_to_bhsd(x, layout))


def _from_canonical(parts, layout):
    if layout == "thd":
        return parts[0].transpose(1, 0, 2)
    return _from_bhsd(np.stack(parts), layout)


def _segments(cfg, t_q, t_kv, batch):
    """The attention problems. t_q / t_kv: token counts per canonical tensor
    (s_q / s_kv, or t for thd); batch: b for the non-thd layouts."""
    if cfg.layout == "thd":
        cu_q = np.asarray(cfg.cu_seqlens_q, np.int64)
        cu_kv = np.asarray(cfg.cu_seqlens_kv, np.int64)
        st_q = cu_q if cfg.seq_offsets_q is None else np.asarray(cfg.seq_offsets_q, np.int64)
        st_kv = cu_kv if cfg.seq_offsets_kv is None else np.asarray(cfg.seq_offsets_kv, np.int64)
        out = []
        used_q, used_kv = np.zeros(t_q, bool), np.zeros(t_kv, bool)
        for n in range(len(cu_q) - 1):
            lq, lkv = int(cu_q[n + 1] - cu_q[n]), int(cu_kv[n + 1] - cu_kv[n])
            assert lq >= 0 and lkv >= 0
            rows = np.arange(st_q[n], st_q[n] + lq)
            cols = np.arange(st_kv[n], st_kv[n] + lkv)
            assert rows.size == 0 or rows[-1] < t_q
            assert cols.size == 0 or cols[-1] < t_kv
            assert not used_q[rows].any() and not used_kv[cols].any(), "overlap"
            used_q[rows] = True
            used_kv[cols] = True
            out.append(_Segment(n, 0, rows, cols, lq, lkv))
        return out
    if cfg.mask in PADDING_MASKS:
        lens_q = np.asarray(cfg.seqlens_q, np.int64)
        lens_kv = np.asarray(cfg.seqlens_kv, np.int64)
        assert lens_q.shape == (batch,) and lens_kv.shape == (batch,)
        assert ((0 <= lens_q) & (lens_q <= t_q)).all()
        assert ((0 <= lens_kv) & (lens_kv <= t_kv)).all()
    else:
        lens_q, lens_kv = np.full(batch, t_q), np.full(batch, t_kv)
    return [_Segment(n, n, np.arange(t_q), np.arange(t_kv), int(lens_q[n]),
                     int(lens_kv[n])) for n in range(batch)]


def _pick(x, n, h_q):
    """x[n or 0] broadcast over heads: [h_q, ...]."""
    x = x[0 if x.shape[0] == 1 else n]
    return np.broadcast_to(x, (h_q,) + x.shape[1:])


def _visible(cfg, seg, h_q):
    """Boolean [h_q, n_q, n_kv] visibility of one segment."""
    n_q, n_kv = seg.rows.size, seg.cols.size
    i = np.arange(n_q)[:, None]
    j = np.arange(n_kv)[None, :]
    shift = cfg.shift(seg)
    vis = (i < seg.len_q) & (j < seg.len_kv)
    if cfg.mask in CAUSAL_MASKS:
        vis &= j <= i + shift
    left, right = (-1, -1) if cfg.window is None else cfg.window
    if left >= 0:
        vis &= j >= i + shift - left
    if right >= 0:
        vis &= j <= i + shift + right
    vis = np.broadcast_to(vis, (h_q, n_q, n_kv))
    if cfg.mask == "arbitrary":
        vis = vis & ~_pick(np.asarray(cfg.mask_tensor, bool), seg.n, h_q)
    return vis


def _log_e(cfg, h_q, dtype):
    if cfg.softmax == "vanilla":
        return np.full(h_q, -np.inf, dtype)
    if cfg.softmax == "off_by_one":
        return np.zeros(h_q, dtype)
    alpha = np.asarray(cfg.softmax_offset, dtype)
    assert alpha.shape == (1, h_q, 1, 1), alpha.shape
    return alpha.reshape(h_q)


def _scores(cfg, seg, qs, ks, scale, h_q, dtype):
    """x [h_q, n_q, n_kv] (not masked); qs [h_q, n_q, d], ks [h_q, n_kv, d]."""
    dots = np.einsum("hid,hjd->hij", qs, ks)
    if cfg.bias_kind == "pre_scale":
        return scale * (dots + _pick(np.asarray(cfg.bias, dtype), seg.n, h_q))
    if cfg.bias_kind == "post_scale":
        return scale * dots + _pick(np.asarray(cfg.bias, dtype), seg.n, h_q)
    if cfg.bias_kind == "alibi":
        slopes = np.asarray(cfg.alibi_slopes, dtype)
        slopes = slopes if slopes.ndim == 1 else slopes[seg.n]
        i = np.arange(qs.shape[1])[:, None]
        j = np.arange(ks.shape[1])[None, :]
        dist = np.abs(i - j + cfg.shift(seg)).astype(dtype)
        return scale * dots - slopes[:, None, None] * dist
    return scale * dots


def _prepare(q, k, v, cfg, dtype):
    cfg.check()
    q, k, v = (np.asarray(a, np.float64).astype(dtype) for a in (q, k, v))
    d_qk = q.shape[-1]
    assert k.shape[-1] == d_qk
    scale = dtype(1.0 / np.sqrt(d_qk) if cfg.scale is None else cfg.scale)
    h_q, h_kv = heads_of(q, cfg.layout), heads_of(k, cfg.layout)
    assert h_q % h_kv == 0
    kv_head = np.arange(h_q) // (h_q // h_kv)
    cq, ck, cv = (_canonical(a, cfg.layout) for a in (q, k, v))
    segs = _segments(cfg, cq[0].shape[1], ck[0].shape[1], len(cq))
    return q, k, v, scale, h_q, h_kv, kv_head, cq, ck, cv, segs


def forward(q, k, v, cfg, dtype=np.float64):
    """te.attention: returns (o in q's layout with d_v, lse [b,h_q,s_q,1] or
    [t_q,h_q,1])."""
    q, k, v, scale, h_q, _, kv_head, cq, ck, cv, segs = _prepare(q, k, v, cfg, dtype)
    log_e = _log_e(cfg, h_q, dtype)
    d_v = v.shape[-1]
    co = [np.zeros((h_q, x.shape[1], d_v), dtype) for x in cq]
    clse = [np.repeat(log_e[:, None], x.shape[1], axis=1) for x in cq]
    for seg in segs:
        qs = cq[seg.entry][:, seg.rows]
        ks = ck[seg.entry][kv_head][:, seg.cols]
        vs = cv[seg.entry][kv_head][:, seg.cols]
        vis = _visible(cfg, seg, h_q)
        x = np.where(vis, _scores(cfg, seg, qs, ks, scale, h_q, dtype), -np.inf)
        m = np.maximum(x.max(axis=-1, initial=-np.inf), log_e[:, None])
        m = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            lse = m + np.log(np.exp(log_e[:, None] - m) + np.exp(x - m[..., None]).sum(-1))
        p = np.where(vis, np.exp(x - np.where(vis.any(-1), lse, 0)[..., None]), 0)
        o = np.einsum("hij,hjd->hid", p, vs)
        dead = ~vis.any(-1)
        lse = np.where(dead, log_e[:, None], lse)
        co[seg.entry][:, seg.rows] = o
        clse[seg.entry][:, seg.rows] = lse
    o = _from_canonical(co, cfg.layout)
    if cfg.layout == "thd":
        return o, clse[0].T[..., None]
    return o, np.stack(clse)[..., None]


@dataclass
class Grads:
    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray
    dbias: np.ndarray = None
    d_softmax_offset: np.ndarray = None

    def results(self):
        """In the op's result order."""
        return [self.dq, self.dk, self.dv] + [
            g for g in (self.dbias, self.d_softmax_offset) if g is not None]


def backward(q, k, v, o, d_o, lse, cfg, dtype=np.float64, magnitudes=False):
    """te.attention_backward from the given o, d_o, lse.

    Returns Grads (and, with magnitudes=True, a second Grads of the
    absolute-value sums; see the module docstring). `dtype` float32 models a
    kernel that does everything in f32.
    """
    q, k, v, scale, h_q, h_kv, kv_head, cq, ck, cv, segs = _prepare(q, k, v, cfg, dtype)
    o, d_o = (np.asarray(a, np.float64).astype(dtype) for a in (o, d_o))
    assert o.shape == d_o.shape == q.shape[:-1] + v.shape[-1:]
    co, cdo = _canonical(o, cfg.layout), _canonical(d_o, cfg.layout)
    lse = np.asarray(lse, np.float64).astype(dtype)
    if cfg.layout == "thd":
        assert lse.shape == (q.shape[0], h_q, 1)
        clse = [lse[..., 0].T]
    else:
        assert lse.shape == (len(cq), h_q, cq[0].shape[1], 1)
        clse = list(lse[..., 0])
    group = h_q // h_kv
    alpha = _log_e(cfg, h_q, dtype)

    def zeros_like_parts(parts, heads):
        return [np.zeros((heads,) + p.shape[1:], dtype) for p in parts]

    passes = [False, True] if magnitudes else [False]
    outs = []
    for absolute in passes:
        f = np.abs if absolute else (lambda a: a)
        dq = zeros_like_parts(cq, h_q)
        dk = zeros_like_parts(ck, h_kv)
        dv = zeros_like_parts(cv, h_kv)
        dbias = None
        if cfg.bias is not None:
            dbias = np.zeros(np.shape(cfg.bias), dtype)
        dalpha = np.zeros(h_q, dtype)
        for seg in segs:
            e = seg.entry
            qs = cq[e][:, seg.rows]
            ks = ck[e][kv_head][:, seg.cols]
            vs = cv[e][kv_head][:, seg.cols]
            os_, dos = co[e][:, seg.rows], cdo[e][:, seg.rows]
            lse_s = clse[e][:, seg.rows]
            vis = _visible(cfg, seg, h_q)
            x = _scores(cfg, seg, qs, ks, scale, h_q, dtype)
            with np.errstate(invalid="ignore", over="ignore"):
                p = np.where(vis, np.exp(np.where(vis, x - lse_s[..., None], 0)), 0)
            dp = np.einsum("hid,hjd->hij", f(dos), f(vs))
            big_d = (f(dos * os_)).sum(-1)
            if absolute:
                ds = p * (dp + big_d[..., None])
            else:
                ds = p * (dp - big_d[..., None])
            sc = f(scale)
            dq[e][:, seg.rows] += sc * np.einsum("hij,hjd->hid", ds, f(ks))
            dk_h = sc * np.einsum("hij,hid->hjd", ds, f(qs))
            dv_h = np.einsum("hij,hid->hjd", p, f(dos))
            for g in range(h_kv):
                heads = slice(g * group, (g + 1) * group)
                dk[e][g, seg.cols] += dk_h[heads].sum(0)
                dv[e][g, seg.cols] += dv_h[heads].sum(0)
            if dbias is not None:
                gb = ds * sc if cfg.bias_kind == "pre_scale" else ds
                if dbias.shape[1] == 1:
                    gb = gb.sum(0, keepdims=True)
                dbias[0 if dbias.shape[0] == 1 else seg.n] += gb
            if cfg.softmax == "learnable":
                finite = np.isfinite(lse_s)
                w = np.exp(np.where(finite, alpha[:, None] - lse_s, -np.inf))
                term = (w * big_d).sum(-1)
                dalpha += term if absolute else -term
        grads = Grads(_from_canonical(dq, cfg.layout), _from_canonical(dk, cfg.layout),
                      _from_canonical(dv, cfg.layout), dbias,
                      dalpha.reshape(1, h_q, 1, 1) if cfg.softmax == "learnable" else None)
        outs.append(grads)
    return (outs[0], outs[1]) if magnitudes else outs[0]
