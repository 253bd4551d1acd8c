// Canonicalization of te ops: collectives fold on trivial groups and are never erased, pure ops are erased when unused, quantize/dequantize pairs stay, and the attention window is put into canonical form.
// RUN: te-opt %s -split-input-file -canonicalize | FileCheck %s
// RUN: te-opt %s -split-input-file -canonicalize="test-convergence=true" > %t.1 && te-opt %t.1 -split-input-file -canonicalize > %t.2 && diff %t.1 %t.2

//===----------------------------------------------------------------------===//
// Collectives on a group of size 1 fold to their input.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func @size_one_group_folds
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<128x64xbf16>, %[[Y:[a-zA-Z0-9_]+]]: tensor<?x64xf32>)
// CHECK-NOT: te.all_reduce
// CHECK-NOT: te.all_gather
// CHECK-NOT: te.reduce_scatter
// CHECK-NOT: te.all_to_all
// CHECK-NOT: te.permute
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[Y]], %[[Y]]
te.process_group @one size 1
func.func @size_one_group_folds(%x: tensor<128x64xbf16>, %y: tensor<?x64xf32>) -> (tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %r = te.all_reduce %x group @one reduce avg : tensor<128x64xbf16>
  %g = te.all_gather %x group @one dim 0 : tensor<128x64xbf16> -> tensor<128x64xbf16>
  %s = te.reduce_scatter %x group @one dim 1 reduce max : tensor<128x64xbf16> -> tensor<128x64xbf16>
  %t = te.all_to_all %x group @one split_dim 0 concat_dim 1 : tensor<128x64xbf16> -> tensor<128x64xbf16>
  %p = te.permute %x group @one shift 1 : tensor<128x64xbf16>
  // A chain folds all the way back to the input.
  %c0 = te.all_reduce %x group @one : tensor<128x64xbf16>
  %c1 = te.all_gather %c0 group @one dim 1 : tensor<128x64xbf16> -> tensor<128x64xbf16>
  %c2 = te.permute %c1 group @one shift -3 : tensor<128x64xbf16>
  // Dynamic dimensions.
  %d0 = te.all_gather %y group @one dim 0 : tensor<?x64xf32> -> tensor<?x64xf32>
  %d1 = te.reduce_scatter %d0 group @one dim 0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %r, %g, %s, %t, %p, %c2, %d0, %d1 : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A permute by a multiple of the group size (including 0 and negative
// multiples) folds; other shifts do not.
// CHECK-LABEL: func @permute_shift_multiple_of_group_size
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x512x4x64xbf16>)
// CHECK-DAG: %[[P1:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift 1 :
// CHECK-DAG: %[[P6:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift -6 :
// CHECK-NOT: te.permute %[[X]] group @cp shift 0
// CHECK-NOT: te.permute %[[X]] group @cp shift 4
// CHECK-NOT: te.permute %[[X]] group @cp shift 8
// CHECK-NOT: te.permute %[[X]] group @cp shift -4
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[P1]], %[[P6]]
te.process_group @cp size 4
func.func @permute_shift_multiple_of_group_size(%x: tensor<2x512x4x64xbf16>) -> (tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>) {
  %p0 = te.permute %x group @cp shift 0 : tensor<2x512x4x64xbf16>
  %p4 = te.permute %x group @cp shift 4 : tensor<2x512x4x64xbf16>
  %p8 = te.permute %x group @cp shift 8 : tensor<2x512x4x64xbf16>
  %pm4 = te.permute %x group @cp shift -4 : tensor<2x512x4x64xbf16>
  %p1 = te.permute %x group @cp shift 1 : tensor<2x512x4x64xbf16>
  %pm6 = te.permute %x group @cp shift -6 : tensor<2x512x4x64xbf16>
  return %p0, %p4, %p8, %pm4, %p1, %pm6 : tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>
}

// -----

// Collectives on larger groups are not folded, even where the shapes allow
// it (split_dim == concat_dim, all_reduce).
// CHECK-LABEL: func @larger_group_not_folded
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<128x64xbf16>)
// CHECK: %[[R:[a-zA-Z0-9_]+]] = te.all_reduce %[[X]] group @tp reduce{{ +}}max
// CHECK: %[[G:[a-zA-Z0-9_]+]] = te.all_gather %[[X]] group @tp dim 0
// CHECK: %[[S:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[X]] group @tp dim 0
// CHECK: %[[T0:[a-zA-Z0-9_]+]] = te.all_to_all %[[X]] group @tp split_dim 1 concat_dim 1
// CHECK: %[[T1:[a-zA-Z0-9_]+]] = te.all_to_all %[[X]] group @tp split_dim 1 concat_dim 0
// CHECK: %[[P0:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @tp shift 3
// CHECK: %[[P1:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @tp pairs [0, 1, 1, 0]
// CHECK: return %[[R]], %[[G]], %[[S]], %[[T0]], %[[T1]], %[[P0]], %[[P1]]
te.process_group @tp size 2
func.func @larger_group_not_folded(%x: tensor<128x64xbf16>) -> (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>) {
  %r = te.all_reduce %x group @tp reduce max : tensor<128x64xbf16>
  %g = te.all_gather %x group @tp dim 0 : tensor<128x64xbf16> -> tensor<256x64xbf16>
  %s = te.reduce_scatter %x group @tp dim 0 : tensor<128x64xbf16> -> tensor<64x64xbf16>
  %t0 = te.all_to_all %x group @tp split_dim 1 concat_dim 1 : tensor<128x64xbf16> -> tensor<128x64xbf16>
  %t1 = te.all_to_all %x group @tp split_dim 1 concat_dim 0 : tensor<128x64xbf16> -> tensor<256x32xbf16>
  %p0 = te.permute %x group @tp shift 3 : tensor<128x64xbf16>
  %p1 = te.permute %x group @tp pairs [0, 1, 1, 0] : tensor<128x64xbf16>
  return %r, %g, %s, %t0, %t1, %p0, %p1 : tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<64x64xbf16>, tensor<128x64xbf16>, tensor<256x32xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>
}

// -----

// Only a shift folds: an explicit identity pairs list is kept.
// CHECK-LABEL: func @permute_pairs_not_folded
// CHECK: te.permute %{{.*}} group @one pairs [0, 0]
te.process_group @one size 1
func.func @permute_pairs_not_folded(%x: tensor<8xf32>) -> tensor<8xf32> {
  %p = te.permute %x group @one pairs [0, 0] : tensor<8xf32>
  return %p : tensor<8xf32>
}

// -----

// Collectives have side effects (every rank must take part): unused ones are
// kept.
// CHECK-LABEL: func @unused_collectives_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<128x64xbf16>)
// CHECK: te.all_reduce %[[X]] group @tp :
// CHECK: te.all_gather %[[X]] group @tp dim 0
// CHECK: te.reduce_scatter %[[X]] group @tp dim 1 reduce{{ +}}min
// CHECK: te.all_to_all %[[X]] group @tp split_dim 0 concat_dim 1
// CHECK: te.permute %[[X]] group @tp shift 1
// CHECK: te.permute %[[X]] group @tp pairs [1, 0]
// CHECK: return
te.process_group @tp size 2
func.func @unused_collectives_kept(%x: tensor<128x64xbf16>) {
  %r = te.all_reduce %x group @tp : tensor<128x64xbf16>
  %g = te.all_gather %x group @tp dim 0 : tensor<128x64xbf16> -> tensor<256x64xbf16>
  %s = te.reduce_scatter %x group @tp dim 1 reduce min : tensor<128x64xbf16> -> tensor<128x32xbf16>
  %t = te.all_to_all %x group @tp split_dim 0 concat_dim 1 : tensor<128x64xbf16> -> tensor<64x128xbf16>
  %p0 = te.permute %x group @tp shift 1 : tensor<128x64xbf16>
  %p1 = te.permute %x group @tp pairs [1, 0] : tensor<128x64xbf16>
  return
}

// -----

// Pure ops are erased when their results are unused.
// CHECK-LABEL: func @unused_pure_ops_erased
// CHECK-NOT: te.
// CHECK: return
func.func @unused_pure_ops_erased(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x4x64xbf16>, %v: tensor<2x128x4x64xbf16>, %lse: tensor<2x16x128x1xf32>, %x: tensor<256x512xbf16>, %s: tensor<f32>, %a: tensor<128x256xf8E4M3FN>, %b: tensor<64x256xf8E4M3FN>) {
  %o0 = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1, %lse1 = te.attention %q, %k, %v layout bshd {return_lse}
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>) -> (tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o0, %o0, %lse layout bshd mask causal
      : (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x128x4x64xbf16>)
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  %m:4 = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
  %am = te.amax %x : tensor<256x512xbf16> -> tensor<f32>
  %sc = te.compute_scale %s fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %y = te.dequantize %d, %si mode per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xf32>
  %mm = te.scaled_matmul %a, %b scales(%s, %s) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xbf16>
  return
}

// -----

// Partially used results keep the op.
// CHECK-LABEL: func @partially_used_kept
// CHECK: %[[Q:[a-zA-Z0-9_]+]]:3 = te.quantize
// CHECK: return %[[Q]]#2
func.func @partially_used_kept(%x: tensor<256x512xbf16>, %s: tensor<f32>) -> tensor<f32> {
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %amax : tensor<f32>
}

// -----

// Quantization is lossy: a quantize -> dequantize pair is not folded away.
// CHECK-LABEL: func @quantize_dequantize_not_folded
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<256x512xbf16>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[Q:[a-zA-Z0-9_]+]]:3 = te.quantize %[[X]] scale(%[[S]]) mode{{ +}}per_tensor
// CHECK: %[[Y:[a-zA-Z0-9_]+]] = te.dequantize %[[Q]]#0, %[[Q]]#1 mode{{ +}}per_tensor
// CHECK: %[[M:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}mxfp8_1x32
// CHECK: %[[Z:[a-zA-Z0-9_]+]] = te.dequantize %[[M]]#0, %[[M]]#1 mode{{ +}}mxfp8_1x32
// CHECK-NOT: return %[[X]]
// CHECK: return %[[Y]], %[[Z]]
func.func @quantize_dequantize_not_folded(%x: tensor<256x512xbf16>, %s: tensor<f32>) -> (tensor<256x512xbf16>, tensor<256x512xbf16>) {
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  %y = te.dequantize %d, %si mode per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xbf16>
  %m, %ms = te.quantize %x mode mxfp8_1x32
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>
  %z = te.dequantize %m, %ms mode mxfp8_1x32 : tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU> -> tensor<256x512xbf16>
  return %y, %z : tensor<256x512xbf16>, tensor<256x512xbf16>
}

//===----------------------------------------------------------------------===//
// Attention window canonicalization
//===----------------------------------------------------------------------===//

// -----

// Under every causal mask a right bound of -1 means the same as 0 (no future
// keys) and is written 0.
// CHECK-LABEL: func @window_causal_right_unbounded
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [128, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal_bottom_right window [64, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding_causal window [32, 0] seqlens
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding_causal_bottom_right window [0, 0] seqlens
// CHECK-NOT: window [{{[0-9]+}}, -1]
// CHECK: return
func.func @window_causal_right_unbounded(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd mask causal window [128, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [64, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout bshd mask padding_causal window [32, -1] seqlens(%lq, %lkv)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
  %o3 = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right window [0, -1] seqlens(%lq, %lkv)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1, %o2, %o3 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// bottom_right_diagonal is kept only where it changes something: a
// top-left diagonal for a window or ALiBi on a mask that leaves the choice.
// It goes when it repeats the mask's alignment or the bottom-right default,
// and when there is neither a window nor ALiBi.
// CHECK-LABEL: func @diagonal_canonical
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [8, 8] bottom_right_diagonal false :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd bottom_right_diagonal false bias{{ +}}alibi
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [8, 8] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [8, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal_bottom_right window [8, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd :
// CHECK-NOT: bottom_right_diagonal
// CHECK: return
func.func @diagonal_canonical(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %slopes: tensor<16xf32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd window [8, 8] bottom_right_diagonal false
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd bottom_right_diagonal false bias alibi alibi_slopes(%slopes)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<16xf32>) -> tensor<2x128x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout bshd window [8, 8] bottom_right_diagonal true
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o3 = te.attention %q, %k, %v layout bshd mask causal window [8, 0] bottom_right_diagonal false
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o4 = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [8, 0] bottom_right_diagonal true
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o5 = te.attention %q, %k, %v layout bshd bottom_right_diagonal false
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1, %o2, %o3, %o4, %o5 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// A window that restricts nothing beyond the mask is removed: [-1, -1] under
// any mask, and [-1, 0] under a causal mask.
// CHECK-LABEL: func @window_removed
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd :
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding seqlens
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal :
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal :
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal_bottom_right :
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding_causal_bottom_right seqlens
// CHECK-NOT: window
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal scale 1.250000e-01 :
// CHECK-NOT: window
// CHECK: return
func.func @window_removed(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd window [-1, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd mask padding window [-1, -1] seqlens(%lq, %lkv)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout bshd mask causal window [-1, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o3 = te.attention %q, %k, %v layout bshd mask causal window [-1, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o4 = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [-1, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o5 = te.attention %q, %k, %v layout bshd mask padding_causal_bottom_right window [-1, -1] seqlens(%lq, %lkv)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
  %o6 = te.attention %q, %k, %v layout bshd mask causal window [-1, 0] scale 0.125
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1, %o2, %o3, %o4, %o5, %o6 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// Non-causal windows (other than [-1, -1]) and already canonical causal
// windows are untouched.
// CHECK-LABEL: func @window_untouched
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [64, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [0, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [16, 16] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd window [64, 128] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}padding window [8, 0] seqlens
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}arbitrary window [0, 0] mask_tensor
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [128, 0] :
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}bshd mask{{ +}}causal window [0, 0] :
func.func @window_untouched(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %lq: tensor<2xi32>, %lkv: tensor<2xi32>, %m: tensor<1x1x128x128xi1>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %o0 = te.attention %q, %k, %v layout bshd window [64, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o1 = te.attention %q, %k, %v layout bshd window [0, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o2 = te.attention %q, %k, %v layout bshd window [16, 16]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o3 = te.attention %q, %k, %v layout bshd window [64, 128]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o4 = te.attention %q, %k, %v layout bshd mask padding window [8, 0] seqlens(%lq, %lkv)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x128x16x64xbf16>
  %o5 = te.attention %q, %k, %v layout bshd mask arbitrary window [0, 0] mask_tensor(%m)
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<1x1x128x128xi1>) -> tensor<2x128x16x64xbf16>
  %o6 = te.attention %q, %k, %v layout bshd mask causal window [128, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  %o7 = te.attention %q, %k, %v layout bshd mask causal window [0, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) -> tensor<2x128x16x64xbf16>
  return %o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// te.attention_backward gets the same window canonicalization.
// CHECK-LABEL: func @window_backward
// CHECK: te.attention_backward {{.*}} layout{{ +}}bshd mask{{ +}}causal window [128, 0] :
// CHECK: te.attention_backward {{.*}} layout{{ +}}bshd mask{{ +}}causal :
// CHECK: te.attention_backward {{.*}} layout{{ +}}bshd window [32, 0] :
// CHECK: te.attention_backward {{.*}} layout{{ +}}bshd :
// CHECK: return
func.func @window_backward(%q: tensor<2x128x16x64xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x64xbf16>, %o: tensor<2x128x16x64xbf16>, %do: tensor<2x128x16x64xbf16>, %lse: tensor<2x16x128x1xf32>) -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>) {
  %a:3 = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal window [128, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>)
  %b:3 = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal window [-1, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>)
  %c:3 = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd window [32, 0]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>)
  %d:3 = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd window [-1, -1]
      : (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x16x128x1xf32>)
      -> (tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>)
  return %a#0, %b#1, %c#2, %d#0 : tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x64xbf16>
}

// -----

// The canonical form is a fixed point: canonicalizing again changes nothing.
// CHECK-LABEL: func @window_idempotent
// CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout{{ +}}sbhd mask{{ +}}causal_bottom_right window [256, 0] scale 5.000000e-01 :
func.func @window_idempotent(%q: tensor<128x2x8x64xf32>) -> tensor<128x2x8x64xf32> {
  %o = te.attention %q, %q, %q layout sbhd mask causal_bottom_right window [256, 0] scale 0.5
      : (tensor<128x2x8x64xf32>, tensor<128x2x8x64xf32>, tensor<128x2x8x64xf32>) -> tensor<128x2x8x64xf32>
  return %o : tensor<128x2x8x64xf32>
}
