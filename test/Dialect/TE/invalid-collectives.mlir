// Negative tests for te.process_group and the collectives (all_reduce, all_gather, reduce_scatter, all_to_all, permute) and te.group_rank.
// RUN: te-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// te.process_group
//===----------------------------------------------------------------------===//

// A group must have at least one rank.
// expected-error @+1 {{attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
te.process_group @g size 0

// -----

// A negative size is rejected too.
// expected-error @+1 {{attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
te.process_group @g size -4

// -----

// The runtime takes groups (and worlds) of up to 2^20 ranks: a larger one
// would compile and then fail to load.
// expected-error @+1 {{'te.process_group' op size 1099511627776 exceeds the 1048576 ranks (2^20) a process group may have}}
te.process_group @g size 1099511627776

// -----

// 2^20 itself is fine.
te.process_group @g size 1048576

// -----

// A rank list holds whole groups...
// expected-error @+1 {{'ranks' must list whole groups of 2 ranks, got 3}}
te.process_group @g size 2 ranks [0, 1, 2]

// -----

// ...of the ranks of the world it describes...
// expected-error @+1 {{rank 4 in 'ranks' is outside the world of 4 ranks the list describes}}
te.process_group @g size 2 ranks [0, 4, 1, 2]

// -----

// ...each once.
// expected-error @+1 {{rank 1 is listed twice in 'ranks'}}
te.process_group @g size 2 ranks [0, 1, 1, 3]

// -----

// Two groups may not share a name.
// expected-note @+1 {{see existing symbol definition here}}
te.process_group @g size 2
// expected-error @+1 {{redefinition of symbol named 'g'}}
te.process_group @g size 4

// -----

// The 'size' keyword is required: a parse error.
// expected-error @+1 {{expected 'size'}}
te.process_group @g ranks 4

// -----

//===----------------------------------------------------------------------===//
// te.all_reduce
//===----------------------------------------------------------------------===//

// The group symbol must be defined.
te.process_group @g size 4

func.func @all_reduce_unknown_group(%x: tensor<16xf32>) {
  // expected-error @+1 {{group @h does not name a te.process_group}}
  %r = te.all_reduce %x group @h : tensor<16xf32>
  return
}

// -----

// The group symbol must name a te.process_group, not another symbol.
func.func @not_a_group() {
  return
}

func.func @all_reduce_group_is_func(%x: tensor<16xf32>) {
  // expected-error @+1 {{group @not_a_group does not name a te.process_group}}
  %r = te.all_reduce %x group @not_a_group : tensor<16xf32>
  return
}

// -----

// reduce avg needs a floating-point element type.
te.process_group @g size 4

func.func @all_reduce_avg_int(%x: tensor<16xi32>) {
  // expected-error @+1 {{reduce avg needs a floating-point element type, got 'i32'}}
  %r = te.all_reduce %x group @g reduce avg : tensor<16xi32>
  return
}

// -----

// The result has the input's type (only the generic form can differ).
te.process_group @g size 4

func.func @all_reduce_result_type(%x: tensor<16xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %r = "te.all_reduce"(%x) <{group = @g}> : (tensor<16xf32>) -> tensor<16xf16>
  return
}

// -----

// The input must be a ranked tensor (the generic form; the custom form
// only parses ranked tensor types).
te.process_group @g size 4

func.func @all_reduce_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %r = "te.all_reduce"(%x) <{group = @g}> : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// An unranked type does not parse in the custom form.
te.process_group @g size 4

func.func @all_reduce_unranked_custom(%x: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %r = te.all_reduce %x group @g : tensor<*xf32>
  return
}

// -----

// Unknown reduction keyword: a parse error.
te.process_group @g size 4

func.func @all_reduce_unknown_kind(%x: tensor<16xf32>) {
  // expected-error @+2 {{expected ::mlir::te::ReduceKind to be one of: sum, max, min, avg}}
  // expected-error @+1 {{failed to parse TE_ReduceKindAttr parameter 'value' which is to be a `::mlir::te::ReduceKind`}}
  %r = te.all_reduce %x group @g reduce prod : tensor<16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.all_gather
//===----------------------------------------------------------------------===//

// The group symbol must be defined.
te.process_group @g size 4

func.func @all_gather_unknown_group(%x: tensor<16x8xbf16>) {
  // expected-error @+1 {{group @tp does not name a te.process_group}}
  %r = te.all_gather %x group @tp dim 0 : tensor<16x8xbf16> -> tensor<64x8xbf16>
  return
}

// -----

// 'dim' must be a dimension of the input.
te.process_group @g size 4

func.func @all_gather_dim_out_of_range(%x: tensor<16x8xbf16>) {
  // expected-error @+1 {{'dim' is 2 but the input has rank 2}}
  %r = te.all_gather %x group @g dim 2 : tensor<16x8xbf16> -> tensor<16x8xbf16>
  return
}

// -----

// 'dim' must be >= 0.
te.process_group @g size 4

func.func @all_gather_negative_dim(%x: tensor<16x8xbf16>) {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = te.all_gather %x group @g dim -1 : tensor<16x8xbf16> -> tensor<16x8xbf16>
  return
}

// -----

// A 0-D input has no dimension to gather along.
te.process_group @g size 4

func.func @all_gather_0d(%x: tensor<f32>) {
  // expected-error @+1 {{'dim' is 0 but the input has rank 0}}
  %r = te.all_gather %x group @g dim 0 : tensor<f32> -> tensor<4xf32>
  return
}

// -----

// The gathered dimension is the group size times the input's.
te.process_group @g size 4

func.func @all_gather_result_shape(%x: tensor<16x8xbf16>) {
  // expected-error @+1 {{result must be 'tensor<16x32xbf16>', got 'tensor<64x8xbf16>'}}
  %r = te.all_gather %x group @g dim 1 : tensor<16x8xbf16> -> tensor<64x8xbf16>
  return
}

// -----

// The element type is unchanged.
te.process_group @g size 4

func.func @all_gather_element_type(%x: tensor<16x8xf8E4M3FN>) {
  // expected-error @+1 {{result must be 'tensor<64x8xf8E4M3FN>', got 'tensor<64x8xbf16>'}}
  %r = te.all_gather %x group @g dim 0 : tensor<16x8xf8E4M3FN> -> tensor<64x8xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.reduce_scatter
//===----------------------------------------------------------------------===//

// The group symbol must be defined.
te.process_group @g size 4

func.func @reduce_scatter_unknown_group(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{group @dp does not name a te.process_group}}
  %r = te.reduce_scatter %x group @dp dim 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// 'dim' must be a dimension of the input.
te.process_group @g size 4

func.func @reduce_scatter_dim_out_of_range(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{'dim' is 3 but the input has rank 2}}
  %r = te.reduce_scatter %x group @g dim 3 : tensor<64x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// 'dim' must be >= 0.
te.process_group @g size 4

func.func @reduce_scatter_negative_dim(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = te.reduce_scatter %x group @g dim -2 : tensor<64x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// reduce avg needs a floating-point element type.
te.process_group @g size 4

func.func @reduce_scatter_avg_int(%x: tensor<64x8xi8>) {
  // expected-error @+1 {{reduce avg needs a floating-point element type, got 'i8'}}
  %r = te.reduce_scatter %x group @g dim 0 reduce avg : tensor<64x8xi8> -> tensor<16x8xi8>
  return
}

// -----

// The scattered dimension must be divisible by the group size.
te.process_group @g size 4

func.func @reduce_scatter_not_divisible(%x: tensor<64x6xf32>) {
  // expected-error @+1 {{input dimension 1 ('dim', size 6) must be divisible by the group size 4}}
  %r = te.reduce_scatter %x group @g dim 1 : tensor<64x6xf32> -> tensor<64x1xf32>
  return
}

// -----

// The scattered dimension is the input's divided by the group size.
te.process_group @g size 4

func.func @reduce_scatter_result_shape(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{result must be 'tensor<16x8xf32>', got 'tensor<64x2xf32>'}}
  %r = te.reduce_scatter %x group @g dim 0 : tensor<64x8xf32> -> tensor<64x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.all_to_all
//===----------------------------------------------------------------------===//

// The group symbol must be defined.
te.process_group @g size 4

func.func @all_to_all_unknown_group(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{group @cp does not name a te.process_group}}
  %r = te.all_to_all %x group @cp split_dim 2 concat_dim 1
      : tensor<2x64x16xbf16> -> tensor<2x256x4xbf16>
  return
}

// -----

// 'split_dim' must be a dimension of the input.
te.process_group @g size 4

func.func @all_to_all_split_dim_out_of_range(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{'split_dim' is 3 but the input has rank 3}}
  %r = te.all_to_all %x group @g split_dim 3 concat_dim 1
      : tensor<2x64x16xbf16> -> tensor<2x256x4xbf16>
  return
}

// -----

// 'concat_dim' must be a dimension of the input.
te.process_group @g size 4

func.func @all_to_all_concat_dim_out_of_range(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{'concat_dim' is 5 but the input has rank 3}}
  %r = te.all_to_all %x group @g split_dim 2 concat_dim 5
      : tensor<2x64x16xbf16> -> tensor<2x256x4xbf16>
  return
}

// -----

// 'concat_dim' must be >= 0.
te.process_group @g size 4

func.func @all_to_all_negative_concat_dim(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{attribute 'concat_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = te.all_to_all %x group @g split_dim 2 concat_dim -1
      : tensor<2x64x16xbf16> -> tensor<2x256x4xbf16>
  return
}

// -----

// The split dimension must be divisible by the group size.
te.process_group @g size 4

func.func @all_to_all_not_divisible(%x: tensor<2x64x6xbf16>) {
  // expected-error @+1 {{input dimension 2 ('split_dim', size 6) must be divisible by the group size 4}}
  %r = te.all_to_all %x group @g split_dim 2 concat_dim 1
      : tensor<2x64x6xbf16> -> tensor<2x256x1xbf16>
  return
}

// -----

// split_dim shrinks by the group size and concat_dim grows by it.
te.process_group @g size 4

func.func @all_to_all_result_shape(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{result must be 'tensor<2x256x4xbf16>', got 'tensor<2x64x16xbf16>'}}
  %r = te.all_to_all %x group @g split_dim 2 concat_dim 1
      : tensor<2x64x16xbf16> -> tensor<2x64x16xbf16>
  return
}

// -----

// With split_dim == concat_dim the shape is unchanged.
te.process_group @g size 4

func.func @all_to_all_same_dim_result_shape(%x: tensor<2x64x16xbf16>) {
  // expected-error @+1 {{result must be 'tensor<2x64x16xbf16>', got 'tensor<2x64x4xbf16>'}}
  %r = te.all_to_all %x group @g split_dim 2 concat_dim 2
      : tensor<2x64x16xbf16> -> tensor<2x64x4xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.permute
//===----------------------------------------------------------------------===//

// The group symbol must be defined.
te.process_group @g size 4

func.func @permute_unknown_group(%x: tensor<8xbf16>) {
  // expected-error @+1 {{group @ring does not name a te.process_group}}
  %r = te.permute %x group @ring shift 1 : tensor<8xbf16>
  return
}

// -----

// One of 'shift' and 'pairs' is needed.
te.process_group @g size 4

func.func @permute_neither(%x: tensor<8xbf16>) {
  // expected-error @+1 {{needs exactly one of 'shift' and 'pairs'}}
  %r = te.permute %x group @g : tensor<8xbf16>
  return
}

// -----

// 'shift' and 'pairs' exclude each other.
te.process_group @g size 4

func.func @permute_both(%x: tensor<8xbf16>) {
  // expected-error @+1 {{needs exactly one of 'shift' and 'pairs'}}
  %r = te.permute %x group @g shift 1 pairs [0, 1] : tensor<8xbf16>
  return
}

// -----

// 'pairs' may not be empty.
te.process_group @g size 4

func.func @permute_empty_pairs(%x: tensor<8xbf16>) {
  // expected-error @+1 {{'pairs' must hold (source, target) rank pairs, got 0 values}}
  %r = te.permute %x group @g pairs [] : tensor<8xbf16>
  return
}

// -----

// 'pairs' must hold an even number of ranks.
te.process_group @g size 4

func.func @permute_odd_pairs(%x: tensor<8xbf16>) {
  // expected-error @+1 {{'pairs' must hold (source, target) rank pairs, got 3 values}}
  %r = te.permute %x group @g pairs [0, 1, 2] : tensor<8xbf16>
  return
}

// -----

// Ranks must be >= 0.
te.process_group @g size 4

func.func @permute_negative_rank(%x: tensor<8xbf16>) {
  // expected-error @+1 {{ranks in 'pairs' must be >= 0, got (1, -1)}}
  %r = te.permute %x group @g pairs [0, 1, 1, -1] : tensor<8xbf16>
  return
}

// -----

// A rank sends at most once.
te.process_group @g size 4

func.func @permute_duplicate_source(%x: tensor<8xbf16>) {
  // expected-error @+1 {{rank 0 is a source in two pairs}}
  %r = te.permute %x group @g pairs [0, 1, 0, 2] : tensor<8xbf16>
  return
}

// -----

// A rank receives at most once.
te.process_group @g size 4

func.func @permute_duplicate_target(%x: tensor<8xbf16>) {
  // expected-error @+1 {{rank 3 is a target in two pairs}}
  %r = te.permute %x group @g pairs [0, 3, 1, 3] : tensor<8xbf16>
  return
}

// -----

// Ranks must lie inside the group.
te.process_group @g size 4

func.func @permute_rank_outside_group(%x: tensor<8xbf16>) {
  // expected-error @+1 {{rank 4 in 'pairs' is outside group @g of size 4}}
  %r = te.permute %x group @g pairs [0, 1, 4, 2] : tensor<8xbf16>
  return
}

// -----

// The result has the input's type (only the generic form can differ).
te.process_group @g size 4

func.func @permute_result_type(%x: tensor<8xbf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %r = "te.permute"(%x) <{group = @g, shift = 1 : i64}> : (tensor<8xbf16>) -> tensor<4xbf16>
  return
}

// -----

// A gathered dimension that would overflow a tensor dimension is an error,
// not a wrapped-around size.
te.process_group @g size 2
func.func @all_gather_overflow(%x: tensor<4611686018427387904x2xf32>) {
  // expected-error @+1 {{dimension size 4611686018427387904 times the group size 2 does not fit a tensor dimension}}
  %y = te.all_gather %x group @g dim 0 : tensor<4611686018427387904x2xf32> -> tensor<?x2xf32>
  return
}

// -----

te.process_group @g size 2
func.func @all_to_all_overflow(%x: tensor<4x4611686018427387905xf32>) {
  // expected-error @+1 {{does not fit a tensor dimension}}
  %y = te.all_to_all %x group @g split_dim 0 concat_dim 1 : tensor<4x4611686018427387905xf32> -> tensor<2x?xf32>
  return
}

// -----

func.func @group_rank_unknown_group() {
  // expected-error @+1 {{group @nowhere does not name a te.process_group}}
  %r = te.group_rank group @nowhere : tensor<i32>
  return
}

// -----

te.process_group @g size 2
func.func @group_rank_type() {
  // expected-error @+1 {{must be 0D tensor of 32-bit signless integer values}}
  %r = te.group_rank group @g : tensor<2xi32>
  return
}
