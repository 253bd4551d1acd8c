"""Independent numpy reference for te.attention's forward semantics.

Computes in float64 from the (already element-type-rounded) inputs. Written
from the op's contract, not from the lowering:

* layouts bshd [b,s,h,d], sbhd [s,b,h,d], bhsd [b,h,s,d] and thd [t,h,d];
* GQA/MQA: query head h reads key/value head h // (H_q // H_kv);
* scores x = scale * q.k, with `pre_scale` bias x = scale * (q.k + bias),
  `post_scale` bias x = scale * q.k + bias, or `alibi`
  x = scale * q.k - slope[h] * |i - j + shift| (TE's get_alibi);
* the visibility rules of the seven mask kinds and the sliding window, as
  TE's get_full_mask computes them: a causal mask is the window (left, 0),
  and key j is visible to query i when
  i - j + shift - left <= 0 <= i - j + shift + right, with -1 unbounded
  (see `_sequence`);
* shift = len_kv - len_q (actual lengths for the padding masks) when the
  diagonal is aligned bottom-right, 0 when top-left, resolved as
  DotProductAttention resolves `bottom_right_diagonal` (see
  `resolve_bottom_right`);
* softmax with an extra denominator term E (vanilla 0, off_by_one 1,
  learnable exp(alpha[h])); LSE = log(E + sum of exp over visible keys);
* rows without a visible key, padding rows and thd tokens outside every
  sequence give O = 0 and LSE = log(E).

Everything is vectorised over heads, query rows and key columns of one
sequence at a time; thd sequences are sliced out of the packed tensors.
"""
import ml_dtypes
import numpy as np

LAYOUTS = ("bshd", "sbhd", "bhsd", "thd")
MASKS = ("no_mask", "padding", "causal", "causal_bottom_right",
         "padding_causal", "padding_causal_bottom_right", "arbitrary")
PADDING_MASKS = ("padding", "padding_causal", "padding_causal_bottom_right")
BIASES = ("no_bias", "pre_scale", "post_scale", "alibi")
SOFTMAXES = ("vanilla", "off_by_one", "learnable")

NUMPY_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
# Bits of significand precision, counting the implicit bit.
PRECISION = {"f32": 24, "f16": 11, "bf16": 8}
# Smallest normal exponent: ulp(x) = 2**(max(e, MIN_EXP) - PRECISION).
MIN_EXP = {"f32": -125, "f16": -13, "bf16": -125}


def round_to(x, elem):
    """Rounds to the element type (nearest even); returns float32 values."""
    return np.asarray(x, np.float32).astype(NUMPY_TYPES[elem]).astype(np.float32)


def ulp(x, elem):
    """The spacing of `elem` values at |x| (x already representable)."""
    x = np.abs(np.asarray(x, np.float64))
    _, e = np.frexp(x)
    e = np.where(x == 0, MIN_EXP[elem], np.maximum(e, MIN_EXP[elem]))
    return np.ldexp(1.0, e - PRECISION[elem])


_TO_BHSD = {"bshd": (0, 2, 1, 3), "sbhd": (1, 2, 0, 3), "bhsd": (0, 1, 2, 3)}
_FROM_BHSD = {"bshd": (0, 2, 1, 3), "sbhd": (2, 0, 1, 3), "bhsd": (0, 1, 2, 3)}


def to_bhsd(x, layout):
    """[b,s,h,d] / [s,b,h,d] / [b,h,s,d] -> [b,h,s,d] (a view)."""
    return x.transpose(_TO_BHSD[layout])


def from_bhsd(x, layout):
    """[b,h,s,d] -> the layout (inverse of to_bhsd)."""
    return x.transpose(_FROM_BHSD[layout])


def log_extra_term(softmax, softmax_offset, heads):
    """log(E) per query head: -inf (vanilla), 0 (off_by_one) or alpha[h]."""
    if softmax == "vanilla":
        return np.full(heads, -np.inf)
    if softmax == "off_by_one":
        return np.zeros(heads)
    if softmax == "learnable":
        alpha = np.asarray(softmax_offset, np.float64)
        assert alpha.shape == (1, heads, 1, 1), alpha.shape
        return alpha.reshape(heads)
    raise ValueError(f"unknown softmax {softmax!r}")


def resolve_bottom_right(mask, bottom_right_diagonal):
    """TE's DotProductAttention.forward: causal and padding_causal force
    top-left, the *_bottom_right masks bottom-right; others take the
    caller's value, True when None."""
    if mask in ("causal", "padding_causal"):
        return False
    if bottom_right_diagonal is None or mask in (
            "causal_bottom_right", "padding_causal_bottom_right"):
        return True
    return bool(bottom_right_diagonal)


def _sequence(q, k, v, *, log_e, scale, mask, window, bottom_right, len_q,
              len_kv, bias_kind, bias, slopes, excluded):
    """Attention of one batch entry / thd sequence.

    q [H_q, n_q, d_qk], k [H_kv, n_kv, d_qk], v [H_kv, n_kv, d_v] in float64;
    len_q <= n_q, len_kv <= n_kv are the actual lengths (n for non-padding
    masks); bias broadcastable to [H_q, n_q, n_kv]; slopes [H_q] or None;
    excluded: bool broadcastable to [H_q, n_q, n_kv] (arbitrary) or None.
    Returns o [H_q, n_q, d_v] and lse [H_q, n_q].
    """
    heads_q, n_q, _ = q.shape
    heads_kv, n_kv, _ = k.shape
    assert heads_q % heads_kv == 0
    kv_head = np.arange(heads_q) // (heads_q // heads_kv)
    k, v = k[kv_head], v[kv_head]

    i = np.arange(n_q)[:, None]
    j = np.arange(n_kv)[None, :]
    shift = len_kv - len_q if bottom_right else 0
    left, right = window
    if "causal" in mask:
        right = 0
    # -1 is unbounded, as in TE's fused backends and its documentation.
    # (TE's unfused get_full_mask substitutes s_kv and s_q, which differs
    # from unbounded when the diagonal is top-left and the sequences differ
    # in length: causal with s_q > s_kv would hide the first keys of the
    # last rows there.)
    left = np.inf if left == -1 else left
    right = np.inf if right == -1 else right
    vis = (i - j + shift - left <= 0) & (i - j + shift + right >= 0)
    vis = vis & (j < len_kv)
    vis = np.broadcast_to(vis, (heads_q, n_q, n_kv))
    if excluded is not None:
        vis = vis & ~np.broadcast_to(excluded, vis.shape)
    # Padding rows see nothing (their output is forced below anyway).
    vis = vis & (np.arange(n_q) < len_q)[None, :, None]

    dots = np.einsum("hid,hjd->hij", q, k)
    if bias_kind == "pre_scale":
        x = scale * (dots + bias)
    elif bias_kind == "post_scale":
        x = scale * dots + bias
    elif bias_kind == "alibi":
        x = scale * dots - slopes[:, None, None] * np.abs(i - j + shift)
    else:
        x = scale * dots

    x = np.where(vis, x, -np.inf)
    log_e = log_e[:, None]
    m = np.maximum(x.max(axis=-1, initial=-np.inf), log_e)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = (np.exp(log_e - m_safe)
                 + np.exp(x - m_safe[..., None]).sum(axis=-1))
        lse = m_safe + np.log(total)
        p = np.where(vis, np.exp(x - lse[..., None]), 0.0)
    o = np.einsum("hij,hjd->hid", p, v)
    no_key = ~vis.any(axis=-1)
    o[no_key] = 0.0
    lse = np.where(no_key, np.broadcast_to(log_e, lse.shape), lse)
    return o, lse


def attention(q, k, v, layout, *, mask="no_mask", window=None, scale=None,
              bias_kind="no_bias", bias=None, alibi_slopes=None,
              softmax="vanilla", softmax_offset=None,
              seqlens_q=None, seqlens_kv=None,
              cu_seqlens_q=None, cu_seqlens_kv=None,
              seq_offsets_q=None, seq_offsets_kv=None, mask_tensor=None,
              bottom_right_diagonal=None):
    """te.attention forward (without dropout), in float64.

    Returns (o, lse): o in q's layout with head dim d_v; lse [b, h_q, s_q, 1]
    or [t_q, h_q, 1] for thd.
    """
    assert layout in LAYOUTS and mask in MASKS and bias_kind in BIASES
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    d_qk = q.shape[-1]
    assert k.shape[-1] == d_qk
    scale = 1.0 / np.sqrt(d_qk) if scale is None else float(scale)
    window = (-1, -1) if window is None else tuple(window)
    bottom_right = resolve_bottom_right(mask, bottom_right_diagonal)
    heads_q = q.shape[1] if layout == "bhsd" else q.shape[-2]
    log_e = log_extra_term(softmax, softmax_offset, heads_q)
    slopes = None
    if bias_kind == "alibi":
        slopes = np.asarray(alibi_slopes, np.float64)
    if bias_kind in ("pre_scale", "post_scale"):
        bias = np.asarray(bias, np.float64)
        assert bias.ndim == 4
    if mask == "arbitrary":
        mask_tensor = np.asarray(mask_tensor, bool)
        assert mask_tensor.ndim == 4
    else:
        assert mask_tensor is None

    def slopes_of(n):
        if slopes is None:
            return None
        return slopes if slopes.ndim == 1 else slopes[n]

    if layout == "thd":
        assert mask in PADDING_MASKS, "thd needs a padding mask kind"
        assert bias_kind not in ("pre_scale", "post_scale")
        cu_q = np.asarray(cu_seqlens_q, np.int64)
        cu_kv = np.asarray(cu_seqlens_kv, np.int64)
        start_q = cu_q if seq_offsets_q is None else np.asarray(seq_offsets_q, np.int64)
        start_kv = cu_kv if seq_offsets_kv is None else np.asarray(seq_offsets_kv, np.int64)
        t_q = q.shape[0]
        o = np.zeros((t_q, heads_q, v.shape[-1]))
        lse = np.broadcast_to(log_e[None, :], (t_q, heads_q)).copy()
        for n in range(len(cu_q) - 1):
            len_q = cu_q[n + 1] - cu_q[n]
            len_kv = cu_kv[n + 1] - cu_kv[n]
            assert len_q >= 0 and len_kv >= 0
            rows = slice(start_q[n], start_q[n] + len_q)
            cols = slice(start_kv[n], start_kv[n] + len_kv)
            assert rows.stop <= t_q and cols.stop <= k.shape[0]
            if len_q == 0:
                continue
            o_n, lse_n = _sequence(
                q[rows].transpose(1, 0, 2), k[cols].transpose(1, 0, 2),
                v[cols].transpose(1, 0, 2), log_e=log_e, scale=scale,
                mask=mask, window=window, bottom_right=bottom_right,
                len_q=len_q, len_kv=len_kv,
                bias_kind=bias_kind, bias=None, slopes=slopes_of(n),
                excluded=None)
            o[rows] = o_n.transpose(1, 0, 2)
            lse[rows] = lse_n.T
        return o, lse[..., None]

    qb, kb, vb = (to_bhsd(a, layout) for a in (q, k, v))
    batch, _, s_q, _ = qb.shape
    s_kv = kb.shape[2]
    padding = mask in PADDING_MASKS
    if padding:
        lens_q = np.asarray(seqlens_q, np.int64)
        lens_kv = np.asarray(seqlens_kv, np.int64)
        assert lens_q.shape == (batch,) and lens_kv.shape == (batch,)
        assert (0 <= lens_q).all() and (lens_q <= s_q).all()
        assert (0 <= lens_kv).all() and (lens_kv <= s_kv).all()
    o = np.zeros((batch, heads_q, s_q, vb.shape[-1]))
    lse = np.zeros((batch, heads_q, s_q))
    for n in range(batch):
        bias_n = None
        if bias_kind in ("pre_scale", "post_scale"):
            bias_n = bias[0 if bias.shape[0] == 1 else n]
        excluded = None
        if mask == "arbitrary":
            excluded = mask_tensor[0 if mask_tensor.shape[0] == 1 else n]
        o[n], lse[n] = _sequence(
            qb[n], kb[n], vb[n], log_e=log_e, scale=scale, mask=mask,
            window=window, bottom_right=bottom_right,
            len_q=lens_q[n] if padding else s_q,
            len_kv=lens_kv[n] if padding else s_kv,
            bias_kind=bias_kind, bias=bias_n, slopes=slopes_of(n),
            excluded=excluded)
    return from_bhsd(o, layout), lse[..., None]
