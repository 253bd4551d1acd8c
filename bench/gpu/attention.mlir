// te.attention's flash kernel, checked by scripts/gpu-check.sh against the
// CPU within the output types' tolerance (the sums run in another order and
// the probabilities meet V rounded to the input type) and timed.

// Causal GQA (16 query heads over 4 key/value heads), bf16, with the LSE:
// the shape bench/gpu/torch_peers.py times PyTorch's SDPA on.
func.func @gqa_causal_bf16(%q: tensor<2x1024x16x64xbf16>, %k: tensor<2x1024x4x64xbf16>,
                           %v: tensor<2x1024x4x64xbf16>)
    -> (tensor<2x1024x16x64xbf16>, tensor<2x16x1024x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<2x1024x16x64xbf16>, tensor<2x1024x4x64xbf16>, tensor<2x1024x4x64xbf16>)
      -> (tensor<2x1024x16x64xbf16>, tensor<2x16x1024x1xf32>)
  return %o, %lse : tensor<2x1024x16x64xbf16>, tensor<2x16x1024x1xf32>
}

// f16, head dimension 128, no mask, partial query and key tiles, bhsd.
func.func @bhsd_f16_d128(%q: tensor<1x8x1000x128xf16>, %k: tensor<1x8x777x128xf16>,
                         %v: tensor<1x8x777x128xf16>)
    -> (tensor<1x8x1000x128xf16>, tensor<1x8x1000x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bhsd {return_lse}
      : (tensor<1x8x1000x128xf16>, tensor<1x8x777x128xf16>, tensor<1x8x777x128xf16>)
      -> (tensor<1x8x1000x128xf16>, tensor<1x8x1000x1xf32>)
  return %o, %lse : tensor<1x8x1000x128xf16>, tensor<1x8x1000x1xf32>
}

// sbhd, MQA, a sliding window on the bottom-right diagonal with more
// queries than keys: the first 100 rows see no key (O = 0, LSE = -inf).
func.func @sbhd_window_bottom_right(%q: tensor<300x2x4x32xbf16>, %k: tensor<200x2x1x32xbf16>,
                                    %v: tensor<200x2x1x32xbf16>)
    -> (tensor<300x2x4x32xbf16>, tensor<2x4x300x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout sbhd mask causal_bottom_right window [50, 0] scale 0.3 {return_lse}
      : (tensor<300x2x4x32xbf16>, tensor<200x2x1x32xbf16>, tensor<200x2x1x32xbf16>)
      -> (tensor<300x2x4x32xbf16>, tensor<2x4x300x1xf32>)
  return %o, %lse : tensor<300x2x4x32xbf16>, tensor<2x4x300x1xf32>
}

// Softmax with a learnable offset per head, d_qk 48 and d_v 32, a window
// on both sides of the top-left diagonal.
func.func @learnable_window(%q: tensor<1x200x4x48xbf16>, %k: tensor<1x333x2x48xbf16>,
                            %v: tensor<1x333x2x32xbf16>, %alpha: tensor<1x4x1x1xf32>)
    -> (tensor<1x200x4x32xbf16>, tensor<1x4x200x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd window [40, 70] softmax learnable
      softmax_offset(%alpha) {return_lse}
      : (tensor<1x200x4x48xbf16>, tensor<1x333x2x48xbf16>, tensor<1x333x2x32xbf16>,
         tensor<1x4x1x1xf32>)
      -> (tensor<1x200x4x32xbf16>, tensor<1x4x200x1xf32>)
  return %o, %lse : tensor<1x200x4x32xbf16>, tensor<1x4x200x1xf32>
}

// off_by_one softmax, causal with the diagonal bottom-right: rows that see
// no key have O = 0 and LSE = 0.
func.func @off_by_one_causal(%q: tensor<1x130x2x64xf16>, %k: tensor<1x100x2x64xf16>,
                             %v: tensor<1x100x2x64xf16>)
    -> (tensor<1x130x2x64xf16>, tensor<1x2x130x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal_bottom_right softmax off_by_one {return_lse}
      : (tensor<1x130x2x64xf16>, tensor<1x100x2x64xf16>, tensor<1x100x2x64xf16>)
      -> (tensor<1x130x2x64xf16>, tensor<1x2x130x1xf32>)
  return %o, %lse : tensor<1x130x2x64xf16>, tensor<1x2x130x1xf32>
}

// thd: five sequences packed in 2000 tokens, padding-causal, ALiBi, f16
// with d = 128: the example's configuration at a size worth timing.
// Tokens of no sequence get O = 0 and LSE = -inf, as on the CPU.
func.func @thd_alibi_f16_d128(%q: tensor<2000x8x128xf16>, %k: tensor<2000x8x128xf16>,
                              %v: tensor<2000x8x128xf16>, %cu_q: tensor<6xi32>,
                              %cu_kv: tensor<6xi32>, %slopes: tensor<8xf32>)
    -> (tensor<2000x8x128xf16>, tensor<2000x8x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding_causal bias alibi
      cu_seqlens(%cu_q, %cu_kv) alibi_slopes(%slopes) {return_lse}
      : (tensor<2000x8x128xf16>, tensor<2000x8x128xf16>, tensor<2000x8x128xf16>,
         tensor<6xi32>, tensor<6xi32>, tensor<8xf32>)
      -> (tensor<2000x8x128xf16>, tensor<2000x8x1xf32>)
  return %o, %lse : tensor<2000x8x128xf16>, tensor<2000x8x1xf32>
}

// thd with seq_offsets (sequences apart from each other), GQA, the
// diagonal bottom-right with a left window, ALiBi slopes per sequence and
// the off_by_one softmax.
func.func @thd_offsets_window(%q: tensor<700x8x64xbf16>, %k: tensor<900x2x64xbf16>,
                              %v: tensor<900x2x64xbf16>, %cu_q: tensor<4xi32>,
                              %cu_kv: tensor<4xi32>, %off_q: tensor<4xi32>,
                              %off_kv: tensor<4xi32>, %slopes: tensor<3x8xf32>)
    -> (tensor<700x8x64xbf16>, tensor<700x8x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding_causal_bottom_right window [32, 0]
      bias alibi softmax off_by_one cu_seqlens(%cu_q, %cu_kv) seq_offsets(%off_q, %off_kv)
      alibi_slopes(%slopes) {return_lse}
      : (tensor<700x8x64xbf16>, tensor<900x2x64xbf16>, tensor<900x2x64xbf16>,
         tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3x8xf32>)
      -> (tensor<700x8x64xbf16>, tensor<700x8x1xf32>)
  return %o, %lse : tensor<700x8x64xbf16>, tensor<700x8x1xf32>
}

// bshd with padding: per-batch lengths of queries and keys; rows past a
// query length are zero, keys past a key length unseen.
func.func @padding_bshd(%q: tensor<4x256x4x64xbf16>, %k: tensor<4x300x4x64xbf16>,
                        %v: tensor<4x300x4x64xbf16>, %len_q: tensor<4xi32>,
                        %len_kv: tensor<4xi32>)
    -> (tensor<4x256x4x64xbf16>, tensor<4x4x256x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask padding_causal seqlens(%len_q, %len_kv) {return_lse}
      : (tensor<4x256x4x64xbf16>, tensor<4x300x4x64xbf16>, tensor<4x300x4x64xbf16>,
         tensor<4xi32>, tensor<4xi32>)
      -> (tensor<4x256x4x64xbf16>, tensor<4x4x256x1xf32>)
  return %o, %lse : tensor<4x256x4x64xbf16>, tensor<4x4x256x1xf32>
}

// An arbitrary mask (per head, broadcast over the batch) and a pre_scale
// bias (per batch entry, broadcast over the heads), f16 bhsd, with the LSE.
func.func @pre_scale_bias_arbitrary_mask(%q: tensor<2x4x130x64xf16>, %k: tensor<2x4x190x64xf16>,
                                         %v: tensor<2x4x190x64xf16>, %bias: tensor<2x1x130x190xf16>,
                                         %mask: tensor<1x4x130x190xi1>)
    -> (tensor<2x4x130x64xf16>, tensor<2x4x130x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bhsd mask arbitrary bias pre_scale
      mask_tensor(%mask) bias_tensor(%bias) {return_lse}
      : (tensor<2x4x130x64xf16>, tensor<2x4x190x64xf16>, tensor<2x4x190x64xf16>,
         tensor<1x4x130x190xi1>, tensor<2x1x130x190xf16>)
      -> (tensor<2x4x130x64xf16>, tensor<2x4x130x1xf32>)
  return %o, %lse : tensor<2x4x130x64xf16>, tensor<2x4x130x1xf32>
}

// Causal GQA with a post_scale bias and dropout (te's documented hash: the
// same kept elements as the CPU), bf16 bshd, d = 128.
func.func @post_scale_bias_dropout(%q: tensor<1x256x4x128xbf16>, %k: tensor<1x256x2x128xbf16>,
                                   %v: tensor<1x256x2x128xbf16>, %bias: tensor<1x4x256x256xbf16>,
                                   %rng: tensor<2xi64>)
    -> (tensor<1x256x4x128xbf16>, tensor<1x4x256x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal bias post_scale dropout 1.250000e-01
      bias_tensor(%bias) rng_state(%rng) {return_lse}
      : (tensor<1x256x4x128xbf16>, tensor<1x256x2x128xbf16>, tensor<1x256x2x128xbf16>,
         tensor<1x4x256x256xbf16>, tensor<2xi64>)
      -> (tensor<1x256x4x128xbf16>, tensor<1x4x256x1xf32>)
  return %o, %lse : tensor<1x256x4x128xbf16>, tensor<1x4x256x1xf32>
}
