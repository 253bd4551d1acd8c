func.func @quantized(%x: tensor<32x64xbf16>) -> (tensor<32x32xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %s = arith.constant dense<1.0> : tensor<f32>
  %q, %si, %a = te.activation %x scale(%s) kind swiglu quantize per_tensor : tensor<32x64xbf16>, tensor<f32> -> tensor<32x32xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %q, %si, %a : tensor<32x32xf8E4M3FN>, tensor<f32>, tensor<f32>
}

func.func @dbias(%g: tensor<32x64xbf16>, %x: tensor<32x64xbf16>) -> (tensor<32x64xbf16>, tensor<64xbf16>) {
  %dx, %db = te.activation_backward %g, %x kind gelu dbias : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>, tensor<64xbf16>
  return %dx, %db : tensor<32x64xbf16>, tensor<64xbf16>
}
