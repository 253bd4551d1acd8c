func.func @swiglu(%x: tensor<4x6x64xbf16>) -> tensor<4x6x32xbf16> {
  %y = te.activation %x kind swiglu : tensor<4x6x64xbf16> -> tensor<4x6x32xbf16>
  return %y : tensor<4x6x32xbf16>
}

func.func @gelu(%x: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %y = te.activation %x kind gelu : tensor<5x7xf32> -> tensor<5x7xf32>
  return %y : tensor<5x7xf32>
}

func.func @dswiglu(%g: tensor<24x32xbf16>, %x: tensor<24x64xbf16>) -> tensor<24x64xbf16> {
  %dx = te.activation_backward %g, %x kind clamped_swiglu limit 7.0 : tensor<24x32xbf16>, tensor<24x64xbf16> -> tensor<24x64xbf16>
  return %dx : tensor<24x64xbf16>
}

func.func @dgelu(%g: tensor<16x8xf16>, %x: tensor<16x8xf16>) -> tensor<16x8xf16> {
  %dx = te.activation_backward %g, %x kind gelu : tensor<16x8xf16>, tensor<16x8xf16> -> tensor<16x8xf16>
  return %dx : tensor<16x8xf16>
}

func.func @dglu(%g: tensor<16x32xbf16>, %x: tensor<16x64xbf16>) -> tensor<16x64xbf16> {
  %dx = te.activation_backward %g, %x kind glu : tensor<16x32xbf16>, tensor<16x64xbf16> -> tensor<16x64xbf16>
  return %dx : tensor<16x64xbf16>
}
