"""Transformer Engine's MultiheadAttention: the QKV projection (with its
norm), RoPE, DotProductAttention and the output projection, each on te's
ops."""

import torch

from .. import module as _module
from ..module import _base
from .dot_product_attention import DotProductAttention
from .rope import apply_rotary_pos_emb

__all__ = ["MultiheadAttention"]

QK_NORMS = (None, "RMSNorm", "LayerNorm")


def split_heads(mixed, heads, groups, channels, interleaved):
    """q [..., heads, d], k and v [..., groups, d] from the fused QKV
    projection's output [..., (heads + 2 groups) d], as TE splits it:
    interleaved per group (for each group its heads/groups query heads,
    then its key, then its value), or concatenated [Q | K | V]."""
    lead = mixed.shape[:-1]
    per_group = heads // groups
    if interleaved:
        m = mixed.reshape(*lead, groups, per_group + 2, channels)
        q = m[..., :per_group, :].reshape(*lead, heads, channels)
        k = m[..., per_group, :]
        v = m[..., per_group + 1, :]
        return q, k, v
    q, k, v = mixed.split([heads * channels, groups * channels,
                           groups * channels], dim=-1)
    return (q.reshape(*lead, heads, channels),
            k.reshape(*lead, groups, channels),
            v.reshape(*lead, groups, channels))


def split_key_value(mixed, groups, channels, interleaved):
    """k and v [..., groups, d] from the key_value projection [..., 2
    groups d]: per group [k | v] when interleaved, else [K | V]."""
    lead = mixed.shape[:-1]
    if interleaved:
        m = mixed.reshape(*lead, groups, 2 * channels)
        return m[..., :channels], m[..., channels:]
    k, v = mixed.split(groups * channels, dim=-1)
    return (k.reshape(*lead, groups, channels),
            v.reshape(*lead, groups, channels))


class MultiheadAttention(torch.nn.Module):
    """Transformer Engine's MultiheadAttention, with TE's constructor
    (arguments in TE's order and with its defaults), submodules and
    parameter names, and forward.

    attention_type "self": `layernorm_qkv` (a LayerNormLinear, with
    input_layernorm) or `qkv` (a Linear) projects to [q | k | v], (h + 2 g)
    d wide (g = num_gqa_groups); with fuse_qkv_params one `weight`, split
    interleaved per group (qkv_weight_interleaved, the default) or
    concatenated; without it `query_weight`, `key_weight`, `value_weight`
    (and biases), as TE names them. attention_type "cross":
    `layernorm_query` or `query_layer` for q, `key_value` on
    encoder_output for k and v. Then optional QK norms (qk_norm_type
    "RMSNorm" or "LayerNorm" over d, before or after RoPE), RoPE on q and
    k (rotary_pos_emb: one tensor of angles for both, or a (q, k) pair),
    `core_attention` (a DotProductAttention) and `proj` (a Linear, its bias
    returned apart with return_bias). forward returns the output, then the
    bias with return_bias, then the norm's output with input_layernorm
    and return_layernorm_output.

    Refused: qk_norm_type "L2Normalization" (no te op yet), inference_params
    (KV-cache decoding is not in te_mlir.torch yet), and the arguments for
    tensor parallelism and userbuffers at other values than TE's
    defaults."""

    def __init__(self, hidden_size, num_attention_heads, kv_channels=None,
                 attention_dropout=0.1, layernorm_epsilon=1e-5,
                 init_method=None, output_layer_init_method=None,
                 layer_number=None, attn_mask_type="causal",
                 window_size=None, bottom_right_diagonal=None, tp_group=None,
                 tp_size=1, num_gqa_groups=None,
                 fuse_wgrad_accumulation=False, get_rng_state_tracker=None,
                 sequence_parallel=False, params_dtype=None,
                 return_bias=False, return_layernorm_output=False,
                 input_layernorm=False, attention_type="self",
                 set_parallel_mode=False, fuse_qkv_params=False,
                 zero_centered_gamma=False, qkv_weight_interleaved=True,
                 rotary_pos_interleaved=False, ub_overlap_ag=False,
                 ub_overlap_rs=False, ub_overlap_rs_dgrad=False,
                 ub_bulk_dgrad=False, ub_bulk_wgrad=False, bias=True,
                 normalization="LayerNorm", device="cpu", qkv_format="sbhd",
                 name=None, qk_norm_type=None, qk_norm_eps=1e-6,
                 qk_norm_before_rope=False, seq_length=None,
                 micro_batch_size=None, softmax_type="vanilla"):
        super().__init__()
        cls = type(self).__name__
        _base.refuse_unsupported(
            cls, tp_group=tp_group, tp_size=tp_size,
            sequence_parallel=sequence_parallel,
            set_parallel_mode=set_parallel_mode,
            fuse_wgrad_accumulation=fuse_wgrad_accumulation,
            ub_overlap_ag=ub_overlap_ag, ub_overlap_rs=ub_overlap_rs,
            ub_overlap_rs_dgrad=ub_overlap_rs_dgrad,
            ub_bulk_dgrad=ub_bulk_dgrad, ub_bulk_wgrad=ub_bulk_wgrad)
        if attention_type not in ("self", "cross"):
            raise ValueError(f"{cls}: attention_type must be 'self' or "
                             f"'cross', got {attention_type!r}")
        if qk_norm_type == "L2Normalization":
            raise NotImplementedError(
                f"{cls}(qk_norm_type='L2Normalization'): te has no L2 "
                "normalization op yet; use 'RMSNorm' or 'LayerNorm'")
        if qk_norm_type not in QK_NORMS:
            raise ValueError(f"{cls}: qk_norm_type must be None, 'RMSNorm' "
                             f"or 'LayerNorm', got {qk_norm_type!r}")
        heads = num_attention_heads
        groups = num_gqa_groups or heads
        if heads % groups:
            raise ValueError(f"{cls}: num_attention_heads={heads} must be a "
                             f"multiple of num_gqa_groups={groups}")
        channels = kv_channels or hidden_size // heads
        self.hidden_size = hidden_size
        self.num_attention_heads, self.num_gqa_groups = heads, groups
        self.hidden_size_per_attention_head = channels
        self.attention_type = attention_type
        self.attn_mask_type, self.window_size = attn_mask_type, window_size
        self.bottom_right_diagonal = bottom_right_diagonal
        self.input_layernorm = input_layernorm
        self.return_bias = return_bias
        self.return_layernorm_output = return_layernorm_output
        self.fuse_qkv_params = fuse_qkv_params
        self.qkv_weight_interleaved = (qkv_weight_interleaved and
                                       fuse_qkv_params)
        self.rotary_pos_interleaved = rotary_pos_interleaved
        self.qkv_format = qkv_format
        self.qk_norm_before_rope = qk_norm_before_rope
        self.layer_number, self.name = layer_number, name
        q_size, kv_size = heads * channels, groups * channels
        common = dict(init_method=init_method, bias=bias,
                      params_dtype=params_dtype, device=device,
                      get_rng_state_tracker=get_rng_state_tracker)
        with_norm = dict(eps=layernorm_epsilon, normalization=normalization,
                         zero_centered_gamma=zero_centered_gamma,
                         return_layernorm_output=return_layernorm_output)
        if attention_type == "self":
            split = None if fuse_qkv_params else {
                "query": q_size, "key": kv_size, "value": kv_size}
            if input_layernorm:
                self.layernorm_qkv = _module.LayerNormLinear(
                    hidden_size, q_size + 2 * kv_size, parameters_split=split,
                    **with_norm, **common)
            else:
                self.qkv = _module.Linear(hidden_size, q_size + 2 * kv_size,
                                          parameters_split=split, **common)
        else:
            if input_layernorm:
                self.layernorm_query = _module.LayerNormLinear(
                    hidden_size, q_size, parameters_split=None
                    if fuse_qkv_params else ("query",), **with_norm,
                    **common)
            else:
                self.query_layer = _module.Linear(hidden_size, q_size,
                                                  **common)
            self.key_value = _module.Linear(
                hidden_size, 2 * kv_size, parameters_split=None
                if fuse_qkv_params else ("key", "value"), **common)
        norm = {"RMSNorm": _module.RMSNorm,
                "LayerNorm": _module.LayerNorm}.get(qk_norm_type)
        self.q_norm = (norm(channels, eps=qk_norm_eps, params_dtype=
                            params_dtype) if norm else None)
        self.k_norm = (norm(channels, eps=qk_norm_eps, params_dtype=
                            params_dtype) if norm else None)
        self.core_attention = DotProductAttention(
            heads, channels, num_gqa_groups=groups,
            attention_dropout=attention_dropout, qkv_format=qkv_format,
            attn_mask_type=attn_mask_type, window_size=window_size,
            bottom_right_diagonal=bottom_right_diagonal,
            layer_number=layer_number, attention_type=attention_type,
            softmax_type=softmax_type,
            get_rng_state_tracker=get_rng_state_tracker)
        self.proj = _module.Linear(
            q_size, hidden_size, init_method=output_layer_init_method,
            bias=bias, return_bias=return_bias, params_dtype=params_dtype,
            device=device, get_rng_state_tracker=get_rng_state_tracker)

    def _qk_norm(self, q, k):
        if self.q_norm is None:
            return q, k
        return self.q_norm(q), self.k_norm(k)

    def forward(self, hidden_states, attention_mask=None, encoder_output=None,
                attn_mask_type=None, window_size=None,
                bottom_right_diagonal=None, is_first_microbatch=None,
                checkpoint_core_attention=False, inference_params=None,
                rotary_pos_emb=None, core_attention_bias_type="no_bias",
                core_attention_bias=None, alibi_slopes=None,
                cu_seqlens_q=None, cu_seqlens_kv=None,
                cu_seqlens_q_padded=None, cu_seqlens_kv_padded=None,
                max_seqlen_q=None, max_seqlen_kv=None, fast_zero_fill=True,
                pad_between_seqs=None):
        cls = type(self).__name__
        if inference_params is not None:
            raise NotImplementedError(
                f"{cls}.forward(inference_params=...): KV-cache decoding is "
                "not in te_mlir.torch yet; run the whole sequence with "
                "attn_mask_type='causal_bottom_right' instead")
        heads, groups = self.num_attention_heads, self.num_gqa_groups
        d = self.hidden_size_per_attention_head
        ln_out = None
        mb = dict(is_first_microbatch=is_first_microbatch)

        def project(layer, x):
            nonlocal ln_out
            out = layer(x, **mb)
            if isinstance(out, tuple):
                out, ln_out = out
            return out

        if self.attention_type == "self":
            layer = self.layernorm_qkv if self.input_layernorm else self.qkv
            q, k, v = split_heads(project(layer, hidden_states), heads,
                                  groups, d, self.qkv_weight_interleaved)
        else:
            if encoder_output is None:
                raise ValueError(f"{cls}: cross attention needs "
                                 "encoder_output")
            layer = (self.layernorm_query if self.input_layernorm
                     else self.query_layer)
            mixed = project(layer, hidden_states)
            q = mixed.reshape(*mixed.shape[:-1], heads, d)
            k, v = split_key_value(self.key_value(encoder_output, **mb),
                                   groups, d, self.qkv_weight_interleaved)
        if self.qk_norm_before_rope:
            q, k = self._qk_norm(q, k)
        if rotary_pos_emb is not None:
            q_emb, k_emb = (rotary_pos_emb if isinstance(
                rotary_pos_emb, (tuple, list)) else (rotary_pos_emb,) * 2)
            padded = bool(pad_between_seqs)
            cu_q = cu_seqlens_q_padded if padded else cu_seqlens_q
            cu_kv = cu_seqlens_kv_padded if padded else cu_seqlens_kv
            q = apply_rotary_pos_emb(q, q_emb, self.qkv_format, fused=True,
                                     cu_seqlens=cu_q,
                                     interleaved=self.rotary_pos_interleaved)
            k = apply_rotary_pos_emb(k, k_emb, self.qkv_format, fused=True,
                                     cu_seqlens=cu_kv,
                                     interleaved=self.rotary_pos_interleaved)
        if not self.qk_norm_before_rope:
            q, k = self._qk_norm(q, k)
        context = self.core_attention(
            q, k, v, attention_mask=attention_mask,
            qkv_format=self.qkv_format, cu_seqlens_q=cu_seqlens_q,
            cu_seqlens_kv=cu_seqlens_kv,
            cu_seqlens_q_padded=cu_seqlens_q_padded,
            cu_seqlens_kv_padded=cu_seqlens_kv_padded,
            max_seqlen_q=max_seqlen_q, max_seqlen_kv=max_seqlen_kv,
            attn_mask_type=attn_mask_type or self.attn_mask_type,
            window_size=(window_size if window_size is not None
                         else self.window_size),
            bottom_right_diagonal=bottom_right_diagonal,
            checkpoint_core_attention=checkpoint_core_attention,
            core_attention_bias_type=core_attention_bias_type,
            core_attention_bias=core_attention_bias,
            alibi_slopes=alibi_slopes)
        out = self.proj(context, **mb)
        outputs = list(out) if self.return_bias else [out]
        if self.input_layernorm and self.return_layernorm_output:
            outputs.append(ln_out)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
