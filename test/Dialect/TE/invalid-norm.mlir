// Negative tests for te.norm and te.norm_backward: every invariant their verifiers check.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @rank_one(%x: tensor<64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'input' must have rank >= 2 ([rows..., hidden]; TE's [N, H]), got 'tensor<64xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<f32>
  return
}

// -----

func.func @no_hidden(%x: tensor<4x0xf32>, %g: tensor<0xf32>) {
  // expected-error @+1 {{'input' must have a hidden dimension of at least 1, got 'tensor<4x0xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x0xf32>, tensor<0xf32> -> tensor<4x0xf32>, tensor<4xf32>
  return
}

// -----

func.func @gamma_size(%x: tensor<4x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'gamma' must have shape [64] (the hidden dimension of 'input'), got 'tensor<32xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xf32>, tensor<32xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @gamma_type(%x: tensor<4x64xbf16>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'gamma' must be 'tensor<64xbf16>' (the input's element type, as TE's kernels take it), got 'tensor<64xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xbf16>, tensor<64xf32> -> tensor<4x64xbf16>, tensor<4xf32>
  return
}

// -----

func.func @beta_type(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xf16>) {
  // expected-error @+1 {{'beta' must be 'tensor<64xbf16>'}}
  %z, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05 : tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xf16> -> tensor<4x64xbf16>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @rmsnorm_beta(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'beta' is for layernorm only (TE's RMSNorm has no bias)}}
  %z, %rs = te.norm %x, %g, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @layernorm_results(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{kind layernorm has 3 results (z, mu and rsigma), got 2}}
  %z, %rs = te.norm %x, %g kind layernorm epsilon 1.0e-05 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @rmsnorm_results(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{kind rmsnorm has 2 results (z and rsigma), got 3}}
  %z, %mu, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @stat_shape(%x: tensor<2x4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'rsigma' must be f32 of shape [2, 4] ('input' without its last dimension), got 'tensor<8xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<2x4x64xf32>, tensor<64xf32> -> tensor<2x4x64xf32>, tensor<8xf32>
  return
}

// -----

func.func @stat_type(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{'mu' must be f32 of shape [4] ('input' without its last dimension), got 'tensor<4xbf16>'}}
  %z, %mu, %rs = te.norm %x, %g kind layernorm epsilon 1.0e-05 : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>, tensor<4xbf16>, tensor<4xf32>
  return
}

// -----

func.func @z_shape(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{the result z must have the input's shape, got 'tensor<4x32xf32>' for 'tensor<4x64xf32>'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x32xf32>, tensor<4xf32>
  return
}

// -----

func.func @z_type(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{the result z must be 'bf16' like the input (only an f32 input may give bf16 or f16, as TE registers its kernels), got 'f32'}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'epsilon' must be finite and >= 0, got -1}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon -1.0 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @fp8_input(%x: tensor<4x64xf8E4M3FN>, %g: tensor<64xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %z, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 : tensor<4x64xf8E4M3FN>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @bwd_needs_mean(%dz: tensor<4x64xf32>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{kind layernorm needs the forward's 'mean(%mu)'}}
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g kind layernorm : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @bwd_rms_mean(%dz: tensor<4x64xf32>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'mean' is for layernorm only (RMSNorm has no mean)}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g mean(%rs) kind rmsnorm : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32>, tensor<4xf32> -> tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @bwd_layernorm_add(%dz: tensor<4x64xf32>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'add' is for rmsnorm only (TE's nvte_rmsnorm_bwd_add)}}
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%rs) add(%dz) kind layernorm : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32>, tensor<4xf32>, tensor<4x64xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @bwd_results(%dz: tensor<4x64xf32>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{kind rmsnorm has 2 results (dx and dgamma), got 3}}
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g kind rmsnorm : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @bwd_dz_type(%dz: tensor<4x64xf32>, %x: tensor<4x64xbf16>, %rs: tensor<4xf32>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{'dz' must be 'tensor<4x64xbf16>' (the input's shape, gamma's element type), got 'tensor<4x64xf32>'}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g kind rmsnorm : tensor<4x64xf32>, tensor<4x64xbf16>, tensor<4xf32>, tensor<64xbf16> -> tensor<4x64xbf16>, tensor<64xbf16>
  return
}

// -----

func.func @bwd_add_shape(%dz: tensor<4x64xbf16>, %x: tensor<4x64xbf16>, %rs: tensor<4xf32>, %g: tensor<64xbf16>, %a: tensor<64xbf16>) {
  // expected-error @+1 {{'add' must be 'tensor<4x64xbf16>' (the input's shape, gamma's element type), got 'tensor<64xbf16>'}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g add(%a) kind rmsnorm : tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4xf32>, tensor<64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>, tensor<64xbf16>
  return
}

// -----

func.func @bwd_input_type(%dz: tensor<4x64xbf16>, %x: tensor<4x64xf16>, %rs: tensor<4xf32>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{'input' must have gamma's element type 'bf16' or be f32 (as TE registers its kernels), got 'tensor<4x64xf16>'}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g kind rmsnorm : tensor<4x64xbf16>, tensor<4x64xf16>, tensor<4xf32>, tensor<64xbf16> -> tensor<4x64xf16>, tensor<64xbf16>
  return
}

// -----

func.func @bwd_dx_type(%dz: tensor<4x64xbf16>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{the result dx must be 'tensor<4x64xf32>' (the input's type), got 'tensor<4x64xbf16>'}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g kind rmsnorm : tensor<4x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xbf16> -> tensor<4x64xbf16>, tensor<64xbf16>
  return
}

// -----

func.func @bwd_dgamma_type(%dz: tensor<4x64xbf16>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{the result dgamma must be 'tensor<64xbf16>' (gamma's type), got 'tensor<64xf32>'}}
  %dx, %dg = te.norm_backward %dz, %x, %rs, %g kind rmsnorm : tensor<4x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xbf16> -> tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @bwd_stat(%dz: tensor<4x64xf32>, %x: tensor<4x64xf32>, %rs: tensor<4xf32>, %mu: tensor<5xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'mu' must be f32 of shape [4] ('input' without its last dimension), got 'tensor<5xf32>'}}
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32>, tensor<5xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @quantize_and_amax(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'amax' is for the high-precision output alone; a quantized output states its own scales}}
  %r:5 = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor amax : tensor<4x64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @scale_without_quantize(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{scale(...), 'usage', 'pow2_scales' and 'amax_epsilon' shape a quantized output; add 'quantize <mode>'}}
  %z, %rs = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 : tensor<4x64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<4x64xbf16>, tensor<4xf32>
  return
}

// -----

func.func @per_tensor_needs_scale(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{mode per_tensor needs scale(%scale), an f32 scalar tensor}}
  %r:4 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize per_tensor : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @mxfp8_takes_no_epsilon(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{'amax_epsilon' is only valid with modes block_1x128 and block_128x128}}
  %r:3 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize mxfp8_1x32 amax_epsilon 1.0e-03 : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU>, tensor<4xf32>
  return
}

// -----

func.func @quantized_count(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{kind layernorm quantized per_tensor usage both has 6 or 7 results ([z], 4 quantized (te.quantize's), mu and rsigma), got 5}}
  %r:5 = te.norm %x, %g, %b scale(%s) kind layernorm epsilon 1.0e-05 quantize per_tensor usage both : tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @quantized_data_type(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{result 'data' must be 'tensor<4x64xf8E4M3FN>', got 'tensor<4x32xf8E4M3FN>'}}
  %r:4 = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor : tensor<4x64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<4x32xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @quantized_transposed_needs_2d(%x: tensor<2x4x64xbf16>, %g: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{the column-wise copy of mode per_tensor is stored transposed and needs a 2-D input; got 'tensor<2x4x64xbf16>'}}
  %r:5 = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor usage both : tensor<2x4x64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<2x4x64xf8E4M3FN>, tensor<64x8xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<2x4xf32>
  return
}

// -----

func.func @kept_z_must_be_high_precision(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{the result z must be 'bf16' like the input}}
  %r:5 = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor : tensor<4x64xbf16>, tensor<64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>
  return
}

// -----

func.func @amax_type(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{result 'amax' must be 'tensor<f32>', got 'tensor<4xf32>'}}
  %r:3 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 amax : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>, tensor<4xf32>, tensor<4xf32>
  return
}
