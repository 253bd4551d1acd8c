// Sequence/tensor parallelism on groups of 2 ranks (mpirun -np 2, or -np 4
// for two groups): gather the sequence shards, then reduce-scatter the
// partial outputs; the FP8 amax is all-reduced with MAX over the group;
// context parallelism passes K/V one rank round the ring.
te.process_group @tp size 2
te.process_group @cp size 2

func.func @parallel_block(%x: tensor<64x1024xbf16>, %partial: tensor<128x1024xf32>,
                          %amax: tensor<f32>, %kv: tensor<2x512x4x64xbf16>)
    -> (tensor<128x1024xbf16>, tensor<64x1024xf32>, tensor<f32>, tensor<2x512x4x64xbf16>) {
  %full = te.all_gather %x group @tp dim 0 : tensor<64x1024xbf16> -> tensor<128x1024xbf16>
  %shard = te.reduce_scatter %partial group @tp dim 0 reduce sum
      : tensor<128x1024xf32> -> tensor<64x1024xf32>
  %global_amax = te.all_reduce %amax group @tp reduce max : tensor<f32>
  %kv_next = te.permute %kv group @cp shift 1 : tensor<2x512x4x64xbf16>
  return %full, %shard, %global_amax, %kv_next
      : tensor<128x1024xbf16>, tensor<64x1024xf32>, tensor<f32>, tensor<2x512x4x64xbf16>
}
