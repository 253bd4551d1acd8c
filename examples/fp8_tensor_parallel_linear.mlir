// Tensor-parallel FP8 linear layers as Transformer Engine runs them with
// sequence parallelism, on tensor-parallel groups of 2 ranks (mpirun -np 2,
// or -np 4 for two groups: ranks 0-1 and 2-3):
//
// @column_parallel: each rank holds a sequence shard of the activations and
// a shard of the weight's output columns. The activations' amax is
// all-reduced (MAX) over the group, so that every rank quantizes with the
// same scale; the FP8 payload is all-gathered along the sequence and
// multiplied by the local weight shard (current scaling, E4M3).
//
// @row_parallel: each rank holds a shard of the inner dimension of both;
// the partial products are reduce-scattered (SUM) along the sequence, the
// input of the next sequence-parallel region.
//
// @delayed_scaling_step and @mxfp8_all_gather (below): delayed scaling with
// a reduced amax, and the all-gather of an MXFP8 payload with its scales.
te.process_group @tp size 2

func.func @column_parallel(%x: tensor<64x256xbf16>, %w: tensor<96x256xbf16>)
    -> (tensor<128x96xbf16>, tensor<f32>) {
  %amax = te.amax %x : tensor<64x256xbf16> -> tensor<f32>
  %group_amax = te.all_reduce %amax group @tp reduce max : tensor<f32>
  %scale = te.compute_scale %group_amax fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %xq, %x_si, %x_amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x256xbf16>, tensor<f32>
      -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %x_full = te.all_gather %xq group @tp dim 0
      : tensor<64x256xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
  %w_amax = te.amax %w : tensor<96x256xbf16> -> tensor<f32>
  %w_scale = te.compute_scale %w_amax fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %wq, %w_si, %w_amax2 = te.quantize %w scale(%w_scale) mode per_tensor
      : tensor<96x256xbf16>, tensor<f32>
      -> tensor<96x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %y = te.scaled_matmul %x_full, %wq scales(%x_si, %w_si) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<96x256xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<128x96xbf16>
  return %y, %group_amax : tensor<128x96xbf16>, tensor<f32>
}

func.func @row_parallel(%x: tensor<128x64xbf16>, %w: tensor<96x64xbf16>)
    -> tensor<64x96xf32> {
  %x_amax = te.amax %x : tensor<128x64xbf16> -> tensor<f32>
  %x_scale = te.compute_scale %x_amax fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %xq, %x_si, %x_amax2 = te.quantize %x scale(%x_scale) mode per_tensor
      : tensor<128x64xbf16>, tensor<f32>
      -> tensor<128x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  %w_amax = te.amax %w : tensor<96x64xbf16> -> tensor<f32>
  %w_scale = te.compute_scale %w_amax fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %wq, %w_si, %w_amax2 = te.quantize %w scale(%w_scale) mode per_tensor
      : tensor<96x64xbf16>, tensor<f32>
      -> tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  %partial = te.scaled_matmul %xq, %wq scales(%x_si, %w_si) transpose_b
      : tensor<128x64xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<128x96xf32>
  %y = te.reduce_scatter %partial group @tp dim 0 reduce sum
      : tensor<128x96xf32> -> tensor<64x96xf32>
  return %y : tensor<64x96xf32>
}

// Delayed scaling with the amax reduced over the data-parallel group
// (TE's reduce_amax): every rank folds the same amax into its history and
// so keeps the same scale.
func.func @delayed_scaling_step(%x: tensor<64x256xbf16>, %history: tensor<16xf32>,
                                %scale: tensor<f32>)
    -> (tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<16xf32>, tensor<f32>) {
  %xq, %x_si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x256xbf16>, tensor<f32>
      -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %group_amax = te.all_reduce %amax group @tp reduce max : tensor<f32>
  %history2, %scale2 = te.update_delayed_scaling %history, %group_amax, %scale
      fp8_type f8E4M3FN amax_algo max margin 0
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  return %xq, %x_si, %history2, %scale2
      : tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<16xf32>, tensor<f32>
}

// MXFP8 with sequence parallelism: each rank quantizes its shard of the
// activations (E4M3, one E8M0 scale per 32 elements of a row), and the
// group all-gathers both the payload and its scales. Scales belong to
// rows, so the gathered pair is what one process quantizing the whole
// sequence would have; the dequantized result shows it.
func.func @mxfp8_all_gather(%x: tensor<64x256xbf16>)
    -> (tensor<128x256xf8E4M3FN>, tensor<128x8xf8E8M0FNU>, tensor<128x256xbf16>) {
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>
  %d_full = te.all_gather %d group @tp dim 0
      : tensor<64x256xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
  %s_full = te.all_gather %s group @tp dim 0
      : tensor<64x8xf8E8M0FNU> -> tensor<128x8xf8E8M0FNU>
  %y = te.dequantize %d_full, %s_full mode mxfp8_1x32
      : tensor<128x256xf8E4M3FN>, tensor<128x8xf8E8M0FNU> -> tensor<128x256xbf16>
  return %d_full, %s_full, %y
      : tensor<128x256xf8E4M3FN>, tensor<128x8xf8E8M0FNU>, tensor<128x256xbf16>
}
