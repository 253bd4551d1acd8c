// Round-trips te.attention and te.attention_backward through the custom and generic forms with every layout, mask, window, scale, bias, softmax, dropout and optional operand group.
// RUN: te-opt %s -split-input-file | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file --mlir-print-op-generic | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file > %t.1 && te-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s -split-input-file --mlir-print-op-generic > %t.g1 && te-opt %t.g1 -split-input-file --mlir-print-op-generic > %t.g2 && diff %t.g1 %t.g2

//===----------------------------------------------------------------------===//
// te.attention: layouts
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func @bshd_gqa_causal_lse
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x128x4x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x128x4x64xbf16>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd mask{{ +}}causal {return_lse}
// CHECK-SAME: : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @bshd_gqa_causal_lse(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x4x64xbf16>, %v: tensor<2x128x4x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
  return %o, %lse : tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>
}

// -----

// Attributes spelled with their default values are elided when printed.
// CHECK-LABEL: func @defaults_elided
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xf16>)
// CHECK: %[[O:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd : (tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>) -> tensor<2x128x16x64xf16>
// CHECK: return %[[O]]
func.func @defaults_elided(%q: tensor<2x128x16x64xf16>, %k: tensor<2x128x16x64xf16>, %v: tensor<2x128x16x64xf16>) -> tensor<2x128x16x64xf16> {
  %o = te.attention %q, %k, %v layout bshd mask no_mask bias no_bias softmax vanilla dropout 0.0
      : (tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>) -> tensor<2x128x16x64xf16>
  return %o : tensor<2x128x16x64xf16>
}

// -----

// The generic form may omit default-valued attributes.
// CHECK-LABEL: func @generic_defaults
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16>
func.func @generic_defaults(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x4x64xbf16>, %v: tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = "te.attention"(%q, %k, %v) <{layout = #te<layout bshd>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}>
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @sbhd_f32_causal_bottom_right
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<128x2x8x64xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<256x2x8x64xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<256x2x8x64xf32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}sbhd mask{{ +}}causal_bottom_right {return_lse}
// CHECK-SAME: : (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x64xf32>) -> (tensor<128x2x8x64xf32>, tensor<2x8x128x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @sbhd_f32_causal_bottom_right(%q: tensor<128x2x8x64xf32>, %k: tensor<256x2x8x64xf32>, %v: tensor<256x2x8x64xf32>) -> (tensor<128x2x8x64xf32>, tensor<2x8x128x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout sbhd mask causal_bottom_right {return_lse}
      : (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x64xf32>)
      -> (tensor<128x2x8x64xf32>, tensor<2x8x128x1xf32>)
  return %o, %lse : tensor<128x2x8x64xf32>, tensor<2x8x128x1xf32>
}

// -----

// CHECK-LABEL: func @bhsd_f16_mqa
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x16x128x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x1x256x64xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x1x256x64xf16>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bhsd {return_lse}
// CHECK-SAME: : (tensor<2x16x128x64xf16>, tensor<2x1x256x64xf16>, tensor<2x1x256x64xf16>) -> (tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @bhsd_f16_mqa(%q: tensor<2x16x128x64xf16>, %k: tensor<2x1x256x64xf16>, %v: tensor<2x1x256x64xf16>) -> (tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bhsd {return_lse}
      : (tensor<2x16x128x64xf16>, tensor<2x1x256x64xf16>, tensor<2x1x256x64xf16>)
      -> (tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>)
  return %o, %lse : tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>
}

// -----

// d_qk = 128 and d_v = 64: the output takes the head dimension of v.
// CHECK-LABEL: func @head_dim_qk_ne_v
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x128xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x128x4x128xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x128x4x64xbf16>)
// CHECK: %[[O:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd mask{{ +}}causal
// CHECK-SAME: : (tensor<2x128x16x128xbf16>, tensor<2x128x4x128xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16>
// CHECK: return %[[O]]
func.func @head_dim_qk_ne_v(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x4x128xbf16>, %v: tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<2x128x16x128xbf16>, tensor<2x128x4x128xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @dynamic_shapes
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal {return_lse}
// CHECK-SAME: : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>) -> (tensor<?x?x16x64xbf16>, tensor<?x16x?x1xf32>)
func.func @dynamic_shapes(%q: tensor<?x?x16x64xbf16>, %k: tensor<?x?x4x64xbf16>, %v: tensor<?x?x4x64xbf16>) -> (tensor<?x?x16x64xbf16>, tensor<?x16x?x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<?x?x16x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>)
      -> (tensor<?x?x16x64xbf16>, tensor<?x16x?x1xf32>)
  return %o, %lse : tensor<?x?x16x64xbf16>, tensor<?x16x?x1xf32>
}

// -----

// CHECK-LABEL: func @thd_cu_seqlens
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<512x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<512x4x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<512x4x64xbf16>, %[[CUQ:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[CUKV:[a-zA-Z0-9_]+]]: tensor<3xi32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}thd mask{{ +}}padding cu_seqlens(%[[CUQ]], %[[CUKV]]) {return_lse}
// CHECK-SAME: : (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<3xi32>, tensor<3xi32>) -> (tensor<512x16x64xbf16>, tensor<512x16x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @thd_cu_seqlens(%q: tensor<512x16x64xbf16>, %k: tensor<512x4x64xbf16>, %v: tensor<512x4x64xbf16>, %cu_q: tensor<3xi32>, %cu_kv: tensor<3xi32>) -> (tensor<512x16x64xbf16>, tensor<512x16x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding cu_seqlens(%cu_q, %cu_kv) {return_lse}
      : (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<3xi32>, tensor<3xi32>)
      -> (tensor<512x16x64xbf16>, tensor<512x16x1xf32>)
  return %o, %lse : tensor<512x16x64xbf16>, tensor<512x16x1xf32>
}

// -----

// CHECK-LABEL: func @thd_seq_offsets
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<512x16x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<640x4x64xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<640x4x64xf16>, %[[CUQ:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[CUKV:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[OFFQ:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[OFFKV:[a-zA-Z0-9_]+]]: tensor<3xi32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}thd mask{{ +}}padding_causal cu_seqlens(%[[CUQ]], %[[CUKV]]) seq_offsets(%[[OFFQ]], %[[OFFKV]])
// CHECK-SAME: : (tensor<512x16x64xf16>, tensor<640x4x64xf16>, tensor<640x4x64xf16>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<512x16x64xf16>
// CHECK: return %[[O]]
func.func @thd_seq_offsets(%q: tensor<512x16x64xf16>, %k: tensor<640x4x64xf16>, %v: tensor<640x4x64xf16>, %cu_q: tensor<3xi32>, %cu_kv: tensor<3xi32>, %off_q: tensor<3xi32>, %off_kv: tensor<3xi32>) -> tensor<512x16x64xf16> {
  %o = te.attention %q, %k, %v layout thd mask padding_causal cu_seqlens(%cu_q, %cu_kv) seq_offsets(%off_q, %off_kv)
      : (tensor<512x16x64xf16>, tensor<640x4x64xf16>, tensor<640x4x64xf16>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>)
      -> tensor<512x16x64xf16>
  return %o : tensor<512x16x64xf16>
}

// -----

// CHECK-LABEL: func @thd_padding_causal_bottom_right_dynamic
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}thd mask{{ +}}padding_causal_bottom_right cu_seqlens(%{{.*}}, %{{.*}}) {return_lse}
// CHECK-SAME: : (tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x16x64xf32>, tensor<?x16x1xf32>)
func.func @thd_padding_causal_bottom_right_dynamic(%q: tensor<?x16x64xf32>, %k: tensor<?x16x64xf32>, %v: tensor<?x16x64xf32>, %cu_q: tensor<?xi32>, %cu_kv: tensor<?xi32>) -> (tensor<?x16x64xf32>, tensor<?x16x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding_causal_bottom_right cu_seqlens(%cu_q, %cu_kv) {return_lse}
      : (tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x16x64xf32>, tensor<?x16x1xf32>)
  return %o, %lse : tensor<?x16x64xf32>, tensor<?x16x1xf32>
}

//===----------------------------------------------------------------------===//
// te.attention: masks
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @mask_no_mask
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd : (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>) -> tensor<128x2x16x64xbf16>
func.func @mask_no_mask(%q: tensor<128x2x16x64xbf16>, %k: tensor<128x2x16x64xbf16>, %v: tensor<128x2x16x64xbf16>) -> tensor<128x2x16x64xbf16> {
  %o = te.attention %q, %k, %v layout sbhd mask no_mask
      : (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>) -> tensor<128x2x16x64xbf16>
  return %o : tensor<128x2x16x64xbf16>
}

// -----

// CHECK-LABEL: func @mask_padding
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x256x16x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x256x16x64xbf16>, %[[LQ:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[LKV:[a-zA-Z0-9_]+]]: tensor<2xi32>)
// CHECK: te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd mask{{ +}}padding seqlens(%[[LQ]], %[[LKV]]) :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
func.func @mask_padding(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x256x16x64xbf16>, %v: tensor<2x256x16x64xbf16>, %len_q: tensor<2xi32>, %len_kv: tensor<2xi32>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%len_q, %len_kv)
      : (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2xi32>, tensor<2xi32>)
      -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @mask_causal
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bhsd mask{{ +}}causal : (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>) -> tensor<2x16x128x64xf16>
func.func @mask_causal(%q: tensor<2x16x128x64xf16>, %k: tensor<2x16x128x64xf16>, %v: tensor<2x16x128x64xf16>) -> tensor<2x16x128x64xf16> {
  %o = te.attention %q, %k, %v layout bhsd mask causal
      : (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>) -> tensor<2x16x128x64xf16>
  return %o : tensor<2x16x128x64xf16>
}

// -----

// CHECK-LABEL: func @mask_causal_bottom_right
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal_bottom_right : (tensor<2x64x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>) -> tensor<2x64x16x64xbf16>
func.func @mask_causal_bottom_right(%q: tensor<2x64x16x64xbf16>, %k: tensor<2x256x16x64xbf16>, %v: tensor<2x256x16x64xbf16>) -> tensor<2x64x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal_bottom_right
      : (tensor<2x64x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>) -> tensor<2x64x16x64xbf16>
  return %o : tensor<2x64x16x64xbf16>
}

// -----

// CHECK-LABEL: func @mask_padding_causal
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<128x4x8x64xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<128x4x8x64xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<128x4x8x64xf32>, %[[LQ:[a-zA-Z0-9_]+]]: tensor<4xi32>, %[[LKV:[a-zA-Z0-9_]+]]: tensor<4xi32>)
// CHECK: te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}sbhd mask{{ +}}padding_causal seqlens(%[[LQ]], %[[LKV]]) :
// CHECK-SAME: (tensor<128x4x8x64xf32>, tensor<128x4x8x64xf32>, tensor<128x4x8x64xf32>, tensor<4xi32>, tensor<4xi32>) -> tensor<128x4x8x64xf32>
func.func @mask_padding_causal(%q: tensor<128x4x8x64xf32>, %k: tensor<128x4x8x64xf32>, %v: tensor<128x4x8x64xf32>, %len_q: tensor<4xi32>, %len_kv: tensor<4xi32>) -> tensor<128x4x8x64xf32> {
  %o = te.attention %q, %k, %v layout sbhd mask padding_causal seqlens(%len_q, %len_kv)
      : (tensor<128x4x8x64xf32>, tensor<128x4x8x64xf32>, tensor<128x4x8x64xf32>, tensor<4xi32>, tensor<4xi32>)
      -> tensor<128x4x8x64xf32>
  return %o : tensor<128x4x8x64xf32>
}

// -----

// CHECK-LABEL: func @mask_padding_causal_bottom_right
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x16x64x64xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x4x256x64xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x4x256x64xf16>, %[[LQ:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[LKV:[a-zA-Z0-9_]+]]: tensor<2xi32>)
// CHECK: te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bhsd mask{{ +}}padding_causal_bottom_right seqlens(%[[LQ]], %[[LKV]]) :
// CHECK-SAME: (tensor<2x16x64x64xf16>, tensor<2x4x256x64xf16>, tensor<2x4x256x64xf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x16x64x64xf16>
func.func @mask_padding_causal_bottom_right(%q: tensor<2x16x64x64xf16>, %k: tensor<2x4x256x64xf16>, %v: tensor<2x4x256x64xf16>, %len_q: tensor<2xi32>, %len_kv: tensor<2xi32>) -> tensor<2x16x64x64xf16> {
  %o = te.attention %q, %k, %v layout bhsd mask padding_causal_bottom_right seqlens(%len_q, %len_kv)
      : (tensor<2x16x64x64xf16>, tensor<2x4x256x64xf16>, tensor<2x4x256x64xf16>, tensor<2xi32>, tensor<2xi32>)
      -> tensor<2x16x64x64xf16>
  return %o : tensor<2x16x64x64xf16>
}

// -----

// CHECK-LABEL: func @mask_arbitrary
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x256x16x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x256x16x64xbf16>, %[[M:[a-zA-Z0-9_]+]]: tensor<2x16x128x256xi1>)
// CHECK: te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd mask{{ +}}arbitrary mask_tensor(%[[M]]) :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x16x128x256xi1>) -> tensor<2x128x16x64xbf16>
func.func @mask_arbitrary(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x256x16x64xbf16>, %v: tensor<2x256x16x64xbf16>, %mask: tensor<2x16x128x256xi1>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask arbitrary mask_tensor(%mask)
      : (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x16x128x256xi1>)
      -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// A mask tensor broadcast over batch and heads.
// CHECK-LABEL: func @mask_arbitrary_broadcast
// CHECK-SAME: %[[M:[a-zA-Z0-9_]+]]: tensor<1x1x128x128xi1>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd mask{{ +}}arbitrary mask_tensor(%[[M]]) :
// CHECK-SAME: (tensor<128x2x16x64xf32>, tensor<128x2x16x64xf32>, tensor<128x2x16x64xf32>, tensor<1x1x128x128xi1>) -> tensor<128x2x16x64xf32>
func.func @mask_arbitrary_broadcast(%q: tensor<128x2x16x64xf32>, %k: tensor<128x2x16x64xf32>, %v: tensor<128x2x16x64xf32>, %mask: tensor<1x1x128x128xi1>) -> tensor<128x2x16x64xf32> {
  %o = te.attention %q, %k, %v layout sbhd mask arbitrary mask_tensor(%mask)
      : (tensor<128x2x16x64xf32>, tensor<128x2x16x64xf32>, tensor<128x2x16x64xf32>, tensor<1x1x128x128xi1>)
      -> tensor<128x2x16x64xf32>
  return %o : tensor<128x2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// te.attention: window and scale
//===----------------------------------------------------------------------===//

// -----

// Round-tripping does not canonicalize the window.
// CHECK-LABEL: func @window_causal
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [128, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal_bottom_right window [64, -1] :
func.func @window_causal(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd mask causal window [128, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [64, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @window_no_mask
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [64, 32] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [0, 16] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [-1, -1] :
func.func @window_no_mask(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd window [64, 32]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd window [0, 16]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout bshd window [-1, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1, %o2 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// bottom_right_diagonal round-trips in both spellings.
// CHECK-LABEL: func @window_diagonal
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [64, 32] bottom_right_diagonal false :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [64, 32] bottom_right_diagonal true :
func.func @window_diagonal(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd window [64, 32] bottom_right_diagonal false
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd window [64, 32] bottom_right_diagonal true
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @scale
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd scale 1.250000e-01 :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [32, 0] scale -2.500000e+00 :
func.func @scale(%q: tensor<2x128x16x64xf16>, %k: tensor<2x128x16x64xf16>, %v: tensor<2x128x16x64xf16>) -> (tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>) {
  %o0 = te.attention %q, %k, %v layout bshd scale 0.125
      : (tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>) -> tensor<2x128x16x64xf16>
  %o1 = te.attention %q, %k, %v layout bshd mask causal window [32, 0] scale -2.5
      : (tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>) -> tensor<2x128x16x64xf16>
  return %o0, %o1 : tensor<2x128x16x64xf16>, tensor<2x128x16x64xf16>
}

//===----------------------------------------------------------------------===//
// te.attention: bias
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @bias_no_bias
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal :
func.func @bias_no_bias(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal bias no_bias
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @bias_pre_scale
// CHECK-SAME: %[[B:[a-zA-Z0-9_]+]]: tensor<2x16x128x256xbf16>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd bias{{ +}}pre_scale bias_tensor(%[[B]]) :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x16x128x256xbf16>) -> tensor<2x128x16x64xbf16>
func.func @bias_pre_scale(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x256x16x64xbf16>, %v: tensor<2x256x16x64xbf16>, %bias: tensor<2x16x128x256xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd bias pre_scale bias_tensor(%bias)
      : (tensor<2x128x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x256x16x64xbf16>, tensor<2x16x128x256xbf16>)
      -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @bias_post_scale
// CHECK-SAME: %[[B:[a-zA-Z0-9_]+]]: tensor<2x16x128x128xf32>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bhsd mask{{ +}}causal scale 1.250000e-01 bias{{ +}}post_scale bias_tensor(%[[B]]) :
// CHECK-SAME: (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x128xf32>) -> tensor<2x16x128x64xf16>
func.func @bias_post_scale(%q: tensor<2x16x128x64xf16>, %k: tensor<2x16x128x64xf16>, %v: tensor<2x16x128x64xf16>, %bias: tensor<2x16x128x128xf32>) -> tensor<2x16x128x64xf16> {
  %o = te.attention %q, %k, %v layout bhsd mask causal scale 0.125 bias post_scale bias_tensor(%bias)
      : (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x128xf32>)
      -> tensor<2x16x128x64xf16>
  return %o : tensor<2x16x128x64xf16>
}

// -----

// Bias tensors broadcast over the batch, the heads, or both.
// CHECK-LABEL: func @bias_broadcast
// CHECK-SAME: %[[B0:[a-zA-Z0-9_]+]]: tensor<1x1x128x128xf32>, %[[B1:[a-zA-Z0-9_]+]]: tensor<1x16x128x128xbf16>, %[[B2:[a-zA-Z0-9_]+]]: tensor<2x1x128x128xbf16>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd bias{{ +}}post_scale bias_tensor(%[[B0]]) :
// CHECK-SAME: tensor<1x1x128x128xf32>) -> tensor<128x2x16x64xbf16>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd bias{{ +}}post_scale bias_tensor(%[[B1]]) :
// CHECK-SAME: tensor<1x16x128x128xbf16>) -> tensor<128x2x16x64xbf16>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd bias{{ +}}pre_scale bias_tensor(%[[B2]]) :
// CHECK-SAME: tensor<2x1x128x128xbf16>) -> tensor<128x2x16x64xbf16>
func.func @bias_broadcast(%q: tensor<128x2x16x64xbf16>, %k: tensor<128x2x16x64xbf16>, %v: tensor<128x2x16x64xbf16>, %b0: tensor<1x1x128x128xf32>, %b1: tensor<1x16x128x128xbf16>, %b2: tensor<2x1x128x128xbf16>) -> (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout sbhd bias post_scale bias_tensor(%b0)
      : (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<1x1x128x128xf32>)
      -> tensor<128x2x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout sbhd bias post_scale bias_tensor(%b1)
      : (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<1x16x128x128xbf16>)
      -> tensor<128x2x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout sbhd bias pre_scale bias_tensor(%b2)
      : (tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<2x1x128x128xbf16>)
      -> tensor<128x2x16x64xbf16>
  return %o0, %o1, %o2 : tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>, tensor<128x2x16x64xbf16>
}

// -----

// CHECK-LABEL: func @bias_alibi_per_head
// CHECK-SAME: %[[S:[a-zA-Z0-9_]+]]: tensor<16xf32>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal bias{{ +}}alibi alibi_slopes(%[[S]]) :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<16xf32>) -> tensor<2x128x16x64xbf16>
func.func @bias_alibi_per_head(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x4x64xbf16>, %v: tensor<2x128x4x64xbf16>, %slopes: tensor<16xf32>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal bias alibi alibi_slopes(%slopes)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<16xf32>)
      -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @bias_alibi_per_batch_and_head
// CHECK-SAME: %[[S:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bhsd bias{{ +}}alibi alibi_slopes(%[[S]]) :
// CHECK-SAME: (tensor<2x16x128x64xf32>, tensor<2x16x128x64xf32>, tensor<2x16x128x64xf32>, tensor<2x16xf32>) -> tensor<2x16x128x64xf32>
func.func @bias_alibi_per_batch_and_head(%q: tensor<2x16x128x64xf32>, %k: tensor<2x16x128x64xf32>, %v: tensor<2x16x128x64xf32>, %slopes: tensor<2x16xf32>) -> tensor<2x16x128x64xf32> {
  %o = te.attention %q, %k, %v layout bhsd bias alibi alibi_slopes(%slopes)
      : (tensor<2x16x128x64xf32>, tensor<2x16x128x64xf32>, tensor<2x16x128x64xf32>, tensor<2x16xf32>)
      -> tensor<2x16x128x64xf32>
  return %o : tensor<2x16x128x64xf32>
}

//===----------------------------------------------------------------------===//
// te.attention: softmax, dropout
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @softmax_vanilla
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd :
func.func @softmax_vanilla(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd softmax vanilla
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @softmax_off_by_one
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal softmax{{ +}}off_by_one :
// CHECK-SAME: -> tensor<2x128x16x64xbf16>
func.func @softmax_off_by_one(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal softmax off_by_one
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o : tensor<2x128x16x64xbf16>
}

// -----

// CHECK-LABEL: func @softmax_learnable
// CHECK-SAME: %[[A:[a-zA-Z0-9_]+]]: tensor<1x16x1x1xf32>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd softmax{{ +}}learnable softmax_offset(%[[A]]) :
// CHECK-SAME: (tensor<2x128x16x64xf16>, tensor<2x128x4x64xf16>, tensor<2x128x4x64xf16>, tensor<1x16x1x1xf32>) -> tensor<2x128x16x64xf16>
func.func @softmax_learnable(%q: tensor<2x128x16x64xf16>, %k: tensor<2x128x4x64xf16>, %v: tensor<2x128x4x64xf16>, %alpha: tensor<1x16x1x1xf32>) -> tensor<2x128x16x64xf16> {
  %o = te.attention %q, %k, %v layout bshd softmax learnable softmax_offset(%alpha)
      : (tensor<2x128x16x64xf16>, tensor<2x128x4x64xf16>, tensor<2x128x4x64xf16>, tensor<1x16x1x1xf32>)
      -> tensor<2x128x16x64xf16>
  return %o : tensor<2x128x16x64xf16>
}

// -----

// CHECK-LABEL: func @dropout
// CHECK-SAME: %[[RNG:[a-zA-Z0-9_]+]]: tensor<2xi64>
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal dropout 1.000000e-01 rng_state(%[[RNG]]) {return_lse} :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi64>) -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
func.func @dropout(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %rng: tensor<2xi64>) -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal dropout 0.1 rng_state(%rng) {return_lse}
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi64>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
  return %o, %lse : tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>
}

//===----------------------------------------------------------------------===//
// te.attention: several optional groups at once (printed in a fixed order)
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @all_groups_bshd
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x256x4x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x256x4x32xbf16>, %[[LQ:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[LKV:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[B:[a-zA-Z0-9_]+]]: tensor<1x16x128x256xf32>, %[[RNG:[a-zA-Z0-9_]+]]: tensor<2xi64>, %[[A:[a-zA-Z0-9_]+]]: tensor<1x16x1x1xf32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}bshd mask{{ +}}padding_causal_bottom_right window [128, 0] scale 1.250000e-01 bias{{ +}}post_scale softmax{{ +}}learnable dropout 2.500000e-01 seqlens(%[[LQ]], %[[LKV]]) bias_tensor(%[[B]]) rng_state(%[[RNG]]) softmax_offset(%[[A]]) {return_lse} :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x32xbf16>, tensor<2xi32>, tensor<2xi32>, tensor<1x16x128x256xf32>, tensor<2xi64>, tensor<1x16x1x1xf32>) -> (tensor<2x128x16x32xbf16>, tensor<2x16x128x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @all_groups_bshd(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x256x4x64xbf16>, %v: tensor<2x256x4x32xbf16>, %len_q: tensor<2xi32>, %len_kv: tensor<2xi32>, %bias: tensor<1x16x128x256xf32>, %rng: tensor<2xi64>, %alpha: tensor<1x16x1x1xf32>) -> (tensor<2x128x16x32xbf16>, tensor<2x16x128x1xf32>) {
  // The groups are written in a different order from the printed one where
  // the format allows it (attributes before operands).
  %o, %lse = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right window [128, 0] scale 0.125 bias post_scale softmax learnable dropout 0.25
      seqlens(%len_q, %len_kv) bias_tensor(%bias) rng_state(%rng) softmax_offset(%alpha) {return_lse}
      : (tensor<2x128x16x64xbf16>, tensor<2x256x4x64xbf16>, tensor<2x256x4x32xbf16>, tensor<2xi32>, tensor<2xi32>, tensor<1x16x128x256xf32>, tensor<2xi64>, tensor<1x16x1x1xf32>)
      -> (tensor<2x128x16x32xbf16>, tensor<2x16x128x1xf32>)
  return %o, %lse : tensor<2x128x16x32xbf16>, tensor<2x16x128x1xf32>
}

// -----

// CHECK-LABEL: func @all_groups_thd
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<1024x16x128xf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2048x2x128xf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2048x2x128xf16>, %[[CUQ:[a-zA-Z0-9_]+]]: tensor<5xi32>, %[[CUKV:[a-zA-Z0-9_]+]]: tensor<5xi32>, %[[OFFQ:[a-zA-Z0-9_]+]]: tensor<5xi32>, %[[OFFKV:[a-zA-Z0-9_]+]]: tensor<5xi32>, %[[S:[a-zA-Z0-9_]+]]: tensor<4x16xf32>, %[[RNG:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[LSE:[a-zA-Z0-9_]+]] = te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}thd mask{{ +}}padding_causal_bottom_right window [256, -1] scale 5.000000e-01 bias{{ +}}alibi softmax{{ +}}off_by_one dropout 5.000000e-01 cu_seqlens(%[[CUQ]], %[[CUKV]]) seq_offsets(%[[OFFQ]], %[[OFFKV]]) alibi_slopes(%[[S]]) rng_state(%[[RNG]]) {return_lse} :
// CHECK-SAME: (tensor<1024x16x128xf16>, tensor<2048x2x128xf16>, tensor<2048x2x128xf16>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<4x16xf32>, tensor<2xi64>) -> (tensor<1024x16x128xf16>, tensor<1024x16x1xf32>)
// CHECK: return %[[O]], %[[LSE]]
func.func @all_groups_thd(%q: tensor<1024x16x128xf16>, %k: tensor<2048x2x128xf16>, %v: tensor<2048x2x128xf16>, %cu_q: tensor<5xi32>, %cu_kv: tensor<5xi32>, %off_q: tensor<5xi32>, %off_kv: tensor<5xi32>, %slopes: tensor<4x16xf32>, %rng: tensor<2xi64>) -> (tensor<1024x16x128xf16>, tensor<1024x16x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding_causal_bottom_right window [256, -1] scale 0.5 bias alibi softmax off_by_one dropout 0.5
      cu_seqlens(%cu_q, %cu_kv) seq_offsets(%off_q, %off_kv) alibi_slopes(%slopes) rng_state(%rng) {return_lse}
      : (tensor<1024x16x128xf16>, tensor<2048x2x128xf16>, tensor<2048x2x128xf16>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<4x16xf32>, tensor<2xi64>)
      -> (tensor<1024x16x128xf16>, tensor<1024x16x1xf32>)
  return %o, %lse : tensor<1024x16x128xf16>, tensor<1024x16x1xf32>
}

// -----

// CHECK-LABEL: func @all_groups_arbitrary
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<64x2x8x64xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<64x2x8x64xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<64x2x8x64xf32>, %[[M:[a-zA-Z0-9_]+]]: tensor<2x1x64x64xi1>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x8x64x64xf32>, %[[A:[a-zA-Z0-9_]+]]: tensor<1x8x1x1xf32>)
// CHECK: te.attention %[[Q]], %[[K]], %[[V]] layout{{ +}}sbhd mask{{ +}}arbitrary window [8, 8] bias{{ +}}pre_scale softmax{{ +}}learnable mask_tensor(%[[M]]) bias_tensor(%[[B]]) softmax_offset(%[[A]]) :
// CHECK-SAME: (tensor<64x2x8x64xf32>, tensor<64x2x8x64xf32>, tensor<64x2x8x64xf32>, tensor<2x1x64x64xi1>, tensor<2x8x64x64xf32>, tensor<1x8x1x1xf32>) -> tensor<64x2x8x64xf32>
func.func @all_groups_arbitrary(%q: tensor<64x2x8x64xf32>, %k: tensor<64x2x8x64xf32>, %v: tensor<64x2x8x64xf32>, %mask: tensor<2x1x64x64xi1>, %bias: tensor<2x8x64x64xf32>, %alpha: tensor<1x8x1x1xf32>) -> tensor<64x2x8x64xf32> {
  %o = te.attention %q, %k, %v layout sbhd mask arbitrary window [8, 8] bias pre_scale softmax learnable
      mask_tensor(%mask) bias_tensor(%bias) softmax_offset(%alpha)
      : (tensor<64x2x8x64xf32>, tensor<64x2x8x64xf32>, tensor<64x2x8x64xf32>, tensor<2x1x64x64xi1>, tensor<2x8x64x64xf32>, tensor<1x8x1x1xf32>)
      -> tensor<64x2x8x64xf32>
  return %o : tensor<64x2x8x64xf32>
}

//===----------------------------------------------------------------------===//
// te.attention_backward
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @backward_bshd_causal
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x128x4x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x128x4x64xbf16>, %[[O:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[DO:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[LSE:[a-zA-Z0-9_]+]]: tensor<2x16x128x1xf32>)
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]] = te.attention_backward %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[LSE]] layout{{ +}}bshd mask{{ +}}causal :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @backward_bshd_causal(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x4x64xbf16>, %v: tensor<2x128x4x64xbf16>, %o: tensor<2x128x16x64xbf16>, %do: tensor<2x128x16x64xbf16>, %lse: tensor<2x16x128x1xf32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>)
  return %dq, %dk, %dv : tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>
}

// -----

// CHECK-LABEL: func @backward_defaults_elided
// CHECK: te.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd :
// CHECK-SAME: -> (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x32xf32>)
func.func @backward_defaults_elided(%q: tensor<128x2x8x64xf32>, %k: tensor<256x2x8x64xf32>, %v: tensor<256x2x8x32xf32>, %o: tensor<128x2x8x32xf32>, %do: tensor<128x2x8x32xf32>, %lse: tensor<2x8x128x1xf32>) -> (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x32xf32>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout sbhd mask no_mask bias no_bias softmax vanilla dropout 0.0
      : (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x32xf32>, tensor<128x2x8x32xf32>, tensor<128x2x8x32xf32>, tensor<2x8x128x1xf32>)
      -> (tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x32xf32>)
  return %dq, %dk, %dv : tensor<128x2x8x64xf32>, tensor<256x2x8x64xf32>, tensor<256x2x8x32xf32>
}

// -----

// CHECK-LABEL: func @backward_bhsd_window_scale_arbitrary
// CHECK-SAME: %[[M:[a-zA-Z0-9_]+]]: tensor<1x1x128x128xi1>
// CHECK: te.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bhsd mask{{ +}}arbitrary window [16, 16] scale 1.250000e-01 mask_tensor(%[[M]]) :
// CHECK-SAME: -> (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>)
func.func @backward_bhsd_window_scale_arbitrary(%q: tensor<2x16x128x64xf16>, %k: tensor<2x16x128x64xf16>, %v: tensor<2x16x128x64xf16>, %o: tensor<2x16x128x64xf16>, %do: tensor<2x16x128x64xf16>, %lse: tensor<2x16x128x1xf32>, %mask: tensor<1x1x128x128xi1>) -> (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bhsd mask arbitrary window [16, 16] scale 0.125 mask_tensor(%mask)
      : (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>, tensor<1x1x128x128xi1>)
      -> (tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>)
  return %dq, %dk, %dv : tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>
}

// -----

// A bias tensor adds a dbias result of its type.
// CHECK-LABEL: func @backward_dbias
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[O:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[DO:[a-zA-Z0-9_]+]]: tensor<2x128x16x64xbf16>, %[[LSE:[a-zA-Z0-9_]+]]: tensor<2x16x128x1xf32>, %[[LQ:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[LKV:[a-zA-Z0-9_]+]]: tensor<2xi32>, %[[B:[a-zA-Z0-9_]+]]: tensor<1x16x128x128xf32>)
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]], %[[DB:[a-zA-Z0-9_]+]] = te.attention_backward %[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[LSE]] layout{{ +}}bshd mask{{ +}}padding bias{{ +}}post_scale seqlens(%[[LQ]], %[[LKV]]) bias_tensor(%[[B]]) :
// CHECK-SAME: (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>, tensor<2xi32>, tensor<2xi32>, tensor<1x16x128x128xf32>)
// CHECK-SAME: -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<1x16x128x128xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]], %[[DB]]
func.func @backward_dbias(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %o: tensor<2x128x16x64xbf16>, %do: tensor<2x128x16x64xbf16>, %lse: tensor<2x16x128x1xf32>, %len_q: tensor<2xi32>, %len_kv: tensor<2xi32>, %bias: tensor<1x16x128x128xf32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<1x16x128x128xf32>) {
  %dq, %dk, %dv, %dbias = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask padding bias post_scale seqlens(%len_q, %len_kv) bias_tensor(%bias)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>, tensor<2xi32>, tensor<2xi32>, tensor<1x16x128x128xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<1x16x128x128xf32>)
  return %dq, %dk, %dv, %dbias : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<1x16x128x128xf32>
}

// -----

// A learnable softmax adds a d_softmax_offset result of the offset's type.
// CHECK-LABEL: func @backward_d_softmax_offset
// CHECK-SAME: %[[A:[a-zA-Z0-9_]+]]: tensor<1x16x1x1xf32>
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]], %[[DA:[a-zA-Z0-9_]+]] = te.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bhsd mask{{ +}}causal softmax{{ +}}learnable softmax_offset(%[[A]]) :
// CHECK-SAME: -> (tensor<2x16x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<1x16x1x1xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]], %[[DA]]
func.func @backward_d_softmax_offset(%q: tensor<2x16x128x64xf16>, %k: tensor<2x4x128x64xf16>, %v: tensor<2x4x128x64xf16>, %o: tensor<2x16x128x64xf16>, %do: tensor<2x16x128x64xf16>, %lse: tensor<2x16x128x1xf32>, %alpha: tensor<1x16x1x1xf32>) -> (tensor<2x16x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<1x16x1x1xf32>) {
  %dq, %dk, %dv, %dalpha = te.attention_backward %q, %k, %v, %o, %do, %lse layout bhsd mask causal softmax learnable softmax_offset(%alpha)
      : (tensor<2x16x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x64xf16>, tensor<2x16x128x1xf32>, tensor<1x16x1x1xf32>)
      -> (tensor<2x16x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<1x16x1x1xf32>)
  return %dq, %dk, %dv, %dalpha : tensor<2x16x128x64xf16>, tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>, tensor<1x16x1x1xf32>
}

// -----

// dbias comes before d_softmax_offset.
// CHECK-LABEL: func @backward_dbias_and_d_softmax_offset
// CHECK-SAME: %[[B:[a-zA-Z0-9_]+]]: tensor<2x1x128x128xbf16>, %[[A:[a-zA-Z0-9_]+]]: tensor<1x8x1x1xf32>, %[[RNG:[a-zA-Z0-9_]+]]: tensor<2xi64>
// CHECK: %[[R:[a-zA-Z0-9_]+]]:2 = te.attention_backward
// CHECK-SAME: layout{{ +}}sbhd mask{{ +}}causal_bottom_right window [64, 0] scale 1.250000e-01 bias{{ +}}pre_scale softmax{{ +}}learnable dropout 1.000000e-01 bias_tensor(%[[B]]) rng_state(%[[RNG]]) softmax_offset(%[[A]]) :
// CHECK-SAME: (tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x8x128x1xf32>, tensor<2x1x128x128xbf16>, tensor<2xi64>, tensor<1x8x1x1xf32>)
// CHECK-SAME: -> (tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x1x128x128xbf16>, tensor<1x8x1x1xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[R]]#0, %[[R]]#1
func.func @backward_dbias_and_d_softmax_offset(%q: tensor<128x2x8x64xbf16>, %k: tensor<128x2x8x64xbf16>, %v: tensor<128x2x8x64xbf16>, %o: tensor<128x2x8x64xbf16>, %do: tensor<128x2x8x64xbf16>, %lse: tensor<2x8x128x1xf32>, %bias: tensor<2x1x128x128xbf16>, %alpha: tensor<1x8x1x1xf32>, %rng: tensor<2xi64>) -> (tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x1x128x128xbf16>, tensor<1x8x1x1xf32>) {
  %dq, %dk, %dv, %dbias, %dalpha = te.attention_backward %q, %k, %v, %o, %do, %lse layout sbhd mask causal_bottom_right window [64, 0] scale 0.125 bias pre_scale softmax learnable dropout 0.1
      bias_tensor(%bias) rng_state(%rng) softmax_offset(%alpha)
      : (tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x8x128x1xf32>, tensor<2x1x128x128xbf16>, tensor<2xi64>, tensor<1x8x1x1xf32>)
      -> (tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x1x128x128xbf16>, tensor<1x8x1x1xf32>)
  return %dq, %dk, %dv, %dbias, %dalpha : tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<128x2x8x64xbf16>, tensor<2x1x128x128xbf16>, tensor<1x8x1x1xf32>
}

// -----

// CHECK-LABEL: func @backward_thd_all_groups
// CHECK-SAME: %[[CUQ:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[CUKV:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[OFFQ:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[OFFKV:[a-zA-Z0-9_]+]]: tensor<3xi32>, %[[S:[a-zA-Z0-9_]+]]: tensor<16xf32>, %[[RNG:[a-zA-Z0-9_]+]]: tensor<2xi64>, %[[A:[a-zA-Z0-9_]+]]: tensor<1x16x1x1xf32>
// CHECK: %[[DQ:[a-zA-Z0-9_]+]], %[[DK:[a-zA-Z0-9_]+]], %[[DV:[a-zA-Z0-9_]+]], %[[DA:[a-zA-Z0-9_]+]] = te.attention_backward
// CHECK-SAME: layout{{ +}}thd mask{{ +}}padding_causal window [128, -1] bias{{ +}}alibi softmax{{ +}}learnable dropout 2.000000e-01 cu_seqlens(%[[CUQ]], %[[CUKV]]) seq_offsets(%[[OFFQ]], %[[OFFKV]]) alibi_slopes(%[[S]]) rng_state(%[[RNG]]) softmax_offset(%[[A]]) :
// CHECK-SAME: (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<512x16x64xbf16>, tensor<512x16x64xbf16>, tensor<512x16x1xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<16xf32>, tensor<2xi64>, tensor<1x16x1x1xf32>)
// CHECK-SAME: -> (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<1x16x1x1xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]], %[[DA]]
func.func @backward_thd_all_groups(%q: tensor<512x16x64xbf16>, %k: tensor<512x4x64xbf16>, %v: tensor<512x4x64xbf16>, %o: tensor<512x16x64xbf16>, %do: tensor<512x16x64xbf16>, %lse: tensor<512x16x1xf32>, %cu_q: tensor<3xi32>, %cu_kv: tensor<3xi32>, %off_q: tensor<3xi32>, %off_kv: tensor<3xi32>, %slopes: tensor<16xf32>, %rng: tensor<2xi64>, %alpha: tensor<1x16x1x1xf32>) -> (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<1x16x1x1xf32>) {
  %dq, %dk, %dv, %dalpha = te.attention_backward %q, %k, %v, %o, %do, %lse layout thd mask padding_causal window [128, -1] bias alibi softmax learnable dropout 0.2
      cu_seqlens(%cu_q, %cu_kv) seq_offsets(%off_q, %off_kv) alibi_slopes(%slopes) rng_state(%rng) softmax_offset(%alpha)
      : (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<512x16x64xbf16>, tensor<512x16x64xbf16>, tensor<512x16x1xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<16xf32>, tensor<2xi64>, tensor<1x16x1x1xf32>)
      -> (tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<1x16x1x1xf32>)
  return %dq, %dk, %dv, %dalpha : tensor<512x16x64xbf16>, tensor<512x4x64xbf16>, tensor<512x4x64xbf16>, tensor<1x16x1x1xf32>
}

// -----

// CHECK-LABEL: func @backward_bshd_off_by_one_alibi_f32
// CHECK-SAME: %[[S:[a-zA-Z0-9_]+]]: tensor<2x8xf32>
// CHECK: te.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding_causal_bottom_right bias{{ +}}alibi softmax{{ +}}off_by_one seqlens(%{{.*}}, %{{.*}}) alibi_slopes(%[[S]]) :
// CHECK-SAME: -> (tensor<2x64x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x128x8x32xf32>)
func.func @backward_bshd_off_by_one_alibi_f32(%q: tensor<2x64x8x32xf32>, %k: tensor<2x128x8x32xf32>, %v: tensor<2x128x8x32xf32>, %o: tensor<2x64x8x32xf32>, %do: tensor<2x64x8x32xf32>, %lse: tensor<2x8x64x1xf32>, %len_q: tensor<2xi32>, %len_kv: tensor<2xi32>, %slopes: tensor<2x8xf32>) -> (tensor<2x64x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x128x8x32xf32>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask padding_causal_bottom_right bias alibi softmax off_by_one seqlens(%len_q, %len_kv) alibi_slopes(%slopes)
      : (tensor<2x64x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x64x8x32xf32>, tensor<2x64x8x32xf32>, tensor<2x8x64x1xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2x8xf32>)
      -> (tensor<2x64x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x128x8x32xf32>)
  return %dq, %dk, %dv : tensor<2x64x8x32xf32>, tensor<2x128x8x32xf32>, tensor<2x128x8x32xf32>
}
