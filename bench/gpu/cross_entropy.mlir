// te.cross_entropy and its backward on the cuda target at the issue's
// sizes (4096 tokens, vocab 32000, bf16): scripts/gpu-check.sh checks the
// GPU's values against the CPU's and times each entry
// (bench/gpu/torch_peers.py times torch's cross_entropy on the same work).
func.func @cross_entropy(%logits: tensor<4096x32000xbf16>, %t: tensor<4096xi64>) -> (tensor<f32>, tensor<4096x32000xf32>) {
  %loss, %g = te.cross_entropy %logits, %t label_smoothing 1.0e-01 reduce_loss
      : tensor<4096x32000xbf16>, tensor<4096xi64> -> tensor<f32>, tensor<4096x32000xf32>
  return %loss, %g : tensor<f32>, tensor<4096x32000xf32>
}

func.func @dcross_entropy(%g: tensor<4096x32000xf32>, %dloss: tensor<f32>) -> tensor<4096x32000xbf16> {
  %d = te.cross_entropy_backward %g, %dloss : tensor<4096x32000xf32>, tensor<f32> -> tensor<4096x32000xbf16>
  return %d : tensor<4096x32000xbf16>
}

// The vocab-parallel form over a group of one (the most a single GPU
// holds): cross_entropy_stats, then cross_entropy combining the one
// rank's statistics, against the CPU's single-rank kernel.
te.process_group @one size 1

func.func @cross_entropy_vocab_group(%logits: tensor<4096x32000xbf16>, %t: tensor<4096xi64>) -> (tensor<4096xf32>, tensor<4096x32000xbf16>) {
  %loss, %g = te.cross_entropy %logits, %t label_smoothing 1.0e-01 group @one
      : tensor<4096x32000xbf16>, tensor<4096xi64> -> tensor<4096xf32>, tensor<4096x32000xbf16>
  return %loss, %g : tensor<4096xf32>, tensor<4096x32000xbf16>
}
