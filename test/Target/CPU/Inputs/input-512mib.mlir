// A 512 MiB input and a scalar result.
func.func @large_input(%x: tensor<134217728xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<134217728xf32> -> tensor<f32>
  return %a : tensor<f32>
}
