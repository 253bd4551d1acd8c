// te.cross_entropy and te.cross_entropy_backward reject bad shapes and attributes with a message that names the fix.
// RUN: te-opt %s -split-input-file -verify-diagnostics

func.func @target_shape(%x: tensor<4x10xf32>, %t: tensor<5xi64>) {
  // expected-error @+1 {{'target' must have shape [4] (one class per row of 'logits'), got 'tensor<5xi64>'}}
  %l, %g = te.cross_entropy %x, %t : tensor<4x10xf32>, tensor<5xi64> -> tensor<4xf32>, tensor<4x10xf32>
  return
}

// -----

func.func @smoothing(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'label_smoothing' must be in [0, 1), got 1}}
  %l, %g = te.cross_entropy %x, %t label_smoothing 1.0 : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4x10xf32>
  return
}

// -----

func.func @reduced_loss(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{result 'loss' must be 'tensor<f32>', got 'tensor<4xf32>'}}
  %l, %g = te.cross_entropy %x, %t reduce_loss : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4x10xf32>
  return
}

// -----

func.func @grad_type(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{result 'grad' must be 'tensor<4x10xf32>' or 'tensor<4x10xbf16>' (f32, or the logits' type), got 'tensor<4x10xf16>'}}
  %l, %g = te.cross_entropy %x, %t : tensor<4x10xbf16>, tensor<4xi64> -> tensor<4xf32>, tensor<4x10xf16>
  return
}

// -----

func.func @backward_type(%g: tensor<4x10xbf16>, %d: tensor<4xf32>) {
  // expected-error @+1 {{result must be 'tensor<4x10xbf16>' (grad's type), got 'tensor<4x10xf16>'}}
  %r = te.cross_entropy_backward %g, %d : tensor<4x10xbf16>, tensor<4xf32> -> tensor<4x10xf16>
  return
}

// -----

func.func @dloss_shape(%g: tensor<4x10xbf16>, %d: tensor<3xf32>) {
  // expected-error @+1 {{'dloss' must be an f32 scalar (reduce_loss) or one per row of 'grad', got 'tensor<3xf32>'}}
  %r = te.cross_entropy_backward %g, %d : tensor<4x10xbf16>, tensor<3xf32> -> tensor<4x10xbf16>
  return
}

// -----

func.func @no_classes(%x: tensor<4x0xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'logits' must have rank >= 2 and at least one class ([rows..., V], V >= 1), got 'tensor<4x0xf32>'}}
  %l, %g = te.cross_entropy %x, %t : tensor<4x0xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4x0xf32>
  return
}

// -----

func.func @group_unknown(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{group @tp does not name a te.process_group}}
  %l, %g = te.cross_entropy %x, %t group @tp : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4x10xf32>
  return
}

// -----

te.process_group @tp size 4
func.func @group_classes_overflow_i32(%x: tensor<2x1000000000xbf16>, %t: tensor<2xi32>) {
  // expected-error @+1 {{the vocabulary of 1000000000 classes per rank times the group size 4 does not fit the target's i32}}
  %l, %g = te.cross_entropy %x, %t group @tp : tensor<2x1000000000xbf16>, tensor<2xi32> -> tensor<2xf32>, tensor<2x1000000000xf32>
  return
}
