func.func @norms(%x: tensor<2x3x96xbf16>, %g: tensor<96xbf16>, %b: tensor<96xbf16>, %dz: tensor<2x3x96xbf16>) -> (tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<2x3x96xbf16>, tensor<96xbf16>, tensor<96xbf16>) {
  %z, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05 zero_centered_gamma
      : tensor<2x3x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
      -> tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<2x3xf32>
  %z2, %rs2 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05
      : tensor<2x3x96xbf16>, tensor<96xbf16> -> tensor<2x3x96xbf16>, tensor<2x3xf32>
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm zero_centered_gamma
      : tensor<2x3x96xbf16>, tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<96xbf16>, tensor<2x3xf32>
      -> tensor<2x3x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
  return %z, %mu, %rs, %z2, %rs2, %dx, %dg, %db : tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x96xbf16>, tensor<2x3xf32>, tensor<2x3x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
}
