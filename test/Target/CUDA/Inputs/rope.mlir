func.func @sbhd(%x: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>) -> tensor<16x2x4x64xbf16> {
  %0 = te.rope %x, %f format sbhd : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return %0 : tensor<16x2x4x64xbf16>
}

func.func @bshd_partial(%x: tensor<2x16x4x64xf16>, %f: tensor<64x1x1x32xf32>, %sp: tensor<2xi32>) -> tensor<2x16x4x64xf16> {
  %0 = te.rope %x, %f start_positions(%sp) format bshd interleaved cp_size 2 cp_rank 1
      : tensor<2x16x4x64xf16>, tensor<64x1x1x32xf32>, tensor<2xi32> -> tensor<2x16x4x64xf16>
  return %0 : tensor<2x16x4x64xf16>
}

func.func @thd(%x: tensor<40x4x64xf32>, %f: tensor<64x1x1x64xf32>, %cu: tensor<4xi32>, %sp: tensor<3xi32>) -> tensor<40x4x64xf32> {
  %0 = te.rope %x, %f cu_seqlens(%cu) start_positions(%sp) format thd
      : tensor<40x4x64xf32>, tensor<64x1x1x64xf32>, tensor<4xi32>, tensor<3xi32> -> tensor<40x4x64xf32>
  return %0 : tensor<40x4x64xf32>
}

func.func @backward(%g: tensor<16x2x4x64xbf16>, %f: tensor<64x1x1x64xf32>) -> tensor<16x2x4x64xbf16> {
  %0 = te.rope_backward %g, %f format sbhd interleaved : tensor<16x2x4x64xbf16>, tensor<64x1x1x64xf32> -> tensor<16x2x4x64xbf16>
  return %0 : tensor<16x2x4x64xbf16>
}

func.func @backward_odd(%g: tensor<3x1x2x7xf32>, %f: tensor<8x1x1x6xf32>) -> tensor<3x1x2x7xf32> {
  %0 = te.rope_backward %g, %f format sbhd : tensor<3x1x2x7xf32>, tensor<8x1x1x6xf32> -> tensor<3x1x2x7xf32>
  return %0 : tensor<3x1x2x7xf32>
}
