"""Transformer Engine's TransformerLayer at its import path
(transformer_engine.pytorch.transformer): self attention, optional cross
attention and the MLP, with TE's residual connections and dropouts."""

import torch
import torch.nn.functional as F

from . import module as _module
from ._common import compute_dtype
from .attention.multi_head_attention import MultiheadAttention
from .module import _base

__all__ = ["TransformerLayer"]


class DropPath(torch.nn.Module):
    """Stochastic depth (TE's DropPath): in training, zeroes the branch of
    each index of dimension 0 (as TE's drop_path draws it) with
    probability drop_prob and scales the kept ones by 1 / (1 -
    drop_prob)."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1.0 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        mask = x.new_empty(shape).bernoulli_(keep)
        return x * mask / keep


class TransformerLayer(torch.nn.Module):
    """Transformer Engine's TransformerLayer, with TE's constructor
    (arguments in TE's order and with its defaults), submodules
    (`self_attention`, `inter_attention` for layer_type "decoder",
    `layernorm_mlp`, `layernorm` with output_layernorm) and forward.

    The default (pre-norm) layer computes x1 = x + dropout(attn(norm(x)) +
    proj_bias), out = x1 + dropout(mlp(norm(x1)) + fc2_bias), dropout with
    probability hidden_dropout in training; the attention's and the MLP's
    norms are fused into their first GEMMs (LayerNormLinear,
    LayerNormMLP). apply_residual_connection_post_layernorm adds the
    residual after the norm instead, output_layernorm moves the norm to
    the output, parallel_attention_mlp adds attention and MLP of the same
    input, drop_path_rate adds stochastic depth, as in TE. Every GEMM,
    norm, activation, RoPE and attention is te's (see MultiheadAttention
    and LayerNormMLP); the dropouts and residual sums are torch's, as in
    TE.

    Refused: inference_params (no KV cache yet), ub_tp_comm_overlap and the
    tensor-parallel arguments at other values than TE's defaults, and what
    MultiheadAttention refuses (qk_norm_type "L2Normalization")."""

    def __init__(self, hidden_size, ffn_hidden_size, num_attention_heads,
                 num_gqa_groups=None, layernorm_epsilon=1e-5,
                 hidden_dropout=0.1, attention_dropout=0.1, init_method=None,
                 output_layer_init_method=None, layer_number=None,
                 kv_channels=None, self_attn_mask_type="causal",
                 window_size=None, bottom_right_diagonal=None,
                 enc_dec_attn_mask_type="no_mask",
                 enc_dec_bottom_right_diagonal=None, enc_dec_window_size=None,
                 tp_group=None, tp_size=1, params_dtype=None,
                 get_rng_state_tracker=None, fuse_wgrad_accumulation=False,
                 seq_length=None, micro_batch_size=None,
                 sequence_parallel=False,
                 apply_residual_connection_post_layernorm=False,
                 output_layernorm=False, parallel_attention_mlp=False,
                 layer_type="encoder", drop_path_rate=0.0,
                 set_parallel_mode=False, fuse_qkv_params=False,
                 rotary_pos_interleaved=False, zero_centered_gamma=False,
                 qkv_weight_interleaved=True, ub_tp_comm_overlap=False,
                 ub_overlap_ag=True, ub_overlap_rs=True,
                 ub_overlap_rs_dgrad=False, ub_bulk_dgrad=True,
                 ub_bulk_wgrad=True, bias=True, activation="gelu",
                 activation_params=None, normalization="LayerNorm",
                 device="cpu", attn_input_format="sbhd", name=None,
                 qk_norm_type=None, qk_norm_eps=1e-6,
                 qk_norm_before_rope=False, softmax_type="vanilla"):
        super().__init__()
        cls = type(self).__name__
        if ub_tp_comm_overlap:
            raise NotImplementedError(
                f"{cls}(ub_tp_comm_overlap=True): te_mlir.torch has no "
                "userbuffers; the ub_* flags take effect only with it")
        if fuse_wgrad_accumulation and not fuse_qkv_params:
            raise ValueError(f"{cls}: fuse_wgrad_accumulation needs "
                             "fuse_qkv_params, as in TE")
        _base.refuse_unsupported(
            cls, tp_group=tp_group, tp_size=tp_size,
            sequence_parallel=sequence_parallel,
            set_parallel_mode=set_parallel_mode,
            fuse_wgrad_accumulation=fuse_wgrad_accumulation)
        if layer_type not in ("encoder", "decoder"):
            raise ValueError(f"{cls}: layer_type must be 'encoder' or "
                             f"'decoder', got {layer_type!r}")
        if parallel_attention_mlp and (
                layer_type != "encoder" or output_layernorm or
                apply_residual_connection_post_layernorm):
            raise ValueError(f"{cls}: parallel_attention_mlp needs "
                             "layer_type 'encoder' without output_layernorm "
                             "or apply_residual_connection_post_layernorm, "
                             "as in TE")
        self.hidden_size = hidden_size
        self.self_attn_mask_type = self_attn_mask_type
        self.window_size = window_size
        self.bottom_right_diagonal = bottom_right_diagonal
        self.enc_dec_attn_mask_type = enc_dec_attn_mask_type
        self.enc_dec_window_size = enc_dec_window_size
        self.enc_dec_bottom_right_diagonal = enc_dec_bottom_right_diagonal
        self.hidden_dropout = hidden_dropout
        self.layer_type = layer_type
        self.output_layernorm = output_layernorm
        self.parallel_attention_mlp = parallel_attention_mlp
        self.apply_residual_connection_post_layernorm = \
            apply_residual_connection_post_layernorm
        self.attn_input_format = attn_input_format
        self.name = name
        attention = dict(
            layer_number=layer_number, num_gqa_groups=num_gqa_groups,
            get_rng_state_tracker=get_rng_state_tracker,
            params_dtype=params_dtype, fuse_qkv_params=fuse_qkv_params,
            zero_centered_gamma=zero_centered_gamma,
            qkv_weight_interleaved=qkv_weight_interleaved,
            rotary_pos_interleaved=rotary_pos_interleaved,
            return_layernorm_output=apply_residual_connection_post_layernorm,
            qkv_format=attn_input_format, bias=bias,
            normalization=normalization, device=device,
            qk_norm_type=qk_norm_type, qk_norm_eps=qk_norm_eps,
            qk_norm_before_rope=qk_norm_before_rope,
            softmax_type=softmax_type)
        positional = (hidden_size, num_attention_heads, kv_channels,
                      attention_dropout, layernorm_epsilon, init_method,
                      output_layer_init_method)
        self.self_attention = MultiheadAttention(
            *positional, attn_mask_type=self_attn_mask_type,
            window_size=window_size,
            bottom_right_diagonal=bottom_right_diagonal,
            input_layernorm=not output_layernorm, attention_type="self",
            return_bias=not parallel_attention_mlp, **attention)
        if layer_type == "decoder":
            self.inter_attention = MultiheadAttention(
                *positional, attn_mask_type=enc_dec_attn_mask_type,
                window_size=enc_dec_window_size,
                bottom_right_diagonal=enc_dec_bottom_right_diagonal,
                input_layernorm=True, attention_type="cross",
                return_bias=True, **attention)
        self.layernorm_mlp = _module.LayerNormMLP(
            hidden_size, ffn_hidden_size, eps=layernorm_epsilon,
            init_method=init_method,
            output_layer_init_method=output_layer_init_method, bias=bias,
            return_bias=not parallel_attention_mlp,
            return_layernorm_output=apply_residual_connection_post_layernorm,
            activation=activation, activation_params=activation_params,
            normalization=normalization,
            zero_centered_gamma=zero_centered_gamma,
            params_dtype=params_dtype, device=device,
            get_rng_state_tracker=get_rng_state_tracker,
            seq_length=seq_length, micro_batch_size=micro_batch_size)
        if output_layernorm:
            norm = (_module.LayerNorm if normalization == "LayerNorm"
                    else _module.RMSNorm)
            self.layernorm = norm(hidden_size, eps=layernorm_epsilon,
                                  params_dtype=params_dtype,
                                  zero_centered_gamma=zero_centered_gamma)
        self.drop_path = (DropPath(drop_path_rate) if drop_path_rate > 0.0
                          else None)

    def _bias_dropout_add(self, x, bias, residual, drop_path=None):
        """residual + dropout(x + bias) (TE's bias_dropout_add), the branch
        dropped whole by drop_path where it applies."""
        if bias is not None:
            x = x + bias
        x = F.dropout(x, p=self.hidden_dropout, training=self.training)
        if drop_path is not None:
            x = drop_path(x)
        return residual + x

    def forward(self, hidden_states, attention_mask=None,
                self_attn_mask_type=None, window_size=None,
                bottom_right_diagonal=None, encoder_output=None,
                enc_dec_attn_mask=None, enc_dec_attn_mask_type=None,
                enc_dec_window_size=None, enc_dec_bottom_right_diagonal=None,
                is_first_microbatch=None, checkpoint_core_attention=False,
                inference_params=None, rotary_pos_emb=None,
                core_attention_bias_type="no_bias", core_attention_bias=None,
                alibi_slopes=None, cu_seqlens_q=None, cu_seqlens_kv=None,
                cu_seqlens_q_padded=None, cu_seqlens_kv_padded=None,
                max_seqlen_q=None, max_seqlen_kv=None, fast_zero_fill=True,
                pad_between_seqs=None):
        if inference_params is not None:
            raise NotImplementedError(
                "TransformerLayer.forward(inference_params=...): KV-cache "
                "decoding is not in te_mlir.torch yet")
        x = hidden_states.contiguous()
        dtype = compute_dtype(None)
        if dtype is not None:
            x = x.to(dtype)
        # As TE: self attention's residual is its norm's output only when
        # the norm is at its input; cross attention and the MLP always
        # take theirs under apply_residual_connection_post_layernorm.
        post_ln = self.apply_residual_connection_post_layernorm and \
            not self.output_layernorm
        out = self.self_attention(
            x, attention_mask=attention_mask,
            attn_mask_type=self_attn_mask_type or self.self_attn_mask_type,
            window_size=(window_size if window_size is not None
                         else self.window_size),
            bottom_right_diagonal=bottom_right_diagonal,
            is_first_microbatch=is_first_microbatch,
            checkpoint_core_attention=checkpoint_core_attention,
            rotary_pos_emb=rotary_pos_emb,
            core_attention_bias_type=core_attention_bias_type,
            core_attention_bias=core_attention_bias,
            alibi_slopes=alibi_slopes, cu_seqlens_q=cu_seqlens_q,
            cu_seqlens_kv=cu_seqlens_q,
            cu_seqlens_q_padded=cu_seqlens_q_padded,
            cu_seqlens_kv_padded=cu_seqlens_q_padded,
            max_seqlen_q=max_seqlen_q, max_seqlen_kv=max_seqlen_q,
            pad_between_seqs=pad_between_seqs)
        if self.parallel_attention_mlp:
            attn_out = out
        elif post_ln:
            attn_out, attn_bias, ln_out = out
            x_attn = self._bias_dropout_add(attn_out, attn_bias, ln_out,
                                            self.drop_path)
        else:
            attn_out, attn_bias = out[:2]
            x_attn = self._bias_dropout_add(attn_out, attn_bias, x,
                                            self.drop_path)
        if self.layer_type == "decoder":
            cross = self.inter_attention(
                x_attn, attention_mask=enc_dec_attn_mask,
                encoder_output=encoder_output,
                attn_mask_type=(enc_dec_attn_mask_type or
                                self.enc_dec_attn_mask_type),
                window_size=(enc_dec_window_size
                             if enc_dec_window_size is not None
                             else self.enc_dec_window_size),
                bottom_right_diagonal=enc_dec_bottom_right_diagonal,
                is_first_microbatch=is_first_microbatch,
                checkpoint_core_attention=checkpoint_core_attention,
                rotary_pos_emb=rotary_pos_emb,
                core_attention_bias_type=core_attention_bias_type,
                core_attention_bias=core_attention_bias,
                alibi_slopes=alibi_slopes,
                cu_seqlens_q=cu_seqlens_q, cu_seqlens_kv=cu_seqlens_kv,
                cu_seqlens_q_padded=cu_seqlens_q_padded,
                cu_seqlens_kv_padded=cu_seqlens_kv_padded,
                max_seqlen_q=max_seqlen_q, max_seqlen_kv=max_seqlen_kv,
                pad_between_seqs=pad_between_seqs)
            if self.apply_residual_connection_post_layernorm:
                cross_out, cross_bias, residual = cross
            else:
                (cross_out, cross_bias), residual = cross[:2], x_attn
            x_attn = self._bias_dropout_add(cross_out, cross_bias, residual)
        if self.parallel_attention_mlp:
            mlp_out = self.layernorm_mlp(
                x, is_first_microbatch=is_first_microbatch)
            output = self._bias_dropout_add(attn_out, mlp_out, x,
                                            self.drop_path)
        else:
            mlp = self.layernorm_mlp(x_attn,
                                     is_first_microbatch=is_first_microbatch)
            if self.apply_residual_connection_post_layernorm:
                mlp_out, mlp_bias, residual = mlp
            else:
                (mlp_out, mlp_bias), residual = mlp[:2], x_attn
            output = self._bias_dropout_add(mlp_out, mlp_bias, residual,
                                            self.drop_path)
        if self.output_layernorm:
            output = self.layernorm(output)
        return output
