// Collectives become calls, on buffers, of declarations that name the
// runtime's collective and its parameters (te/Runtime/Collective.h).
// RUN: te-opt %s -split-input-file --convert-te-to-linalg | FileCheck %s

te.process_group @dp size 4
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xbf16>,
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xbf16> to memref<4x8xbf16>
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 256 : i64} : memref<4x8xbf16>
// CHECK: call @[[SUM:te_collective_[0-9a-f]+]](%[[IN]], %[[OUT]])
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: call @[[MAX:te_collective_[0-9a-f]+]](
// CHECK: return %[[R]]
// CHECK-DAG: func.func private @[[SUM]](memref<4x8xbf16>, memref<4x8xbf16>) attributes {te.library_function = "collective.all_reduce", te.library_parameters = "group=dp,size=4,ranks=blocks,dtype=bf16,shape=4x8,reduce=sum"}
// CHECK-DAG: func.func private @[[MAX]](memref<f32>, memref<f32>) attributes {te.library_function = "collective.all_reduce", te.library_parameters = "group=dp,size=4,ranks=blocks,dtype=f32,shape=scalar,reduce=max"}
func.func @all_reduce(%x: tensor<4x8xbf16>, %amax: tensor<f32>) -> (tensor<4x8xbf16>, tensor<f32>) {
  %r = te.all_reduce %x group @dp : tensor<4x8xbf16>
  %m = te.all_reduce %amax group @dp reduce max : tensor<f32>
  return %r, %m : tensor<4x8xbf16>, tensor<f32>
}

// -----

te.process_group @tp size 2
// CHECK-LABEL: func.func @others
// CHECK-DAG: te.library_function = "collective.all_gather", te.library_parameters = "group=tp,size=2,ranks=blocks,dtype=f8E4M3FN,shape=4x8,dim=1"
// CHECK-DAG: te.library_function = "collective.reduce_scatter", te.library_parameters = "group=tp,size=2,ranks=blocks,dtype=f32,shape=4x8,dim=0,reduce=avg"
// CHECK-DAG: te.library_function = "collective.all_to_all", te.library_parameters = "group=tp,size=2,ranks=blocks,dtype=f32,shape=4x8,split_dim=1,concat_dim=0"
// CHECK-DAG: te.library_function = "collective.permute", te.library_parameters = "group=tp,size=2,ranks=blocks,dtype=f32,shape=4x8,route=shift_-1"
// CHECK-DAG: te.library_function = "collective.permute", te.library_parameters = "group=tp,size=2,ranks=blocks,dtype=f32,shape=4x8,route=pairs_1_0"
func.func @others(%q: tensor<4x8xf8E4M3FN>, %x: tensor<4x8xf32>)
    -> (tensor<4x16xf8E4M3FN>, tensor<2x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = te.all_gather %q group @tp dim 1 : tensor<4x8xf8E4M3FN> -> tensor<4x16xf8E4M3FN>
  %s = te.reduce_scatter %x group @tp dim 0 reduce avg : tensor<4x8xf32> -> tensor<2x8xf32>
  %a = te.all_to_all %x group @tp split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %p = te.permute %x group @tp shift -1 : tensor<4x8xf32>
  %l = te.permute %x group @tp pairs [1, 0] : tensor<4x8xf32>
  return %g, %s, %a, %p, %l
      : tensor<4x16xf8E4M3FN>, tensor<2x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A rank's place in its group: a call with the group's parameters alone,
// writing the i32.
te.process_group @dp size 2 ranks [0, 2, 1, 3]
// CHECK-LABEL: func.func @group_rank
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 256 : i64} : memref<i32>
// CHECK: call @[[RANK:te_collective_[0-9a-f]+]](%[[OUT]])
// CHECK-DAG: func.func private @[[RANK]](memref<i32>) attributes {te.library_function = "collective.group_rank", te.library_parameters = "group=dp,size=2,ranks=0_2_1_3"}
func.func @group_rank() -> tensor<i32> {
  %r = te.group_rank group @dp : tensor<i32>
  return %r : tensor<i32>
}
