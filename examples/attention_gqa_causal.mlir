// Causal grouped-query attention in bf16: 16 query heads share 4 key/value
// heads; the forward pass keeps the log-sum-exp for the backward pass.
func.func @attention_step(%q: tensor<2x256x16x64xbf16>, %k: tensor<2x256x4x64xbf16>,
                          %v: tensor<2x256x4x64xbf16>, %d_o: tensor<2x256x16x64xbf16>)
    -> (tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>,
        tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal window [128, 0] {return_lse}
      : (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>)
      -> (tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>)
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %d_o, %lse
      layout bshd mask causal window [128, 0]
      : (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>,
         tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>)
      -> (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>,
                             tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>
}
