// An input of 64 GiB, as the sparse .npy of the test holds it.
func.func @large_input(%x: tensor<16x1024x1024x1024xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<16x1024x1024x1024xf32> -> tensor<f32>
  return %a : tensor<f32>
}
