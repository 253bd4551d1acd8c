// An input of 2^61 + 1 bf16 elements: 2^62 + 2 bytes, which a size_t holds
// but no memory does.
func.func @huge(%x: tensor<2305843009213693953xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<2305843009213693953xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
