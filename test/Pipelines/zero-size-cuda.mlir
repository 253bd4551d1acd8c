// Zero-size problems inside kernels for the cuda target: te-fold-empty
// writes their results before the GPU lowering (whose launch grids and
// tilings assume work), so only the non-empty results need kernels.
// REQUIRES: ptxas
// RUN: env TE_CUDA_ARCH=sm_90a te-opt %s -split-input-file --te-lower-target=device=cuda | FileCheck %s

// CHECK-LABEL: @attention_no_keys
// CHECK-NOT: te.attention
func.func @attention_no_keys(%q: tensor<2x5x4x8xbf16>, %k0: tensor<2x6x4x8xbf16>,
                             %alpha: tensor<1x4x1x1xf32>)
    -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>) {
  %k = tensor.extract_slice %k0[0, 0, 0, 0] [2, 0, 4, 8] [1, 1, 1, 1]
      : tensor<2x6x4x8xbf16> to tensor<2x0x4x8xbf16>
  %o, %lse = te.attention %q, %k, %k layout bshd mask causal
      softmax learnable softmax_offset(%alpha) {return_lse}
      : (tensor<2x5x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>,
         tensor<1x4x1x1xf32>) -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>)
  return %o, %lse : tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>
}

// -----

// CHECK-LABEL: @backward_no_keys
// CHECK-NOT: te.attention_backward
func.func @backward_no_keys(%q: tensor<2x3x4x8xbf16>, %k0: tensor<2x6x4x8xbf16>,
                            %lse: tensor<2x4x3x1xf32>) -> tensor<2x3x4x8xbf16> {
  %k = tensor.extract_slice %k0[0, 0, 0, 0] [2, 0, 4, 8] [1, 1, 1, 1]
      : tensor<2x6x4x8xbf16> to tensor<2x0x4x8xbf16>
  %dq, %dk, %dv = te.attention_backward %q, %k, %k, %q, %q, %lse
      layout bshd mask causal
      : (tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>,
         tensor<2x3x4x8xbf16>, tensor<2x3x4x8xbf16>, tensor<2x4x3x1xf32>)
      -> (tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>)
  return %dq : tensor<2x3x4x8xbf16>
}

// -----

// CHECK-LABEL: @amax_of_nothing
func.func @amax_of_nothing(%x0: tensor<4x64xbf16>) -> tensor<f32> {
  %x = tensor.extract_slice %x0[0, 0] [0, 64] [1, 1]
      : tensor<4x64xbf16> to tensor<0x64xbf16>
  %a = te.amax %x : tensor<0x64xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
