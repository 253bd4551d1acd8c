// A program with ops the fixture plugins take (te.amax of f32, te.quantize
// per_tensor) and one they decline (te.amax of bf16).
func.func @step(%x: tensor<4x8xf32>, %y: tensor<8xbf16>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %a = te.amax %x : tensor<4x8xf32> -> tensor<f32>
  %b = te.amax %y : tensor<8xbf16> -> tensor<f32>
  %d, %si, %am = te.quantize %x scale(%s) mode per_tensor
      : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %a, %b, %d, %si, %am
      : tensor<f32>, tensor<f32>, tensor<4x8xf8E4M3FN>, tensor<f32>, tensor<f32>
}
