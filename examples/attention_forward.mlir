// Causal grouped-query attention forward in bf16 (16 query heads over 4
// key/value heads) with the log-sum-exp kept for the backward pass.
func.func @attention(%q: tensor<2x256x16x64xbf16>, %k: tensor<2x256x4x64xbf16>,
                     %v: tensor<2x256x4x64xbf16>)
    -> (tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<2x256x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x64xbf16>)
      -> (tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>)
  return %o, %lse : tensor<2x256x16x64xbf16>, tensor<2x16x256x1xf32>
}
