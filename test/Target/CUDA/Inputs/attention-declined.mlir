// Attention configurations the flash kernel does not take; the cuda
// target names each reason (cuDNN takes d = 40).
func.func @f32(%q: tensor<1x64x2x64xf32>) -> tensor<1x64x2x64xf32> {
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>, tensor<1x64x2x64xf32>) -> tensor<1x64x2x64xf32>
  return %o : tensor<1x64x2x64xf32>
}
func.func @head_dim_256(%q: tensor<1x64x2x256xbf16>) -> tensor<1x64x2x256xbf16> {
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x64x2x256xbf16>, tensor<1x64x2x256xbf16>, tensor<1x64x2x256xbf16>) -> tensor<1x64x2x256xbf16>
  return %o : tensor<1x64x2x256xbf16>
}
func.func @head_dim_40(%q: tensor<1x64x2x40xf16>) -> tensor<1x64x2x40xf16> {
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x64x2x40xf16>, tensor<1x64x2x40xf16>, tensor<1x64x2x40xf16>) -> tensor<1x64x2x40xf16>
  return %o : tensor<1x64x2x40xf16>
}
