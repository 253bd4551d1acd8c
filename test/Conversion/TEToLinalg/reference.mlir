// te-decompose-reference: te.attention as dense linalg math on the
// materialized [b, h_q, s_q, s_kv] score tensor ([1, h_q, t_q, t_kv] for
// thd), visibility from linalg.index; other te ops are left to the normal
// lowering. The backward pass is in reference-backward.mlir.
// RUN: te-opt %s -split-input-file --te-decompose-reference | FileCheck %s

// GQA (4 query heads, 2 kv heads), bshd, causal bottom-right with a window,
// d_qk = 16 != d_v = 8, with LSE.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-LABEL: func @causal_gqa
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x4x6x8xf32>)
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x4x6x8xf32>)
// CHECK: %[[I:.*]] = linalg.index 2 : index
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: arith.cmpi sle
// CHECK: arith.cmpi sge
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// CHECK: -> tensor<2x4x6x8xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[X]] : tensor<2x4x6x8xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: -> tensor<2x4x6x8xf32>
// CHECK: math.log
// CHECK-NOT: te.attention
// CHECK: return
func.func @causal_gqa(%q: tensor<2x6x4x16xbf16>, %k: tensor<2x8x2x16xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [2, 0] {return_lse}
      : (tensor<2x6x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x8xbf16>)
      -> (tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>)
  return %o, %lse : tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>
}

// -----

// Padding: the lengths are read per batch entry; the bias broadcasts over
// its size-1 dimensions.
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
// CHECK-DAG: #[[LEN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0)>
// CHECK-LABEL: func @padding_bias
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[B]], #[[LEN]], #[[LEN]], {{.*}}]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2xi32>, tensor<2xi32>)
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.extsi
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi slt
func.func @padding_bias(%q: tensor<2x2x4x8xf32>, %bias: tensor<1x2x4x4xf32>,
                        %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> tensor<2x2x4x8xf32> {
  %o = te.attention %q, %q, %q layout bhsd mask padding bias post_scale seqlens(%lq, %lkv) bias_tensor(%bias)
      : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2xi32>, tensor<2xi32>, tensor<1x2x4x4xf32>)
      -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// thd with seq_offsets: per-token tables (sequence, position, and the
// sequence's q and kv lengths) from a reduction over the sequences; a key is
// visible when both tokens are in the same sequence and the mask holds on
// their positions. LSE is [t_q, h_q, 1].
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d1 floordiv 2, d4)>
// CHECK-DAG: #[[SEQ:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[TOKEN:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d2)>
// CHECK-DAG: #[[KEY:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-DAG: #[[THD:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, d3)>
// CHECK-LABEL: func @thd
// CHECK-SAME: %[[CUQ:[^:]*]]: tensor<3xi32>, %[[CUKV:[^:]*]]: tensor<3xi32>, %[[OFFQ:[^:]*]]: tensor<3xi32>, %[[OFFKV:[^:]*]]: tensor<3xi32>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}]
// CHECK-SAME: outs(%{{.*}} : tensor<1x4x10x12xf32>)
// CHECK: tensor.extract_slice %[[CUQ]][0] [2] [1]
// CHECK: tensor.extract_slice %[[CUQ]][1] [2] [1]
// CHECK: tensor.extract_slice %[[OFFQ]][0] [2] [1]
// CHECK: tensor.extract_slice %[[CUKV]][0] [2] [1]
// CHECK: tensor.extract_slice %[[CUKV]][1] [2] [1]
// CHECK: %[[QT:.*]]:4 = linalg.generic {indexing_maps = [#[[SEQ]], #[[SEQ]], #[[SEQ]], #[[SEQ]], #[[SEQ]], #[[TOKEN]], #[[TOKEN]], #[[TOKEN]], #[[TOKEN]]], iterator_types = ["parallel", "reduction"]}
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.cmpi sle
// CHECK: arith.cmpi slt
// CHECK: } -> (tensor<10xi64>, tensor<10xi64>, tensor<10xi64>, tensor<10xi64>)
// CHECK: tensor.extract_slice %[[OFFKV]][0] [2] [1]
// CHECK: %[[KT:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: } -> (tensor<12xi64>, tensor<12xi64>)
// CHECK: %[[X:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[ROW]], #[[ROW]], #[[ROW]], #[[ROW]], #[[KEY]], #[[KEY]], {{.*}}]
// CHECK-SAME: ins(%[[S]], %[[QT]]#0, %[[QT]]#1, %[[QT]]#2, %[[QT]]#3, %[[KT]]#0, %[[KT]]#1 :
// CHECK: arith.cmpi eq
// CHECK: -> tensor<1x4x10x12xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<1x4x10x12xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {indexing_maps = [{{.*}}, {{.*}}, #[[THD]]]
// CHECK-SAME: outs(%{{.*}} : tensor<10x4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [{{.*}}, {{.*}}, #[[THD]]]
// CHECK-SAME: outs(%{{.*}} : tensor<10x4x1xf32>)
// CHECK: math.log
// CHECK-NOT: te.attention
// CHECK: return
func.func @thd(%q: tensor<10x4x8xf32>, %k: tensor<12x2x8xf32>, %v: tensor<12x2x4xf32>,
               %cu_q: tensor<3xi32>, %cu_kv: tensor<3xi32>,
               %off_q: tensor<3xi32>, %off_kv: tensor<3xi32>)
    -> (tensor<10x4x4xf32>, tensor<10x4x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout thd mask padding_causal
      cu_seqlens(%cu_q, %cu_kv) seq_offsets(%off_q, %off_kv) {return_lse}
      : (tensor<10x4x8xf32>, tensor<12x2x8xf32>, tensor<12x2x4xf32>,
         tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>)
      -> (tensor<10x4x4xf32>, tensor<10x4x1xf32>)
  return %o, %lse : tensor<10x4x4xf32>, tensor<10x4x1xf32>
}

// -----

// Dropout: a dense tensor of keep factors from the documented hash of each
// element's counter (kept when the top 24 bits reach p * 2^24 = 4194304,
// scaled by 1 / (1 - p)); the row sum (and so LSE) is taken before it, the
// weights of V after it.
// CHECK-LABEL: func @dropout
// CHECK-SAME: %[[RNG:[^:]*]]: tensor<2xi64>
// CHECK-DAG: %[[KEPT:.*]] = arith.constant 1.33333337 : f32
// CHECK-DAG: %[[THRESHOLD:.*]] = arith.constant 4194304 : i64
// CHECK-DAG: %[[GOLDEN:.*]] = arith.constant -7046029254386353131 : i64
// CHECK-DAG: %[[M1:.*]] = arith.constant -4658895280553007687 : i64
// CHECK-DAG: %[[M2:.*]] = arith.constant -7723592293110705685 : i64
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<1x2x8x8xf32>)
// CHECK: arith.addf
// CHECK: %[[SEED:.*]] = tensor.extract %[[RNG]][%{{.*}}] : tensor<2xi64>
// CHECK: %[[OFFSET:.*]] = tensor.extract %[[RNG]][%{{.*}}] : tensor<2xi64>
// CHECK: %[[F:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x8x8xf32>)
// CHECK: linalg.index 3
// CHECK: %[[COUNT:.*]] = arith.addi %[[OFFSET]], %{{.*}} : i64
// CHECK: %[[STEP:.*]] = arith.addi %[[COUNT]], %{{.*}} : i64
// CHECK: %[[MUL:.*]] = arith.muli %[[STEP]], %[[GOLDEN]] : i64
// CHECK: arith.addi %[[SEED]], %[[MUL]] : i64
// CHECK: arith.muli %{{.*}}, %[[M1]] : i64
// CHECK: arith.muli %{{.*}}, %[[M2]] : i64
// CHECK: arith.shrui
// CHECK: arith.xori
// CHECK: %[[TOP:.*]] = arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %[[TOP]], %[[THRESHOLD]] : i64
// CHECK: arith.select %[[KEEP]], %[[KEPT]], %{{.*}} : f32
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[F]] : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ins(%[[W]], %{{.*}} : tensor<1x2x8x8xf32>, tensor<1x8x2x16xbf16>)
// CHECK-NOT: te.attention
// CHECK: return
func.func @dropout(%q: tensor<1x8x2x16xbf16>, %rng: tensor<2xi64>) -> tensor<1x8x2x16xbf16> {
  %o = te.attention %q, %q, %q layout bshd dropout 0.25 rng_state(%rng)
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<2xi64>)
      -> tensor<1x8x2x16xbf16>
  return %o : tensor<1x8x2x16xbf16>
}

// -----

// Other te ops are the normal lowering's.
// CHECK-LABEL: func @amax
// CHECK: te.amax
func.func @amax(%x: tensor<4x8xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<4x8xbf16> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

// te.grouped_matmul: each row's group from the splits' prefix sums (the
// groups before the last that end at or before the row), then the dense
// sum over K with B read at that group, then the group's bias.
// CHECK-LABEL: func @grouped
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<3xi64>) outs(%{{.*}} : tensor<3xi64>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<10xi64>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: tensor.extract %arg1[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<3x4x8xbf16>
// CHECK: linalg.generic
// CHECK: tensor.extract %arg3[%{{.*}}, %{{.*}}] : tensor<3x4xf32>
func.func @grouped(%x: tensor<10x8xbf16>, %w: tensor<3x4x8xbf16>, %m: tensor<3xi64>,
                   %b: tensor<3x4xf32>) -> tensor<10x4xf32> {
  %y = te.grouped_matmul %x, %w splits(%m) bias(%b) transpose_b
      : tensor<10x8xbf16>, tensor<3x4x8xbf16>, tensor<3xi64>, tensor<3x4xf32> -> tensor<10x4xf32>
  return %y : tensor<10x4xf32>
}
