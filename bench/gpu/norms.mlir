// te.norm and te.norm_backward on the cuda target at TE's sizes (8192
// tokens, hidden 4096, bf16): scripts/gpu-check.sh compiles this for the
// GPU and the CPU, runs both on the same inputs, checks the GPU's values
// against the CPU's and times each GPU entry (bench/gpu/torch_peers.py
// times torch's layer_norm and rms_norm on the same work).
func.func @layernorm(%x: tensor<8192x4096xbf16>, %g: tensor<4096xbf16>, %b: tensor<4096xbf16>) -> (tensor<8192x4096xbf16>, tensor<8192xf32>, tensor<8192xf32>) {
  %z, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05
      : tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
      -> tensor<8192x4096xbf16>, tensor<8192xf32>, tensor<8192xf32>
  return %z, %mu, %rs : tensor<8192x4096xbf16>, tensor<8192xf32>, tensor<8192xf32>
}

func.func @rmsnorm(%x: tensor<8192x4096xbf16>, %g: tensor<4096xbf16>) -> (tensor<8192x4096xbf16>, tensor<8192xf32>) {
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 zero_centered_gamma
      : tensor<8192x4096xbf16>, tensor<4096xbf16> -> tensor<8192x4096xbf16>, tensor<8192xf32>
  return %z, %rs : tensor<8192x4096xbf16>, tensor<8192xf32>
}

// TE's fused RMSNorm + FP8 cast of delayed scaling: the f32 values cast.
func.func @rmsnorm_fp8(%x: tensor<8192x4096xbf16>, %g: tensor<4096xbf16>, %s: tensor<f32>) -> (tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8192xf32>) {
  %d, %si, %am, %rs = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor
      : tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<f32>
      -> tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8192xf32>
  return %d, %si, %am, %rs : tensor<8192x4096xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8192xf32>
}

func.func @dlayernorm(%dz: tensor<8192x4096xbf16>, %x: tensor<8192x4096xbf16>, %rs: tensor<8192xf32>, %g: tensor<4096xbf16>, %mu: tensor<8192xf32>) -> (tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) {
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm
      : tensor<8192x4096xbf16>, tensor<8192x4096xbf16>, tensor<8192xf32>, tensor<4096xbf16>, tensor<8192xf32>
      -> tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
  return %dx, %dg, %db : tensor<8192x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
}

func.func @drmsnorm(%dz: tensor<8192x4096xbf16>, %x: tensor<8192x4096xbf16>, %rs: tensor<8192xf32>, %g: tensor<4096xbf16>) -> (tensor<8192x4096xbf16>, tensor<4096xbf16>) {
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g kind rmsnorm zero_centered_gamma
      : tensor<8192x4096xbf16>, tensor<8192x4096xbf16>, tensor<8192xf32>, tensor<4096xbf16>
      -> tensor<8192x4096xbf16>, tensor<4096xbf16>
  return %dx, %dg : tensor<8192x4096xbf16>, tensor<4096xbf16>
}
