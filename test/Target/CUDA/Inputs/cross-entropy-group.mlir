// Vocab-parallel cross-entropy (the vocabulary split over a group): the
// cuda target has no kernels for it yet and says so.
te.process_group @tp size 2
func.func @vocab_parallel(%x: tensor<8x500xbf16>, %t: tensor<8xi64>) -> (tensor<8xf32>, tensor<8x500xf32>) {
  %l, %g = te.cross_entropy %x, %t group @tp
      : tensor<8x500xbf16>, tensor<8xi64> -> tensor<8xf32>, tensor<8x500xf32>
  return %l, %g : tensor<8xf32>, tensor<8x500xf32>
}
