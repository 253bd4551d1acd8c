// Negative tests for the FP8 ops (amax, compute_scale, update_delayed_scaling, quantize, dequantize, scaled_matmul).
// RUN: te-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// te.amax
//===----------------------------------------------------------------------===//

// The input must be a high-precision tensor, not FP8.
func.func @amax_fp8_input(%x: tensor<16x16xf8E4M3FN>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<16x16xf8E4M3FN>'}}
  %a = te.amax %x : tensor<16x16xf8E4M3FN> -> tensor<f32>
  return
}

// -----

// The result must be a 0-D tensor.
func.func @amax_result_1d(%x: tensor<16x16xbf16>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %a = te.amax %x : tensor<16x16xbf16> -> tensor<1xf32>
  return
}

// -----

// The result must be f32.
func.func @amax_result_bf16(%x: tensor<16x16xbf16>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %a = te.amax %x : tensor<16x16xbf16> -> tensor<bf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.compute_scale
//===----------------------------------------------------------------------===//

// 'epsilon' must be >= 0.
func.func @compute_scale_negative_epsilon(%amax: tensor<f32>) {
  // expected-error @+1 {{'epsilon' must be finite and >= 0, got -1}}
  %s = te.compute_scale %amax fp8_type f8E4M3FN epsilon -1.0 : tensor<f32> -> tensor<f32>
  return
}

// -----

// 'epsilon' must be finite (0x7F800000 is +inf).
func.func @compute_scale_inf_epsilon(%amax: tensor<f32>) {
  // expected-error @+1 {{'epsilon' must be finite and >= 0, got +Inf}}
  %s = te.compute_scale %amax fp8_type f8E5M2 epsilon 0x7F800000 : tensor<f32> -> tensor<f32>
  return
}

// -----

// The amax must be an f32 tensor.
func.func @compute_scale_amax_f16(%amax: tensor<f16>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<f16>'}}
  %s = te.compute_scale %amax fp8_type f8E4M3FN : tensor<f16> -> tensor<f32>
  return
}

// -----

// 'fp8_type' must name f8E4M3FN or f8E5M2.
func.func @compute_scale_fp8_type_f16(%amax: tensor<f32>) {
  // expected-error @+1 {{attribute 'fp8_type' failed to satisfy constraint: type attribute of f8E4M3FN type or f8E5M2 type}}
  %s = te.compute_scale %amax fp8_type f16 : tensor<f32> -> tensor<f32>
  return
}

// -----

// The scale has the type of the amax.
func.func @compute_scale_result_shape(%amax: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %s = te.compute_scale %amax fp8_type f8E4M3FN : tensor<4xf32> -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.update_delayed_scaling
//===----------------------------------------------------------------------===//

// 'amax_history' needs a leading history dimension.
func.func @history_0d(%h: tensor<f32>, %amax: tensor<f32>, %scale: tensor<f32>) {
  // expected-error @+1 {{'amax_history' must have shape [history_len, ...], got 'tensor<f32>'}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
  return
}

// -----

// 'amax_history' must hold at least one step.
func.func @history_empty(%h: tensor<0x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+1 {{'amax_history' must hold at least one step, got 'tensor<0x3xf32>'}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<0x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<0x3xf32>, tensor<3xf32>
  return
}

// -----

// 'amax' must have the shape of a history step.
func.func @amax_shape(%h: tensor<16x3xf32>, %amax: tensor<4xf32>, %scale: tensor<4xf32>) {
  // expected-error @+1 {{'amax' and 'scale' must both have the shape of 'amax_history' without its leading history dimension, got 'tensor<16x3xf32>', 'tensor<4xf32>' and 'tensor<4xf32>'}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<16x3xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<16x3xf32>, tensor<4xf32>
  return
}

// -----

// 'amax' and 'scale' must have the same type.
func.func @amax_scale_differ(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<?xf32>) {
  // expected-error @+1 {{'amax' and 'scale' must both have the shape of 'amax_history' without its leading history dimension, got 'tensor<16x3xf32>', 'tensor<3xf32>' and 'tensor<?xf32>'}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<16x3xf32>, tensor<3xf32>, tensor<?xf32> -> tensor<16x3xf32>, tensor<?xf32>
  return
}

// -----

// The history must be f32.
func.func @history_bf16(%h: tensor<16x3xbf16>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<16x3xbf16>'}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<16x3xbf16>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xbf16>, tensor<3xf32>
  return
}

// -----

// 'fp8_type' must name f8E4M3FN or f8E5M2.
func.func @delayed_fp8_type_e8m0(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+1 {{attribute 'fp8_type' failed to satisfy constraint: type attribute of f8E4M3FN type or f8E5M2 type}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E8M0FNU
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>, tensor<3xf32>
  return
}

// -----

// The results have the types of the history and the scale.
func.func @delayed_result_types(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<16x3xf32>', 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<15x3xf32>', 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<15x3xf32>, tensor<3xf32>
  return
}

// -----

// Unknown amax_algo keyword: a parse error.
func.func @unknown_amax_algo(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+2 {{expected ::mlir::te::AmaxComputeAlgo to be one of: max, most_recent}}
  // expected-error @+2 {{failed to parse TE_AmaxComputeAlgoAttr parameter 'value' which is to be a `::mlir::te::AmaxComputeAlgo`}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN amax_algo mean
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>, tensor<3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.quantize: operand and result types (ODS)
//===----------------------------------------------------------------------===//

// The input must be a high-precision tensor.
func.func @quantize_fp8_input(%x: tensor<64x64xf8E5M2>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<64x64xf8E5M2>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x64xf8E5M2> -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return
}

// -----

// 'scale' must be a 0-D f32 tensor.
func.func @quantize_scale_1d(%x: tensor<64x64xbf16>, %scale: tensor<1xf32>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x64xbf16>, tensor<1xf32>
      -> tensor<64x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// Results are FP8, f8E8M0FNU or f32 tensors.
func.func @quantize_result_i8(%x: tensor<64x64xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{result #0 must be variadic of ranked tensor of f8E4M3FN type or f8E5M2 type or 32-bit float or f8E8M0FNU type values, but got 'tensor<64x64xi8>'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x64xbf16>, tensor<f32>
      -> tensor<64x64xi8>, tensor<f32>, tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.quantize: configuration
//===----------------------------------------------------------------------===//

// per_tensor with usage both has four results.
func.func @quantize_result_count(%x: tensor<64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{mode per_tensor with usage both produces 4 results ([data], [data_t], scale_inv, amax), got 3}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor usage both
      : tensor<64x32xbf16>, tensor<f32>
      -> tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// mxfp8_1x32 with usage rowwise has two results.
func.func @quantize_result_count_mxfp8(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{mode mxfp8_1x32 with usage rowwise produces 2 results ([data, scale_inv], [columnwise data, columnwise scale_inv]), got 1}}
  %d = te.quantize %x mode mxfp8_1x32 : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>
  return
}

// -----

// per_tensor needs scale(...).
func.func @per_tensor_without_scale(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{mode per_tensor needs scale(%scale), an f32 scalar tensor}}
  %d, %si, %amax = te.quantize %x mode per_tensor
      : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// Only per_tensor takes scale(...).
func.func @mxfp8_with_scale(%x: tensor<64x64xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{mode mxfp8_1x32 computes its own scales; scale(...) is only valid with mode per_tensor}}
  %d, %s = te.quantize %x scale(%scale) mode mxfp8_1x32
      : tensor<64x64xbf16>, tensor<f32>
      -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return
}

// -----

// 'pow2_scales false' is only valid with the block modes.
func.func @pow2_scales_with_mxfp8(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{'pow2_scales false' is only valid with modes block_1x128 and block_128x128}}
  %d, %s = te.quantize %x mode mxfp8_1x32 pow2_scales false
      : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return
}

// -----

// 'epsilon' is only valid with the block modes.
func.func @epsilon_with_per_tensor(%x: tensor<64x64xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{'epsilon' is only valid with modes block_1x128 and block_128x128}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor epsilon 1.0e-6
      : tensor<64x64xbf16>, tensor<f32>
      -> tensor<64x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// A block epsilon must be finite and >= 0.
func.func @block_negative_epsilon(%x: tensor<256x256xbf16>) {
  // expected-error @+1 {{'epsilon' must be finite and >= 0, got -1}}
  %d, %s = te.quantize %x mode block_1x128 epsilon -1.0
      : tensor<256x256xbf16> -> tensor<256x256xf8E4M3FN>, tensor<256x2xf32>
  return
}

// -----

// The quantized data must be FP8 (f32 passes the result type constraint).
func.func @data_not_fp8(%x: tensor<64x64xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{quantized data must be f8E4M3FN or f8E5M2, got 'f32'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x64xbf16>, tensor<f32> -> tensor<64x64xf32>, tensor<f32>, tensor<f32>
  return
}

// -----

// E8M0 is a scale format, not a data format.
func.func @data_e8m0(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{quantized data must be f8E4M3FN or f8E5M2, got 'f8E8M0FNU'}}
  %d, %s = te.quantize %x mode mxfp8_1x32 usage columnwise
      : tensor<64x64xbf16> -> tensor<64x64xf8E8M0FNU>, tensor<2x64xf8E8M0FNU>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.quantize: shapes
//===----------------------------------------------------------------------===//

// MXFP8 row-wise scaling needs rank >= 1.
func.func @mxfp8_rowwise_0d(%x: tensor<bf16>) {
  // expected-error @+1 {{mode mxfp8_1x32 row-wise needs rank >= 1, got 'tensor<f8E4M3FN>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<bf16> -> tensor<f8E4M3FN>, tensor<f8E8M0FNU>
  return
}

// -----

// MXFP8 column-wise scaling needs rank >= 2.
func.func @mxfp8_columnwise_1d(%x: tensor<64xbf16>) {
  // expected-error @+1 {{mode mxfp8_1x32 column-wise needs rank >= 2, got 'tensor<64xf8E4M3FN>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32 usage columnwise
      : tensor<64xbf16> -> tensor<64xf8E4M3FN>, tensor<2xf8E8M0FNU>
  return
}

// -----

// MXFP8 row-wise blocks need the last dimension to be a multiple of 32.
func.func @mxfp8_rowwise_not_multiple(%x: tensor<64x48xbf16>) {
  // expected-error @+1 {{mode mxfp8_1x32 needs dimension 1 (48) to be a multiple of 32 for row-wise scaling, got 'tensor<64x48xf8E4M3FN>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x48xbf16> -> tensor<64x48xf8E4M3FN>, tensor<64x1xf8E8M0FNU>
  return
}

// -----

// MXFP8 column-wise blocks need the second-to-last dimension to be a
// multiple of 32.
func.func @mxfp8_columnwise_not_multiple(%x: tensor<2x40x64xbf16>) {
  // expected-error @+1 {{mode mxfp8_1x32 needs dimension 1 (40) to be a multiple of 32 for column-wise scaling, got 'tensor<2x40x64xf8E4M3FN>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32 usage columnwise
      : tensor<2x40x64xbf16> -> tensor<2x40x64xf8E4M3FN>, tensor<2x1x64xf8E8M0FNU>
  return
}

// -----

// The block modes need a 2-D input.
func.func @block_3d(%x: tensor<2x128x128xbf16>) {
  // expected-error @+1 {{mode block_128x128 needs a 2-D tensor, got 'tensor<2x128x128xf8E4M3FN>'}}
  %d, %s = te.quantize %x mode block_128x128
      : tensor<2x128x128xbf16> -> tensor<2x128x128xf8E4M3FN>, tensor<2x1x1xf32>
  return
}

// -----

// A transposed column-wise copy needs a 2-D input.
func.func @per_tensor_columnwise_3d(%x: tensor<2x64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{the column-wise copy of mode per_tensor is stored transposed and needs a 2-D input; got 'tensor<2x64x32xbf16>' (reshape to [rows, cols] first)}}
  %dt, %si, %amax = te.quantize %x scale(%scale) mode per_tensor usage columnwise
      : tensor<2x64x32xbf16>, tensor<f32>
      -> tensor<2x32x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// The data keeps the input's shape.
func.func @data_shape(%x: tensor<64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{result 'data' must be 'tensor<64x32xf8E4M3FN>', got 'tensor<32x64xf8E4M3FN>'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x32xbf16>, tensor<f32>
      -> tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// per_tensor scale_inv is an f32 scalar tensor.
func.func @per_tensor_scale_inv(%x: tensor<64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{result 'scale_inv' must be 'tensor<f32>', got 'tensor<1xf32>'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x32xbf16>, tensor<f32>
      -> tensor<64x32xf8E4M3FN>, tensor<1xf32>, tensor<f32>
  return
}

// -----

// MXFP8 row-wise scale_inv has one f8E8M0FNU per 32 elements of a row.
func.func @mxfp8_scale_inv(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{result 'scale_inv' must be 'tensor<64x2xf8E8M0FNU>', got 'tensor<2x64xf8E8M0FNU>'}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>, tensor<2x64xf8E8M0FNU>
  return
}

// -----

// block_1x128 scale_inv rounds partial blocks up: [rows, ceil(cols / 128)].
func.func @block_1x128_scale_inv(%x: tensor<256x200xbf16>) {
  // expected-error @+1 {{result 'scale_inv' must be 'tensor<256x2xf32>', got 'tensor<256x1xf32>'}}
  %d, %s = te.quantize %x mode block_1x128
      : tensor<256x200xbf16> -> tensor<256x200xf8E4M3FN>, tensor<256x1xf32>
  return
}

// -----

// The per_tensor column-wise copy is the transpose.
func.func @per_tensor_columnwise_data(%x: tensor<64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{result 'columnwise data' must be 'tensor<32x64xf8E4M3FN>', got 'tensor<64x32xf8E4M3FN>'}}
  %d, %dt, %si, %amax = te.quantize %x scale(%scale) mode per_tensor usage both
      : tensor<64x32xbf16>, tensor<f32>
      -> tensor<64x32xf8E4M3FN>, tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<f32>
  return
}

// -----

// MXFP8 column-wise scale_inv runs along the second-to-last dimension.
func.func @mxfp8_columnwise_scale_inv(%x: tensor<64x64xbf16>) {
  // expected-error @+1 {{result 'columnwise scale_inv' must be 'tensor<2x64xf8E8M0FNU>', got 'tensor<64x2xf8E8M0FNU>'}}
  %d, %s, %dc, %sc = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<64x64xbf16>
      -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>,
         tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return
}

// -----

// The per_tensor amax is an f32 scalar tensor.
func.func @per_tensor_amax(%x: tensor<64x32xbf16>, %scale: tensor<f32>) {
  // expected-error @+1 {{result 'amax' must be 'tensor<f32>', got 'tensor<1xf32>'}}
  %d, %si, %amax = te.quantize %x scale(%scale) mode per_tensor
      : tensor<64x32xbf16>, tensor<f32>
      -> tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<1xf32>
  return
}

// -----

// Unknown scaling mode keyword: a parse error.
func.func @unknown_mode(%x: tensor<64x64xbf16>) {
  // expected-error @+2 {{expected ::mlir::te::ScalingMode to be one of: per_tensor, mxfp8_1x32, block_1x128, block_128x128}}
  // expected-error @+2 {{failed to parse TE_ScalingModeAttr parameter 'value' which is to be a `::mlir::te::ScalingMode`}}
  %d, %s = te.quantize %x mode block_1x32
      : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>, tensor<64x1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.dequantize
//===----------------------------------------------------------------------===//

// The data must be FP8.
func.func @dequantize_bf16_data(%d: tensor<64x64xbf16>, %si: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of f8E4M3FN type or f8E5M2 type values, but got 'tensor<64x64xbf16>'}}
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<64x64xbf16>, tensor<f32> -> tensor<64x64xbf16>
  return
}

// -----

// 'scale_inv' must be f32 or f8E8M0FNU.
func.func @dequantize_scale_inv_f16(%d: tensor<64x64xf8E4M3FN>, %si: tensor<f16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float or f8E8M0FNU type values, but got 'tensor<f16>'}}
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<64x64xf8E4M3FN>, tensor<f16> -> tensor<64x64xbf16>
  return
}

// -----

// The result must be a high-precision tensor.
func.func @dequantize_fp8_result(%d: tensor<64x64xf8E4M3FN>, %si: tensor<f32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<64x64xf8E5M2>'}}
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<64x64xf8E4M3FN>, tensor<f32> -> tensor<64x64xf8E5M2>
  return
}

// -----

// 'columnwise' is only valid with mxfp8_1x32.
func.func @dequantize_columnwise_block(%d: tensor<256x256xf8E4M3FN>, %si: tensor<256x2xf32>) {
  // expected-error @+1 {{'columnwise' is only valid with mode mxfp8_1x32 (other modes store column-wise copies transposed)}}
  %x = te.dequantize %d, %si mode block_1x128 columnwise
      : tensor<256x256xf8E4M3FN>, tensor<256x2xf32> -> tensor<256x256xbf16>
  return
}

// -----

// The block modes need 2-D data.
func.func @dequantize_block_1d(%d: tensor<256xf8E4M3FN>, %si: tensor<2xf32>) {
  // expected-error @+1 {{mode block_1x128 needs a 2-D tensor, got 'tensor<256xf8E4M3FN>'}}
  %x = te.dequantize %d, %si mode block_1x128
      : tensor<256xf8E4M3FN>, tensor<2xf32> -> tensor<256xbf16>
  return
}

// -----

// MXFP8 column-wise data needs its second-to-last dimension to be a
// multiple of 32.
func.func @dequantize_mxfp8_not_multiple(%d: tensor<48x64xf8E4M3FN>, %si: tensor<1x64xf8E8M0FNU>) {
  // expected-error @+1 {{mode mxfp8_1x32 needs dimension 0 (48) to be a multiple of 32 for column-wise scaling, got 'tensor<48x64xf8E4M3FN>'}}
  %x = te.dequantize %d, %si mode mxfp8_1x32 columnwise
      : tensor<48x64xf8E4M3FN>, tensor<1x64xf8E8M0FNU> -> tensor<48x64xbf16>
  return
}

// -----

// 'scale_inv' must have the shape the mode gives the data.
func.func @dequantize_scale_inv_shape(%d: tensor<256x256xf8E4M3FN>, %si: tensor<256x2xf32>) {
  // expected-error @+1 {{'scale_inv' must be 'tensor<2x2xf32>' for mode block_128x128 and data 'tensor<256x256xf8E4M3FN>', got 'tensor<256x2xf32>'}}
  %x = te.dequantize %d, %si mode block_128x128
      : tensor<256x256xf8E4M3FN>, tensor<256x2xf32> -> tensor<256x256xbf16>
  return
}

// -----

// 'scale_inv' must have the mode's element type (E8M0 for mxfp8_1x32).
func.func @dequantize_scale_inv_type(%d: tensor<64x64xf8E4M3FN>, %si: tensor<64x2xf32>) {
  // expected-error @+1 {{'scale_inv' must be 'tensor<64x2xf8E8M0FNU>' for mode mxfp8_1x32 and data 'tensor<64x64xf8E4M3FN>', got 'tensor<64x2xf32>'}}
  %x = te.dequantize %d, %si mode mxfp8_1x32
      : tensor<64x64xf8E4M3FN>, tensor<64x2xf32> -> tensor<64x64xbf16>
  return
}

// -----

// The result has the data's shape.
func.func @dequantize_result_shape(%d: tensor<64x32xf8E4M3FN>, %si: tensor<f32>) {
  // expected-error @+1 {{the result must have the data's shape 'tensor<64x32xf8E4M3FN>', got 'tensor<32x64xbf16>'}}
  %x = te.dequantize %d, %si mode per_tensor
      : tensor<64x32xf8E4M3FN>, tensor<f32> -> tensor<32x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// te.scaled_matmul
//===----------------------------------------------------------------------===//

// 'a' and 'b' are both FP8 or both high precision.
func.func @matmul_bf16_a(%a: tensor<16x32xbf16>, %b: tensor<32x8xf8E4M3FN>,
                         %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{'a' and 'b' must both be FP8 or both f32, f16 or bf16, got 'bf16' and 'f8E4M3FN'; quantize the other operand or dequantize this one}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xbf16>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// per_tensor scale inverses are 0-D f32 tensors.
func.func @matmul_scale_1d(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                           %sa: tensor<1xf32>, %sb: tensor<f32>) {
  // expected-error @+1 {{'a_scale_inv' of a per_tensor operand stored as 'tensor<16x32xf8E4M3FN>' must be 'tensor<f32>', got 'tensor<1xf32>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<1xf32>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// 'bias' must be a 1-D tensor.
func.func @matmul_bias_2d(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                          %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<1x8xbf16>) {
  // expected-error @+1 {{operand #4 must be 1D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x8xbf16>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<1x8xbf16> -> tensor<16x8xbf16>
  return
}

// -----

// The output element type must be f32, f16, bf16 or FP8.
func.func @matmul_i32_output(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                             %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type or f8E5M2 type values, but got 'tensor<16x8xi32>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x8xi32>
  return
}

// -----

// 'a' and 'b' must be 2-D.
func.func @matmul_3d(%a: tensor<2x16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                     %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{'a' and 'b' must be 2-D, got 'tensor<2x16x32xf8E4M3FN>' and 'tensor<32x8xf8E4M3FN>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<2x16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x8xbf16>
  return
}

// -----

// The contraction sizes of op(a) and op(b) must agree.
func.func @matmul_contraction(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                              %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{contraction sizes differ: op(a) is 16x32 and op(b) is 8x32}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x32xbf16>
  return
}

// -----

// The result has shape [M, N] of op(a) x op(b).
func.func @matmul_result_shape(%a: tensor<32x16xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                               %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{result 'd' must have shape [16, 8], got 'tensor<32x8xbf16>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_a
      : tensor<32x16xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<32x8xbf16>
  return
}

// -----

// 'bias' has one element per output column.
func.func @matmul_bias_shape(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                             %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<16xbf16>) {
  // expected-error @+1 {{'bias' must have shape [8], got 'tensor<16xbf16>'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) gelu
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<16xbf16> -> tensor<16x8xbf16>
  return
}

// -----

// An FP8 output needs out_scale(...).
func.func @matmul_fp8_without_out_scale(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                                        %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{an FP8 output ('f8E4M3FN') needs out_scale(%scale) and an amax result}}
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x8xf8E4M3FN>, tensor<f32>
  return
}

// -----

// An FP8 output needs an amax result.
func.func @matmul_fp8_without_amax(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                                   %sa: tensor<f32>, %sb: tensor<f32>, %so: tensor<f32>) {
  // expected-error @+1 {{expects 2 results (D, amax), got 1; amax comes with an FP8 output, pre_gelu and bias_grad with their keywords}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%so)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<f32> -> tensor<16x8xf8E5M2>
  return
}

// -----

// out_scale(...) is only valid with an FP8 output.
func.func @matmul_bf16_with_out_scale(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                                      %sa: tensor<f32>, %sb: tensor<f32>, %so: tensor<f32>) {
  // expected-error @+1 {{out_scale(...) and the amax result are only valid with an FP8 output, got 'bf16'}}
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%so)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<f32> -> tensor<16x8xbf16>
  return
}

// -----

// The amax result is only valid with an FP8 output.
func.func @matmul_f32_with_amax(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                                %sa: tensor<f32>, %sb: tensor<f32>) {
  // expected-error @+1 {{expects 1 results (D), got 2; amax comes with an FP8 output}}
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>
      -> tensor<16x8xf32>, tensor<f32>
  return
}

// -----

// The amax result must be a 0-D f32 tensor.
func.func @matmul_amax_1d(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E4M3FN>,
                          %sa: tensor<f32>, %sb: tensor<f32>, %so: tensor<f32>) {
  // expected-error @+1 {{result 'amax' must have shape [], got 'tensor<1xf32>'}}
  %d, %amax = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%so)
      : tensor<16x32xf8E4M3FN>, tensor<32x8xf8E4M3FN>, tensor<f32>, tensor<f32>,
        tensor<f32> -> tensor<16x8xf8E4M3FN>, tensor<1xf32>
  return
}

// -----

// A negative margin would scale up, not down; it is rejected, not read as a
// huge unsigned number.
func.func @negative_margin(%h: tensor<16x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) {
  // expected-error @+1 {{'margin' must be >= 0, got -1}}
  %h2, %s2 = te.update_delayed_scaling %h, %amax, %scale fp8_type f8E4M3FN margin -1
      : tensor<16x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<16x3xf32>, tensor<3xf32>
  return
}
