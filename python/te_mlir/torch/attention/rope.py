"""Rotary position embeddings at TE's import path
(transformer_engine.pytorch.attention.rope): RotaryPositionEmbedding, which
makes the frequencies, and apply_rotary_pos_emb, which rotates by them
through te.rope."""

import torch

from ..ops.rope import qkv_rope, rope

__all__ = ["RotaryPositionEmbedding", "apply_rotary_pos_emb",
           "apply_fused_qkv_rotary_pos_emb"]


class RotaryPositionEmbedding(torch.nn.Module):
    """Transformer Engine's RotaryPositionEmbedding, with its constructor
    (dim, rotary_percent=1.0, seq_len_interpolation_factor=None,
    pretrained_max_position_embeddings=None, rotary_base=10000.0,
    interleaved=False): forward(max_seq_len, offset=0) returns the f32
    angles [max_seq_len, 1, 1, dim'] (dim' = int(dim * rotary_percent)
    where rotary_percent < 1) that apply_rotary_pos_emb takes, each
    position times 1 / base^(2i / dim'), duplicated as [f, f] or
    interleaved as [f0, f0, f1, f1, ...]. With both
    seq_len_interpolation_factor and pretrained_max_position_embeddings
    the positions are scaled down as TE scales them (position
    interpolation). The buffer inv_freq lives on the CPU (TE puts it on
    the current CUDA device)."""

    def __init__(self, dim, rotary_percent=1.0,
                 seq_len_interpolation_factor=None,
                 pretrained_max_position_embeddings=None,
                 rotary_base=10000.0, interleaved=False):
        super().__init__()
        if rotary_percent < 1.0:
            dim = int(dim * rotary_percent)
        if dim <= 0 or dim % 2:
            raise ValueError(f"RotaryPositionEmbedding: the rotary dimension "
                             f"must be even and positive, got {dim}")
        self.seq_len_interpolation_factor = seq_len_interpolation_factor
        self.rotary_base = rotary_base
        exponents = torch.arange(0, dim, 2, dtype=torch.float32) / dim
        self.register_buffer("inv_freq", 1.0 / (rotary_base ** exponents))
        self.pretrained_max_position_embeddings = \
            pretrained_max_position_embeddings
        self.interleaved = interleaved

    def forward(self, max_seq_len, offset=0):
        seq = torch.arange(max_seq_len, dtype=self.inv_freq.dtype,
                           device=self.inv_freq.device) + offset
        pretrained = self.pretrained_max_position_embeddings
        factor = self.seq_len_interpolation_factor
        if pretrained is not None and factor is not None:
            if max_seq_len > pretrained * factor:
                # Longer than what was learned: scale to fit (dynamic).
                seq *= 1 / (max_seq_len / pretrained)
            else:
                seq *= 1 / factor
        freqs = torch.outer(seq, self.inv_freq)
        if self.interleaved:
            emb = torch.stack((freqs, freqs), dim=-1).reshape(
                freqs.shape[0], -1)
        else:
            emb = torch.cat((freqs, freqs), dim=-1)
        return emb.reshape(emb.shape[0], 1, 1, emb.shape[1])


def apply_rotary_pos_emb(t, freqs, tensor_format="sbhd", start_positions=None,
                         interleaved=False, fused=False, cu_seqlens=None,
                         cp_size=1, cp_rank=0):
    """Transformer Engine's apply_rotary_pos_emb: t [s, b, h, d] (sbhd),
    [b, s, h, d] (bshd) or [t, h, d] (thd, with cu_seqlens) rotated by
    freqs [s2, 1, 1, d2] (its first d2 channels; the rest pass through),
    each sequence from start_positions (inference) or from its context-
    parallel chunks (cp_size, cp_rank). Always te.rope, differentiable in
    t: TE's fused kernel. With fused=False TE runs a torch version that
    rounds cos and sin to t's dtype before multiplying; te computes the
    rotation in f32 and rounds once, so the two agree to about an ulp of
    t's dtype."""
    if cp_size > 1 and start_positions is not None:
        raise ValueError("apply_rotary_pos_emb: start_positions are for "
                         "inference and cannot be used with cp_size > 1 "
                         "(as in TE)")
    if tensor_format == "thd" and cu_seqlens is None:
        raise ValueError("apply_rotary_pos_emb: tensor_format 'thd' needs "
                         "cu_seqlens")
    return rope(t, freqs, tensor_format, interleaved=interleaved,
                cu_seqlens=cu_seqlens, start_positions=start_positions,
                cp_size=cp_size, cp_rank=cp_rank)


def apply_fused_qkv_rotary_pos_emb(qkv, q_freqs, k_freqs, qkv_split_arg_list,
                                   tensor_format="sbhd", start_positions=None,
                                   interleaved=False, cu_seqlens=None,
                                   cp_size=1, cp_rank=0):
    """Transformer Engine's apply_fused_qkv_rotary_pos_emb: qkv [s, b, h,
    q + k + v] (sbhd) or [b, s, h, q + k + v] (bshd), the three split
    along the last dimension by qkv_split_arg_list = [q, k, v] (TE's
    grouped layout: per group of h, q / k query heads and one key and one
    value head of k channels; v is the head dim d). Returns (q, k, v):
    q [.., h * q / k, k] rotated by q_freqs, k [.., h, k] by k_freqs (each
    in heads of d channels), v [.., h, v] unchanged, as TE's
    fused_qkv_rope_forward lays them out; differentiable in qkv, through
    te.qkv_rope and te.qkv_rope_backward. cu_seqlens is unused, as in TE
    (thd is not supported). As TE's fused backward, the gradient ignores
    start_positions (TE supports them for inference only)."""
    if tensor_format not in ("sbhd", "bshd"):
        raise ValueError(f"apply_fused_qkv_rotary_pos_emb: tensor_format "
                         f"must be 'sbhd' or 'bshd' (TE supports no other), "
                         f"got {tensor_format!r}")
    if cp_size > 1 and start_positions is not None:
        raise ValueError("apply_fused_qkv_rotary_pos_emb: start_positions "
                         "are for inference and cannot be used with "
                         "cp_size > 1 (as in TE)")
    splits = [int(n) for n in qkv_split_arg_list]
    if len(splits) != 3 or sum(splits) != qkv.shape[-1]:
        raise ValueError(f"apply_fused_qkv_rotary_pos_emb: "
                         f"qkv_split_arg_list must be three sizes that sum "
                         f"to qkv's last dimension ({qkv.shape[-1]}), got "
                         f"{list(qkv_split_arg_list)}")
    q_size, k_size, d = splits
    if min(splits) <= 0 or q_size % k_size or k_size % d:
        raise ValueError(f"apply_fused_qkv_rotary_pos_emb: the q size "
                         f"({q_size}) must be a multiple of the k size "
                         f"({k_size}), and that of the v size ({d}), the "
                         f"head dim")
    if q_freqs.shape[-1] != k_freqs.shape[-1]:
        raise ValueError(f"apply_fused_qkv_rotary_pos_emb: q_freqs and "
                         f"k_freqs must rotate as many channels (TE takes "
                         f"d2 from q_freqs for both), got "
                         f"{q_freqs.shape[-1]} and {k_freqs.shape[-1]}")
    return qkv_rope(qkv, q_freqs, k_freqs, splits, tensor_format,
                    start_positions=start_positions, interleaved=interleaved,
                    cp_size=cp_size, cp_rank=cp_rank)
