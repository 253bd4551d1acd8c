// te.activation and te.activation_backward reject bad kinds, shapes, parameters and result lists with a message that names the fix.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @odd_gated(%x: tensor<4x63xbf16>) {
  // expected-error @+1 {{kind swiglu is gated: the last dimension of 'input' holds the activation's and the gate's halves [2H] and must be even, got 'tensor<4x63xbf16>'}}
  %y = te.activation %x kind swiglu : tensor<4x63xbf16> -> tensor<4x31xbf16>
  return
}

// -----

func.func @gated_output_shape(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{the result y must be f32, f16 or bf16 of shape [4, 32], got 'tensor<4x64xbf16>'}}
  %y = te.activation %x kind geglu : tensor<4x64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

func.func @clamped_needs_limit(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{kind clamped_swiglu needs 'limit' (TE's limit, > 0)}}
  %y = te.activation %x kind clamped_swiglu : tensor<4x64xbf16> -> tensor<4x32xbf16>
  return
}

// -----

func.func @limit_positive(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'limit' must be finite and > 0, got -1}}
  %y = te.activation %x kind clamped_swiglu limit -1.0 : tensor<4x64xbf16> -> tensor<4x32xbf16>
  return
}

// -----

func.func @alpha_elsewhere(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'limit', 'alpha' and 'linear_offset' are the parameters of kind clamped_swiglu only}}
  %y = te.activation %x kind gelu alpha 2.0 : tensor<4x64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

func.func @quantized_count(%x: tensor<4x64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{kind gelu quantized per_tensor usage rowwise has 3 or 4 results ([y] and 3 quantized (te.quantize's)), got 2}}
  %r:2 = te.activation %x scale(%s) kind gelu quantize per_tensor : tensor<4x64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<f32>
  return
}

// -----

func.func @quantized_shape(%x: tensor<4x64xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{result 'data' must be 'tensor<4x32xf8E4M3FN>', got 'tensor<4x64xf8E4M3FN>'}}
  %r:3 = te.activation %x scale(%s) kind swiglu quantize per_tensor : tensor<4x64xbf16>, tensor<f32> -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

func.func @bwd_grad_shape(%g: tensor<4x64xbf16>, %x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'grad' must have shape [4, 32] (the input's with its last dimension halved), got 'tensor<4x64xbf16>'}}
  %dx = te.activation_backward %g, %x kind swiglu : tensor<4x64xbf16>, tensor<4x64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

func.func @bwd_types(%g: tensor<4x64xf32>, %x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'grad' and 'input' must have one element type (TE's kernels read both as the input type), got 'f32' and 'bf16'}}
  %dx = te.activation_backward %g, %x kind gelu : tensor<4x64xf32>, tensor<4x64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

func.func @bwd_gated_dbias(%g: tensor<4x32xbf16>, %x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'dbias' is for the plain activations (TE fuses the bias gradient with dgelu, dqgelu, drelu, dsrelu and dsilu, not with the gated kinds)}}
  %r:2 = te.activation_backward %g, %x kind swiglu dbias : tensor<4x32xbf16>, tensor<4x64xbf16> -> tensor<4x64xbf16>, tensor<64xbf16>
  return
}

// -----

func.func @bwd_dbias_type(%g: tensor<4x64xbf16>, %x: tensor<4x64xbf16>) {
  // expected-error @+1 {{result 'dbias' must be 'tensor<64xbf16>', got 'tensor<64xf32>'}}
  %r:2 = te.activation_backward %g, %x kind gelu dbias : tensor<4x64xbf16>, tensor<4x64xbf16> -> tensor<4x64xbf16>, tensor<64xf32>
  return
}

// -----

func.func @bwd_dbias_count(%g: tensor<4x64xbf16>, %x: tensor<4x64xbf16>) {
  // expected-error @+1 {{kind gelu has 2 results (dx and dbias), got 1}}
  %r = te.activation_backward %g, %x kind gelu dbias : tensor<4x64xbf16>, tensor<4x64xbf16> -> tensor<4x64xbf16>
  return
}
