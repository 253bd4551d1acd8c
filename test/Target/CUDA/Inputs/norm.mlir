func.func @layernorm(%x: tensor<2x6x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> (tensor<2x6x1024xbf16>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %z, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05
      : tensor<2x6x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
      -> tensor<2x6x1024xbf16>, tensor<2x6xf32>, tensor<2x6xf32>
  return %z, %mu, %rs : tensor<2x6x1024xbf16>, tensor<2x6xf32>, tensor<2x6xf32>
}

func.func @rmsnorm_odd(%x: tensor<5x7xf32>, %g: tensor<7xf32>) -> (tensor<5x7xbf16>, tensor<5xf32>) {
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-06 zero_centered_gamma
      : tensor<5x7xf32>, tensor<7xf32> -> tensor<5x7xbf16>, tensor<5xf32>
  return %z, %rs : tensor<5x7xbf16>, tensor<5xf32>
}

func.func @rmsnorm_fp8(%x: tensor<64x256xbf16>, %g: tensor<256xbf16>, %s: tensor<f32>) -> (tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>) {
  %d, %si, %am, %rs = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor
      : tensor<64x256xbf16>, tensor<256xbf16>, tensor<f32>
      -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>
  return %d, %si, %am, %rs : tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>
}

func.func @layernorm_amax(%x: tensor<64x256xbf16>, %g: tensor<256xbf16>) -> (tensor<64x256xbf16>, tensor<f32>, tensor<64xf32>, tensor<64xf32>) {
  %z, %am, %mu, %rs = te.norm %x, %g kind layernorm epsilon 1.0e-05 amax
      : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xbf16>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
  return %z, %am, %mu, %rs : tensor<64x256xbf16>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
}

func.func @rmsnorm_mxfp8(%x: tensor<64x256xbf16>, %g: tensor<256xbf16>) -> (tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<64xf32>) {
  %d, %sc, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize mxfp8_1x32
      : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<64xf32>
  return %d, %sc, %rs : tensor<64x256xf8E4M3FN>, tensor<64x8xf8E8M0FNU>, tensor<64xf32>
}

func.func @dlayernorm(%dz: tensor<300x1024xbf16>, %x: tensor<300x1024xbf16>, %rs: tensor<300xf32>, %g: tensor<1024xbf16>, %mu: tensor<300xf32>) -> (tensor<300x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) {
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm
      : tensor<300x1024xbf16>, tensor<300x1024xbf16>, tensor<300xf32>, tensor<1024xbf16>, tensor<300xf32>
      -> tensor<300x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
  return %dx, %dg, %db : tensor<300x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
}

func.func @drmsnorm_add(%dz: tensor<2x8x64xf16>, %x: tensor<2x8x64xf16>, %rs: tensor<2x8xf32>, %g: tensor<64xf16>, %add: tensor<2x8x64xf16>) -> (tensor<2x8x64xf16>, tensor<64xf16>) {
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g add(%add) kind rmsnorm zero_centered_gamma
      : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8xf32>, tensor<64xf16>, tensor<2x8x64xf16>
      -> tensor<2x8x64xf16>, tensor<64xf16>
  return %dx, %dg : tensor<2x8x64xf16>, tensor<64xf16>
}
