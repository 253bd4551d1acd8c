"""Plain-torch versions of TE's formulas, the references of the
te_mlir.torch tests: written from TE's code, sharing nothing with
te_mlir."""

import torch
import torch.nn.functional as F


def torch_activation(x, kind, limit=7.0, alpha=1.702, offset=1.0):
    """TE's activations (util/math.h, gated_act_kernel) in torch."""
    plain = {"gelu": lambda v: F.gelu(v, approximate="tanh"),
             "qgelu": lambda v: v * torch.sigmoid(1.702 * v),
             "relu": F.relu, "srelu": lambda v: F.relu(v) ** 2,
             "silu": F.silu}
    gated = {"geglu": "gelu", "qgeglu": "qgelu", "reglu": "relu",
             "sreglu": "srelu", "swiglu": "silu", "glu": "sigmoid"}
    plain_or_gate = dict(plain, sigmoid=torch.sigmoid)
    if kind in plain:
        return plain[kind](x)
    a, b = x.chunk(2, dim=-1)
    if kind == "clamped_swiglu":
        a = a.clamp(max=limit)
        return a * torch.sigmoid(alpha * a) * (b.clamp(-limit, limit) +
                                                offset)
    return plain_or_gate[gated[kind]](a) * b


def torch_rope(t, freqs, tensor_format="sbhd", interleaved=False):
    """TE's unfused apply_rotary_pos_emb (sbhd/bshd), in t's dtype f32."""
    s = t.shape[1] if tensor_format == "bshd" else t.shape[0]
    f = freqs[:s]
    if tensor_format == "bshd":
        f = f.transpose(0, 1)
    d2 = f.shape[-1]
    x, rest = t[..., :d2], t[..., d2:]
    if interleaved:
        x1, x2 = x[..., ::2], x[..., 1::2]
        rot = torch.stack((-x2, x1), dim=-1).reshape(x.shape)
    else:
        x1, x2 = x.chunk(2, dim=-1)
        rot = torch.cat((-x2, x1), dim=-1)
    return torch.cat((x * torch.cos(f) + rot * torch.sin(f), rest), dim=-1)


def torch_norm(x, kind, w, b, eps, zero_centered):
    """TE's LayerNorm or RMSNorm (TE's normalization names) over the last
    dimension, with TE's zero-centered gamma."""
    g = w + 1 if zero_centered else w
    if kind == "LayerNorm":
        return F.layer_norm(x, (x.shape[-1],), g, b, eps)
    return F.rms_norm(x, (x.shape[-1],), g, eps)


def split_qkv(mixed, heads, groups, d, interleaved):
    """TE's split of a fused QKV projection [..., (h + 2g) d]: per group
    [its h/g query heads, key, value] when interleaved, else [Q | K | V]."""
    lead = mixed.shape[:-1]
    n = heads // groups
    if interleaved:
        m = mixed.reshape(*lead, groups, n + 2, d)
        return (m[..., :n, :].reshape(*lead, heads, d), m[..., n, :],
                m[..., n + 1, :])
    q = mixed[..., :heads * d].reshape(*lead, heads, d)
    k = mixed[..., heads * d:(heads + groups) * d].reshape(*lead, groups, d)
    v = mixed[..., (heads + groups) * d:].reshape(*lead, groups, d)
    return q, k, v


def torch_attention(q, k, v, fmt, causal=True):
    """Softmax attention with TE's GQA (query head i reads key/value
    group i // (h / g)) and scale 1/sqrt(d) in sbhd or bshd, through
    torch's SDPA; returns [.., .., h * d] in the input's format."""
    if fmt == "sbhd":
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
    n = q.shape[2] // k.shape[2]
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    k, v = (t.repeat_interleave(n, dim=1) for t in (k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    o = o.transpose(1, 2).flatten(2)
    return o.transpose(0, 1) if fmt == "sbhd" else o
