// Variable-length sequences packed in the thd layout (3 sequences, 96 tokens
// in all), padding-causal mask, ALiBi positional bias.
func.func @packed_attention(%q: tensor<96x8x128xf16>, %k: tensor<96x8x128xf16>,
                            %v: tensor<96x8x128xf16>, %cu_q: tensor<4xi32>,
                            %cu_kv: tensor<4xi32>, %slopes: tensor<8xf32>)
    -> tensor<96x8x128xf16> {
  %o = te.attention %q, %k, %v layout thd mask padding_causal bias alibi
      cu_seqlens(%cu_q, %cu_kv) alibi_slopes(%slopes)
      : (tensor<96x8x128xf16>, tensor<96x8x128xf16>, tensor<96x8x128xf16>,
         tensor<4xi32>, tensor<4xi32>, tensor<8xf32>) -> tensor<96x8x128xf16>
  return %o : tensor<96x8x128xf16>
}
