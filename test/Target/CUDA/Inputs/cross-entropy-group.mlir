// Vocab-parallel cross-entropy (the vocabulary split over a group), with
// label smoothing and with reduce_loss over a group of one.
te.process_group @tp size 2
te.process_group @one size 1
func.func @vocab_parallel(%x: tensor<8x500xbf16>, %t: tensor<8xi64>) -> (tensor<8xf32>, tensor<8x500xf32>) {
  %l, %g = te.cross_entropy %x, %t label_smoothing 0.1 group @tp
      : tensor<8x500xbf16>, tensor<8xi64> -> tensor<8xf32>, tensor<8x500xf32>
  return %l, %g : tensor<8xf32>, tensor<8x500xf32>
}

func.func @group_of_one(%x: tensor<2x5x4000xbf16>, %t: tensor<2x5xi32>) -> (tensor<f32>, tensor<2x5x4000xf32>) {
  %l, %g = te.cross_entropy %x, %t ignore_index 3 reduce_loss group @one
      : tensor<2x5x4000xbf16>, tensor<2x5xi32> -> tensor<f32>, tensor<2x5x4000xf32>
  return %l, %g : tensor<f32>, tensor<2x5x4000xf32>
}
