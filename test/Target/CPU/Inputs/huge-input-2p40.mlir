// An input of 2^40 f32 elements (4 TiB).
func.func @huge(%x: tensor<1099511627776xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<1099511627776xf32> -> tensor<f32>
  return %a : tensor<f32>
}
