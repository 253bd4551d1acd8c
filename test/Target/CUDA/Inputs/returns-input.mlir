func.func @f(%x: tensor<64xf32>) -> (tensor<f32>, tensor<64xf32>) {
  %a = te.amax %x : tensor<64xf32> -> tensor<f32>
  return %a, %x : tensor<f32>, tensor<64xf32>
}
