// Collectives for a plugin target: the fixture's provider takes the
// all_reduce sum and the all_gather and declines the average, which the
// native lowering takes.
te.process_group @tp size 2
func.func @step(%x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %s = te.all_reduce %x group @tp reduce sum : tensor<4x8xf32>
  %a = te.all_reduce %x group @tp reduce avg : tensor<4x8xf32>
  %g = te.all_gather %x group @tp dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  return %s, %a, %g : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
