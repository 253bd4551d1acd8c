// Lowering of the FP8 scaling ops to linalg on tensors.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg | FileCheck %s

// amax: a reduction of the bits of |x| as unsigned integers from 0 (the
// same order as the values), NaN elements (unordered with themselves)
// replaced by 0 so that they are skipped as TE's fmaxf skips them, then back
// to f32. In two steps, so that the first runs on several threads: each
// row of the [leading dims, last dim] view, then the rows' maxima.
// CHECK-LABEL: func @amax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : i32) outs(%{{.*}} : tensor<4xi32>)
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[X]] : tensor<4x8xbf16>) outs(%[[INIT]] : tensor<4xi32>)
// CHECK: %[[F:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.constant 2147483647 : i32
// CHECK: %[[MAG:.*]] = arith.andi
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[F]], %[[F]] : f32
// CHECK: %[[SKIP:.*]] = arith.select %[[NAN]], %{{.*}}, %[[MAG]] : i32
// CHECK: arith.maxui %{{.*}}, %[[SKIP]]
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[ROWS]] : tensor<4xi32>) outs(%{{.*}} : tensor<i32>)
// CHECK: arith.maxui
// CHECK: linalg.generic {{.*}} ins(%[[BITS]] : tensor<i32>)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
func.func @amax(%x: tensor<4x8xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<4x8xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// Rows of a multiple of 16 elements go in vectors of 16 with a vector
// accumulator (LLVM leaves the scalar form of this reduction scalar).
// CHECK-LABEL: func @amax_vectors
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} outs(%{{.*}} : tensor<3xi32>)
// CHECK: scf.for %[[C:.*]] = %c0 to %c64 step %c16 iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<16xi32>)
// CHECK: %[[V:.*]] = vector.transfer_read %{{.*}}[%{{.*}}, %[[C]]]{{.*}} : tensor<3x64xbf16>, vector<16xbf16>
// CHECK: %[[F:.*]] = arith.extf %[[V]] : vector<16xbf16> to vector<16xf32>
// CHECK: arith.andi %{{.*}} : vector<16xi32>
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[F]], %[[F]] : vector<16xf32>
// CHECK: %[[SKIP:.*]] = arith.select %[[NAN]], %{{.*}} : vector<16xi1>, vector<16xi32>
// CHECK: arith.maxui %[[ACC]], %[[SKIP]] : vector<16xi32>
// CHECK: vector.reduction <maxui>, %{{.*}} : vector<16xi32> into i32
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[ROWS]] : tensor<3xi32>)
func.func @amax_vectors(%x: tensor<3x64xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<3x64xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// compute_scale: epsilon floor, fp8_max / amax, FLT_MAX on overflow, the
// power-of-two mask, and 1 for a zero or non-finite amax.
// CHECK-LABEL: func @compute_scale
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-DAG: arith.constant 9.99999996E-13 : f32
// CHECK-DAG: arith.constant 4.480000e+02 : f32
// CHECK: arith.divf
// CHECK: arith.constant 3.40282347E+38 : f32
// CHECK: arith.constant -8388608 : i32
// CHECK: arith.andi
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: arith.select
func.func @compute_scale(%amax: tensor<3xf32>) -> tensor<3xf32> {
  %s = te.compute_scale %amax fp8_type f8E4M3FN epsilon 1.0e-12 pow2_scales
      : tensor<3xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// update_delayed_scaling: the history shifts by one with the new amax in
// front, the max over it (from 0, skipping NaN: maxnumf, as TE's fmaxf)
// feeds (57344 * 2^-2) / amax.
// CHECK-LABEL: func @delayed_scaling
// CHECK-SAME: (%[[H:.*]]: tensor<16x3xf32>, %[[A:.*]]: tensor<3xf32>, %[[S:.*]]: tensor<3xf32>)
// CHECK: %[[KEPT:.*]] = tensor.extract_slice %[[H]][0, 0] [15, 3] [1, 1]
// CHECK: %[[SHIFTED:.*]] = tensor.insert_slice %[[KEPT]] into %{{.*}}[1, 0] [15, 3] [1, 1]
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[A]] into %[[SHIFTED]][0, 0] [1, 3] [1, 1]
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[NEW]] : tensor<16x3xf32>) {{.*}} dimensions = [0]
// CHECK: arith.maxnumf
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[MAX]], %[[S]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: arith.constant 1.433600e+04 : f32
// CHECK: return %[[NEW]], %[[SCALE]]
func.func @delayed_scaling(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>)
    -> (tensor<16x3xf32>, tensor<3xf32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E5M2 margin 2
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>, tensor<3xf32>
  return %h2, %s2 : tensor<16x3xf32>, tensor<3xf32>
}

// -----

// A history of one step (TE's amax_history_len = 1): nothing is kept, the
// new amax is the whole new history, and the max over it feeds the scale.
// CHECK-LABEL: func @delayed_scaling_history_of_one
// CHECK-SAME: (%[[H:.*]]: tensor<1x3xf32>, %[[A:.*]]: tensor<3xf32>, %[[S:.*]]: tensor<3xf32>)
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<1x3xf32>
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[A]] into %[[EMPTY]][0, 0] [1, 3] [1, 1]
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[NEW]] : tensor<1x3xf32>) {{.*}} dimensions = [0]
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[MAX]], %[[S]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: return %[[NEW]], %[[SCALE]]
func.func @delayed_scaling_history_of_one(%h: tensor<1x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>)
    -> (tensor<1x3xf32>, tensor<3xf32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E5M2 margin 2
      : tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3xf32>, tensor<3xf32>
  return %h2, %s2 : tensor<1x3xf32>, tensor<3xf32>
}

// -----

// The same for one managed tensor, most_recent: no reduction either.
// CHECK-LABEL: func @delayed_scaling_history_of_one_most_recent
// CHECK-SAME: (%[[H:.*]]: tensor<1xf32>, %[[A:.*]]: tensor<f32>, %[[S:.*]]: tensor<f32>)
// CHECK-NOT: tensor.extract_slice
// CHECK-NOT: linalg.reduce
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[A]] into %{{.*}}[0] [1] [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[S]] : tensor<f32>, tensor<f32>)
// CHECK: return %[[NEW]], %[[SCALE]]
func.func @delayed_scaling_history_of_one_most_recent(%h: tensor<1xf32>, %amax: tensor<f32>, %scale: tensor<f32>)
    -> (tensor<1xf32>, tensor<f32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN amax_algo most_recent
      : tensor<1xf32>, tensor<f32>, tensor<f32> -> tensor<1xf32>, tensor<f32>
  return %h2, %s2 : tensor<1xf32>, tensor<f32>
}

// -----

// most_recent uses the new amax directly: no reduction over the history.
// CHECK-LABEL: func @delayed_scaling_most_recent
// CHECK-NOT: linalg.reduce
// CHECK: linalg.generic
func.func @delayed_scaling_most_recent(%h: tensor<4xf32>, %amax: tensor<f32>, %scale: tensor<f32>)
    -> (tensor<4xf32>, tensor<f32>) {
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN amax_algo most_recent
      : tensor<4xf32>, tensor<f32>, tensor<f32> -> tensor<4xf32>, tensor<f32>
  return %h2, %s2 : tensor<4xf32>, tensor<f32>
}

// -----

// per_tensor quantize, row-wise data only, rows of whole vectors of 16:
// one pass over the input. Each row (in parallel) is read 16 elements at a
// time; the same vector feeds the row's maximum of the bits of |x| and the
// FP8 cast of x * scale; then the maximum of the rows.
// CHECK-LABEL: func @quantize_one_pass
// CHECK-SAME: (%[[X:.*]]: tensor<3x4x32xbf16>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[M:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<3x4x32xbf16> into tensor<12x32xbf16>
// CHECK: %[[ROWS:.*]]:2 = scf.forall (%[[R:.*]]) in (12) shared_outs({{.*}}) -> (tensor<12x32xf8E4M3FN>, tensor<12x1xi32>)
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xi32>, tensor<32xf8E4M3FN>)
// CHECK: %[[V:.*]] = vector.transfer_read %[[M]][%[[R]], %[[C]]]{{.*}} : tensor<12x32xbf16>, vector<16xbf16>
// CHECK: %[[F:.*]] = arith.extf %[[V]] : vector<16xbf16> to vector<16xf32>
// CHECK: arith.maxui %{{.*}} : vector<16xi32>
// CHECK: arith.mulf %[[F]], %{{.*}} : vector<16xf32>
// CHECK: arith.maxsi %{{.*}} : vector<16xi32>
// CHECK: arith.bitcast %{{.*}} : vector<16xi8> to vector<16xf8E4M3FN>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[C]]] {{.*}} : vector<16xf8E4M3FN>, tensor<32xf8E4M3FN>
// CHECK: vector.reduction <maxui>, %{{.*}} : vector<16xi32> into i32
// CHECK: scf.forall.in_parallel
// CHECK: %[[MAX:.*]] = tensor.collapse_shape %[[ROWS]]#1 {{\[}}[0, 1]] : tensor<12x1xi32> into tensor<12xi32>
// CHECK: %[[D:.*]] = tensor.expand_shape %[[ROWS]]#0
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[MAX]] : tensor<12xi32>) outs(%{{.*}} : tensor<i32>)
// CHECK: return %[[D]]
func.func @quantize_one_pass(%x: tensor<3x4x32xbf16>, %s: tensor<f32>)
    -> (tensor<3x4x32xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<3x4x32xbf16>, tensor<f32>
      -> tensor<3x4x32xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %si, %a : tensor<3x4x32xf8E4M3FN>, tensor<f32>, tensor<f32>
}

// -----

// per_tensor quantize with a transposed copy: the row-wise cast (parallel
// over the input), the transposed cast reading the input transposed,
// scale_inv = 1 / scale, and the amax as its own full reduction of the
// bits of |x| (two loops that LLVM vectorizes).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func @quantize_both
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[D:.*]] = linalg.generic {indexing_maps = [#[[ID]], {{.*}}, #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[S]] : tensor<4x8xbf16>, tensor<f32>) outs(%{{.*}} : tensor<4x8xf8E4M3FN>)
// CHECK: arith.mulf
// CHECK: arith.maxsi
// CHECK: arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK: %[[DT:.*]] = linalg.generic {indexing_maps = [#[[T]], {{.*}}, #[[ID]]]{{.*}} outs(%{{.*}} : tensor<8x4xf8E4M3FN>)
// CHECK: %[[SI:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK: arith.divf
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[X]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xi32>)
// CHECK: arith.maxui
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[ROWS]] : tensor<4xi32>) outs(%{{.*}} : tensor<i32>)
// CHECK: %[[AMAX:.*]] = linalg.generic {{.*}} ins(%[[BITS]] : tensor<i32>)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: return %[[D]], %[[DT]], %[[SI]], %[[AMAX]]
func.func @quantize_both(%x: tensor<4x8xbf16>, %s: tensor<f32>)
    -> (tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>) {
  %d, %dt, %si, %a = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<4x8xbf16>, tensor<f32>
      -> tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %dt, %si, %a : tensor<4x8xf8E4M3FN>, tensor<8x4xf8E4M3FN>, tensor<f32>, tensor<f32>
}

// -----

// per_tensor dequantize: decode the FP8 bits exactly, multiply by scale_inv,
// round to the result type.
// CHECK-LABEL: func @dequantize
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xbf16>)
// CHECK: arith.bitcast %{{.*}} : f8E5M2 to i8
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @dequantize(%d: tensor<2x3xf8E5M2>, %s: tensor<f32>) -> tensor<2x3xbf16> {
  %x = te.dequantize %d, %s mode per_tensor : tensor<2x3xf8E5M2>, tensor<f32> -> tensor<2x3xbf16>
  return %x : tensor<2x3xbf16>
}
