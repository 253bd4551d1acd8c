// Backward configurations the flash kernels do not take yet; the cuda
// target names each (and the CPU lowers them).
func.func @dropout(%q: tensor<1x64x2x64xbf16>, %lse: tensor<1x2x64x1xf32>, %rng: tensor<2xi64>) -> tensor<1x64x2x64xbf16> {
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd mask causal dropout 0.1 rng_state(%rng)
      : (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>,
         tensor<1x64x2x64xbf16>, tensor<1x2x64x1xf32>, tensor<2xi64>)
      -> (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>)
  return %dq : tensor<1x64x2x64xbf16>
}
func.func @head_dim_40(%q: tensor<1x64x2x40xbf16>, %lse: tensor<1x2x64x1xf32>) -> tensor<1x64x2x40xbf16> {
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd
      : (tensor<1x64x2x40xbf16>, tensor<1x64x2x40xbf16>, tensor<1x64x2x40xbf16>, tensor<1x64x2x40xbf16>,
         tensor<1x64x2x40xbf16>, tensor<1x2x64x1xf32>)
      -> (tensor<1x64x2x40xbf16>, tensor<1x64x2x40xbf16>, tensor<1x64x2x40xbf16>)
  return %dq : tensor<1x64x2x40xbf16>
}
func.func @f32(%q: tensor<1x64x2x64xf32>, %lse: tensor<1x2x64x1xf32>) -> tensor<1x64x2x64xf32> {
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd
      : (tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>,
         tensor<1x64x2x64xf32>, tensor<1x2x64x1xf32>)
      -> (tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>)
  return %dq : tensor<1x64x2x64xf32>
}
