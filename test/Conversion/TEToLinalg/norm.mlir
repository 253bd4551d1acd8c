// te.norm on the host: rows of whole vectors of 16 go through one row
// kernel (statistics, then one pass that writes every output); other
// widths through linalg.generic row sums and an elementwise pass.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg | FileCheck %s

// Delayed scaling's fused cast: per row, the sum of squares with four
// accumulators (H = 64), then one loop whose z values feed the FP8 cast
// and the amax; no [N, H] f32 tensor is made.
// CHECK-LABEL: func @rmsnorm_fused_cast
// CHECK-NOT: tensor<4x64xf32>
// CHECK: scf.forall (%[[ROW:.*]]) in (4) shared_outs({{.*}}) -> (tensor<4x64xf8E4M3FN>, tensor<4x1xi32>, tensor<4x1xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <add>
// CHECK: math.sqrt
// CHECK: scf.for %{{.*}} = %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xi32>, tensor<64xf8E4M3FN>)
// CHECK: vector.transfer_read %{{.*}}[%[[ROW]], %{{.*}}]{{.*}} : tensor<4x64xbf16>, vector<16xbf16>
// CHECK: arith.maxui %{{.*}} : vector<16xi32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf8E4M3FN>, tensor<64xf8E4M3FN>
// CHECK: vector.reduction <maxui>
// CHECK-NOT: te.quantize
// CHECK-NOT: tensor<4x64xf32>
// CHECK: return
func.func @rmsnorm_fused_cast(%x: tensor<4x64xbf16>, %g: tensor<64xbf16>,
                              %s: tensor<f32>)
    -> (tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>) {
  %d, %si, %a, %rs = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05
      quantize per_tensor
      : tensor<4x64xbf16>, tensor<64xbf16>, tensor<f32>
      -> tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>
  return %d, %si, %a, %rs
      : tensor<4x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<4xf32>
}

// -----

// LayerNorm with z and its amax (current scaling), H = 32: the mean and
// the squares each with two accumulators, then z and the amax in one
// loop.
// CHECK-LABEL: func @layernorm_z_and_amax
// CHECK: scf.forall {{.*}} -> (tensor<6x32xbf16>, tensor<6x1xi32>, tensor<6x1xf32>, tensor<6x1xf32>)
// CHECK: scf.for {{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK: arith.divf
// CHECK: scf.for {{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xi32>, tensor<32xbf16>)
// CHECK: arith.subf %{{.*}} : vector<16xf32>
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: arith.select %{{.*}} : vector<16xi1>, vector<16xbf16>
// CHECK: vector.transfer_write %{{.*}} : vector<16xbf16>, tensor<32xbf16>
func.func @layernorm_z_and_amax(%x: tensor<2x3x32xbf16>, %g: tensor<32xbf16>,
                                %b: tensor<32xbf16>)
    -> (tensor<2x3x32xbf16>, tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %z, %a, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05 amax
      : tensor<2x3x32xbf16>, tensor<32xbf16>, tensor<32xbf16>
      -> tensor<2x3x32xbf16>, tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>
  return %z, %a, %mu, %rs
      : tensor<2x3x32xbf16>, tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// MXFP8: the row kernel writes z, which te.quantize (lowered here too)
// then casts.
// CHECK-LABEL: func @rmsnorm_mxfp8
// CHECK: %[[Z:.*]]:2 = scf.forall {{.*}} -> (tensor<2x32xbf16>, tensor<2x1xf32>)
// CHECK: scf.forall {{.*}} -> (tensor<2x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>)
// CHECK: vector.transfer_read %[[Z]]#0
func.func @rmsnorm_mxfp8(%x: tensor<2x32xbf16>, %g: tensor<32xbf16>)
    -> (tensor<2x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>, tensor<2xf32>) {
  %d, %s, %rs = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize mxfp8_1x32
      : tensor<2x32xbf16>, tensor<32xbf16>
      -> tensor<2x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>, tensor<2xf32>
  return %d, %s, %rs : tensor<2x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>, tensor<2xf32>
}

// -----

// Rows not of whole vectors (H = 40): row sums and an elementwise pass.
// CHECK-LABEL: func @layernorm_odd_width
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<3x40xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
func.func @layernorm_odd_width(%x: tensor<3x40xf32>, %g: tensor<40xf32>)
    -> (tensor<3x40xf32>, tensor<3xf32>, tensor<3xf32>) {
  %z, %mu, %rs = te.norm %x, %g kind layernorm epsilon 1.0e-05
      : tensor<3x40xf32>, tensor<40xf32>
      -> tensor<3x40xf32>, tensor<3xf32>, tensor<3xf32>
  return %z, %mu, %rs : tensor<3x40xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// The backward over blocks of rows: 400 rows in blocks of 5 (80 blocks),
// per row one loop for the two sums (two accumulators each, H being 32)
// and one that writes dx and adds into the block's partial column sums;
// dgamma and dbeta are the column sums of the [80, 32] partials.
// CHECK-LABEL: func @layernorm_backward_blocks
// CHECK: scf.forall (%[[BLOCK:.*]]) in (80) shared_outs({{.*}}) -> (tensor<400x32xbf16>, tensor<80x32xf32>, tensor<80x32xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [5, 32] [1, 1] : tensor<400x32xbf16> to tensor<5x32xbf16>
// CHECK: linalg.fill {{.*}} -> tensor<32xf32>
// CHECK: linalg.fill {{.*}} -> tensor<32xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<5x32xbf16>, tensor<32xf32>, tensor<32xf32>)
// CHECK: scf.for {{.*}} step %c32{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<5x32xbf16>, tensor<32xf32>, tensor<32xf32>)
// CHECK: vector.transfer_write {{.*}} : vector<16xbf16>, tensor<5x32xbf16>
// CHECK-COUNT-2: vector.transfer_write {{.*}} : vector<16xf32>, tensor<32xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<80x32xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<80x32xf32>)
func.func @layernorm_backward_blocks(%dz: tensor<400x32xbf16>,
    %x: tensor<400x32xbf16>, %rs: tensor<400xf32>, %g: tensor<32xbf16>,
    %mu: tensor<400xf32>)
    -> (tensor<400x32xbf16>, tensor<32xbf16>, tensor<32xbf16>) {
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm
      : tensor<400x32xbf16>, tensor<400x32xbf16>, tensor<400xf32>,
        tensor<32xbf16>, tensor<400xf32>
      -> tensor<400x32xbf16>, tensor<32xbf16>, tensor<32xbf16>
  return %dx, %dg, %db : tensor<400x32xbf16>, tensor<32xbf16>, tensor<32xbf16>
}
