func.func @amax(%x: tensor<1024xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<1024xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
