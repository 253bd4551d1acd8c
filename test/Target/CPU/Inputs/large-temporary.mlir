// A 4 GiB temporary (the filled tensor) between a scalar input and a
// scalar result: what a memory limit makes fail inside the kernel.
func.func @large_temporary(%x: tensor<f32>) -> tensor<f32> {
  %empty = tensor.empty() : tensor<1073741824xf32>
  %value = tensor.extract %x[] : tensor<f32>
  %filled = linalg.fill ins(%value : f32) outs(%empty : tensor<1073741824xf32>) -> tensor<1073741824xf32>
  %amax = te.amax %filled : tensor<1073741824xf32> -> tensor<f32>
  return %amax : tensor<f32>
}
