// te-fold-empty: te ops on zero-size tensors become their defined results.
// RUN: te-opt %s -split-input-file --te-fold-empty | FileCheck %s

// No queries: the output has no elements (and needs no constant).
// CHECK-LABEL: func.func @no_queries
// CHECK-NOT: te.attention
// CHECK: %[[O:.*]] = tensor.empty() : tensor<2x0x4x8xf32>
// CHECK: return %[[O]]
func.func @no_queries(%q: tensor<2x0x4x8xf32>, %k: tensor<2x16x4x8xf32>,
                      %v: tensor<2x16x4x8xf32>) -> tensor<2x0x4x8xf32> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>)
      -> tensor<2x0x4x8xf32>
  return %o : tensor<2x0x4x8xf32>
}

// -----

// No keys: every row sees none, O = 0 and LSE = -inf (vanilla softmax).
// CHECK-LABEL: func.func @no_keys_vanilla
// CHECK-DAG: %[[O:.*]] = arith.constant dense<0.000000e+00> : tensor<2x5x4x8xbf16>
// CHECK-DAG: %[[LSE:.*]] = arith.constant dense<0xFF800000> : tensor<2x4x5x1xf32>
// CHECK: return %[[O]], %[[LSE]]
func.func @no_keys_vanilla(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x0x4x8xbf16>,
                           %v: tensor<2x0x4x8xbf16>)
    -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask no_mask {return_lse}
      : (tensor<2x5x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>)
      -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>)
  return %o, %lse : tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>
}

// -----

// off_by_one: the extra denominator term is exp(0), LSE = 0.
// CHECK-LABEL: func.func @no_keys_off_by_one
// CHECK: arith.constant dense<0.000000e+00> : tensor<1x2x3x1xf32>
func.func @no_keys_off_by_one(%q: tensor<1x3x2x8xf32>, %k: tensor<1x0x2x8xf32>,
                              %v: tensor<1x0x2x8xf32>)
    -> (tensor<1x3x2x8xf32>, tensor<1x2x3x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask no_mask
      softmax off_by_one {return_lse}
      : (tensor<1x3x2x8xf32>, tensor<1x0x2x8xf32>, tensor<1x0x2x8xf32>)
      -> (tensor<1x3x2x8xf32>, tensor<1x2x3x1xf32>)
  return %o, %lse : tensor<1x3x2x8xf32>, tensor<1x2x3x1xf32>
}

// -----

// learnable: LSE = alpha_h, broadcast over batch and queries (thd here).
// CHECK-LABEL: func.func @no_keys_learnable_thd
// CHECK-SAME: %[[ALPHA:[^:]*]]: tensor<1x2x1x1xf32>
// CHECK: %[[LSE:.*]] = linalg.generic
// CHECK-SAME: ins(%[[ALPHA]] : tensor<1x2x1x1xf32>)
// CHECK: return %{{.*}}, %[[LSE]]
func.func @no_keys_learnable_thd(%q: tensor<6x2x8xf32>, %k: tensor<0x2x8xf32>,
                                 %v: tensor<0x2x8xf32>, %cu_q: tensor<3xi32>,
                                 %cu_kv: tensor<3xi32>,
                                 %alpha: tensor<1x2x1x1xf32>)
    -> (tensor<6x2x8xf32>, tensor<6x2x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding
      softmax learnable cu_seqlens(%cu_q, %cu_kv) softmax_offset(%alpha)
      {return_lse}
      : (tensor<6x2x8xf32>, tensor<0x2x8xf32>, tensor<0x2x8xf32>,
         tensor<3xi32>, tensor<3xi32>, tensor<1x2x1x1xf32>)
      -> (tensor<6x2x8xf32>, tensor<6x2x1xf32>)
  return %o, %lse : tensor<6x2x8xf32>, tensor<6x2x1xf32>
}

// -----

// The backward of an empty problem: every gradient is 0.
// CHECK-LABEL: func.func @backward_no_queries
// CHECK-NOT: te.attention_backward
// CHECK-DAG: %[[DQ:.*]] = tensor.empty() : tensor<2x0x4x8xf32>
// CHECK-DAG: %[[DK:.*]] = arith.constant dense<0.000000e+00> : tensor<2x16x4x8xf32>
// CHECK-DAG: %[[DV:.*]] = arith.constant dense<0.000000e+00> : tensor<2x16x4x8xf32>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @backward_no_queries(%q: tensor<2x0x4x8xf32>, %k: tensor<2x16x4x8xf32>,
                               %v: tensor<2x16x4x8xf32>, %o: tensor<2x0x4x8xf32>,
                               %do: tensor<2x0x4x8xf32>, %lse: tensor<2x4x0x1xf32>)
    -> (tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask no_mask
      : (tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>,
         tensor<2x0x4x8xf32>, tensor<2x0x4x8xf32>, tensor<2x4x0x1xf32>)
      -> (tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>)
  return %dq, %dk, %dv : tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
}

// -----

// The amax of an empty tensor is 0.
// CHECK-LABEL: func.func @amax_empty
// CHECK: %[[A:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: return %[[A]]
func.func @amax_empty(%x: tensor<0x16xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<0x16xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// Non-empty problems are left alone.
// CHECK-LABEL: func.func @not_empty
// CHECK: te.attention
// CHECK: te.amax
func.func @not_empty(%q: tensor<1x2x1x8xf32>, %k: tensor<1x2x1x8xf32>,
                     %v: tensor<1x2x1x8xf32>) -> (tensor<1x2x1x8xf32>, tensor<f32>) {
  %o = te.attention %q, %k, %v layout bshd
      : (tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>)
      -> tensor<1x2x1x8xf32>
  %a = te.amax %q : tensor<1x2x1x8xf32> -> tensor<f32>
  return %o, %a : tensor<1x2x1x8xf32>, tensor<f32>
}

// -----

// Block-scaled casts of an empty tensor: empty data and scales; the
// dequantize of empty data is empty.
// CHECK-LABEL: func.func @mxfp8_no_columns
// CHECK-NOT: te.quantize
// CHECK-NOT: te.dequantize
// CHECK-DAG: tensor.empty() : tensor<64x0xf8E4M3FN>
// CHECK-DAG: tensor.empty() : tensor<64x0xf8E8M0FNU>
// CHECK-DAG: tensor.empty() : tensor<64x0xbf16>
func.func @mxfp8_no_columns(%x: tensor<64x0xf32>)
    -> (tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>, tensor<64x0xbf16>) {
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x0xf32> -> tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>
  %r = te.dequantize %d, %s mode mxfp8_1x32
      : tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU> -> tensor<64x0xbf16>
  return %d, %s, %r
      : tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>, tensor<64x0xbf16>
}

// -----

// A per_tensor cast computes scale_inv = 1 / scale: left to its lowering.
// CHECK-LABEL: func.func @per_tensor_is_lowered
// CHECK: te.quantize
func.func @per_tensor_is_lowered(%x: tensor<0x64xbf16>, %s: tensor<f32>)
    -> (tensor<0x64xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<0x64xbf16>, tensor<f32>
      -> tensor<0x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<0x64xf8E4M3FN>, tensor<f32>, tensor<f32>
}

// -----

// No rows: an empty product.
// CHECK-LABEL: func.func @matmul_no_rows
// CHECK-NOT: te.scaled_matmul
// CHECK: tensor.empty() : tensor<0x8xbf16>
func.func @matmul_no_rows(%a: tensor<0x32xf8E4M3FN>, %b: tensor<8x32xf8E4M3FN>,
                          %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<0x8xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b
      : tensor<0x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<0x8xbf16>
  return %d : tensor<0x8xbf16>
}

// -----

// A grouped GEMM with no rows: an empty product.
// CHECK-LABEL: func.func @grouped_no_rows
// CHECK-NOT: te.grouped_matmul
// CHECK: tensor.empty() : tensor<0x8xbf16>
func.func @grouped_no_rows(%a: tensor<0x32xbf16>, %b: tensor<2x8x32xbf16>, %m: tensor<2xi64>)
    -> tensor<0x8xbf16> {
  %d = te.grouped_matmul %a, %b splits(%m) transpose_b
      : tensor<0x32xbf16>, tensor<2x8x32xbf16>, tensor<2xi64> -> tensor<0x8xbf16>
  return %d : tensor<0x8xbf16>
}
