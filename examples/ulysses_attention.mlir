// Ulysses-style context parallelism on groups of 2 ranks (mpirun -np 2 or
// 4): each rank holds a sequence shard of q, k and v with all heads. An
// all-to-all over heads gives every rank the whole sequence for half of
// the heads; attention runs on those, and a second all-to-all gives each
// rank its sequence shard back, with every head. The result is the
// attention of the whole sequence (causal), sharded by sequence.
te.process_group @cp size 2

func.func @ulysses(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>,
                   %v: tensor<1x64x4x32xbf16>) -> tensor<1x64x4x32xbf16> {
  %qh = te.all_to_all %q group @cp split_dim 2 concat_dim 1
      : tensor<1x64x4x32xbf16> -> tensor<1x128x2x32xbf16>
  %kh = te.all_to_all %k group @cp split_dim 2 concat_dim 1
      : tensor<1x64x4x32xbf16> -> tensor<1x128x2x32xbf16>
  %vh = te.all_to_all %v group @cp split_dim 2 concat_dim 1
      : tensor<1x64x4x32xbf16> -> tensor<1x128x2x32xbf16>
  %o = te.attention %qh, %kh, %vh layout bshd mask causal
      : (tensor<1x128x2x32xbf16>, tensor<1x128x2x32xbf16>, tensor<1x128x2x32xbf16>)
      -> tensor<1x128x2x32xbf16>
  %os = te.all_to_all %o group @cp split_dim 1 concat_dim 2
      : tensor<1x128x2x32xbf16> -> tensor<1x64x4x32xbf16>
  return %os : tensor<1x64x4x32xbf16>
}
