func.func @mean(%logits: tensor<2x5x32000xbf16>, %t: tensor<2x5xi64>) -> (tensor<f32>, tensor<2x5x32000xf32>) {
  %loss, %g = te.cross_entropy %logits, %t label_smoothing 1.0e-01 reduce_loss
      : tensor<2x5x32000xbf16>, tensor<2x5xi64> -> tensor<f32>, tensor<2x5x32000xf32>
  return %loss, %g : tensor<f32>, tensor<2x5x32000xf32>
}

func.func @per_row(%logits: tensor<7x13xf32>, %t: tensor<7xi32>) -> (tensor<7xf32>, tensor<7x13xf32>) {
  %loss, %g = te.cross_entropy %logits, %t ignore_index 3
      : tensor<7x13xf32>, tensor<7xi32> -> tensor<7xf32>, tensor<7x13xf32>
  return %loss, %g : tensor<7xf32>, tensor<7x13xf32>
}

func.func @backward(%g: tensor<2x5x32000xf32>, %dloss: tensor<f32>) -> tensor<2x5x32000xbf16> {
  %d = te.cross_entropy_backward %g, %dloss : tensor<2x5x32000xf32>, tensor<f32> -> tensor<2x5x32000xbf16>
  return %d : tensor<2x5x32000xbf16>
}

func.func @backward_rows(%g: tensor<7x13xf32>, %dloss: tensor<7xf32>) -> tensor<7x13xf32> {
  %d = te.cross_entropy_backward %g, %dloss : tensor<7x13xf32>, tensor<7xf32> -> tensor<7x13xf32>
  return %d : tensor<7x13xf32>
}
