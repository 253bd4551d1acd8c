// Masks, biases and dropout the flash kernels take (cuDNN does not).
func.func @pre_scale(%q: tensor<1x64x2x64xbf16>, %bias: tensor<1x2x64x64xbf16>) -> tensor<1x64x2x64xbf16> {
  %o = te.attention %q, %q, %q layout bshd bias pre_scale bias_tensor(%bias)
      : (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x64x2x64xbf16>
  return %o : tensor<1x64x2x64xbf16>
}
func.func @arbitrary(%q: tensor<1x64x2x64xbf16>, %m: tensor<1x1x64x64xi1>) -> tensor<1x64x2x64xbf16> {
  %o = te.attention %q, %q, %q layout bshd mask arbitrary mask_tensor(%m)
      : (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x1x64x64xi1>) -> tensor<1x64x2x64xbf16>
  return %o : tensor<1x64x2x64xbf16>
}
func.func @post_scale_bias(%q: tensor<1x64x2x64xbf16>, %b: tensor<1x2x64x64xbf16>) -> tensor<1x64x2x64xbf16> {
  %o = te.attention %q, %q, %q layout bshd bias post_scale bias_tensor(%b)
      : (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x64x2x64xbf16>
  return %o : tensor<1x64x2x64xbf16>
}
func.func @dropout(%q: tensor<1x64x2x64xbf16>, %rng: tensor<2xi64>) -> tensor<1x64x2x64xbf16> {
  %o = te.attention %q, %q, %q layout bshd dropout 1.000000e-01 rng_state(%rng)
      : (tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16>, tensor<2xi64>) -> tensor<1x64x2x64xbf16>
  return %o : tensor<1x64x2x64xbf16>
}
