// Backward configurations the flash kernels do not take; the cuda
// target names each reason (cuDNN takes d = 40).
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
