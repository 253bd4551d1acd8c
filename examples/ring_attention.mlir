// Context parallelism as a ring (TE's "p2p" context parallelism), causal,
// forward and backward: @ring_attention and @ring_attention_backward on
// groups of 2 ranks (mpirun -np 2 or 4), @ring_attention_cp4 and
// @ring_attention_cp4_backward on a group of 4 (mpirun -np 4).
//
// The sequence is cut into 2 x cp chunks and rank r holds chunks r and
// 2 cp - 1 - r (TE's load-balanced order: every rank gets the same share
// of the causal triangle). Step 0 attends to the rank's own K/V, causally.
// Step i attends to the K/V of rank r - i, passed round the ring with
// te.permute: if i <= r, those K/V came before all of this rank's queries
// in their first chunk and after all of them in their second, so all the
// queries attend to the first chunk, unmasked; else only the second query
// chunk sees any of them, and it sees all of them (@ring_step). The
// partial outputs are merged by their log-sum-exps (@merge):
//   lse = log(exp(lse0) + exp(lse1)),  o = o0 exp(lse0 - lse) + o1 exp(lse1 - lse).
//
// The backward runs the same blocks with the forward's merged output and
// log-sum-exp, which makes each block's gradients the exact share of the
// whole attention's (@ring_step_backward); the K/V gradients of step i go
// back to their owner, rank r - i. Sums are kept in f32 and rounded to
// bf16 once.
#map = affine_map<(b, s, h, d) -> (b, s, h, d)>
#map_l = affine_map<(b, s, h, d) -> (b, h, s, 0)>
te.process_group @cp size 2
te.process_group @cp4 size 4

func.func @ring_attention(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
  %rank_tensor = te.group_rank group @cp : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %o0, %lse0 = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc0 = call @widen(%o0) : (tensor<1x64x4x32xbf16>) -> tensor<1x64x4x32xf32>
  // Step 1: the K/V of rank r - 1.
  %k1 = te.permute %k group @cp shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp shift 1 : tensor<1x64x4x32xbf16>
  %step1 = arith.constant 1 : i32
  %earlier1 = arith.cmpi sle, %step1, %rank : i32
  %o1, %lse1 = call @ring_step(%q, %k1, %v1, %earlier1)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc1, %lse_acc1 = call @merge(%acc0, %lse0, %o1, %lse1)
      : (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>)
  %o = call @narrow(%acc1) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  return %o, %lse_acc1 : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
}

// %o and %lse are the forward's results, %do the output's gradient; all
// are this rank's chunks.
func.func @ring_attention_backward(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>, %o: tensor<1x64x4x32xbf16>, %do: tensor<1x64x4x32xbf16>, %lse: tensor<1x4x64x1xf32>)
    -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
  %rank_tensor = te.group_rank group @cp : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %dq0, %dk0, %dv0 = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x64x4x32xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xf32>
  %dq_acc0, %dk_acc0, %dv_acc0 = call @accumulate(%zeros, %zeros, %zeros, %dq0, %dk0, %dv0)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  // Step 1: the K/V of rank r - 1, the blocks of the forward; their
  // gradients go back to rank r - 1.
  %k1 = te.permute %k group @cp shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp shift 1 : tensor<1x64x4x32xbf16>
  %step1 = arith.constant 1 : i32
  %earlier1 = arith.cmpi sle, %step1, %rank : i32
  %dq1, %dk1, %dv1 = call @ring_step_backward(%q, %k1, %v1, %o, %do, %lse, %earlier1)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %dk1_home = te.permute %dk1 group @cp shift -1 : tensor<1x64x4x32xbf16>
  %dv1_home = te.permute %dv1 group @cp shift -1 : tensor<1x64x4x32xbf16>
  %dq_acc1, %dk_acc1, %dv_acc1 = call @accumulate(%dq_acc0, %dk_acc0, %dv_acc0, %dq1, %dk1_home, %dv1_home)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  %dq = call @narrow(%dq_acc1) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  %dk = call @narrow(%dk_acc1) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  %dv = call @narrow(%dv_acc1) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  return %dq, %dk, %dv : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
}

func.func @ring_attention_cp4(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
  %rank_tensor = te.group_rank group @cp4 : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %o0, %lse0 = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc0 = call @widen(%o0) : (tensor<1x64x4x32xbf16>) -> tensor<1x64x4x32xf32>
  // Step 1: the K/V of rank r - 1.
  %k1 = te.permute %k group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step1 = arith.constant 1 : i32
  %earlier1 = arith.cmpi sle, %step1, %rank : i32
  %o1, %lse1 = call @ring_step(%q, %k1, %v1, %earlier1)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc1, %lse_acc1 = call @merge(%acc0, %lse0, %o1, %lse1)
      : (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>)
  // Step 2: the K/V of rank r - 2.
  %k2 = te.permute %k1 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v2 = te.permute %v1 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step2 = arith.constant 2 : i32
  %earlier2 = arith.cmpi sle, %step2, %rank : i32
  %o2, %lse2 = call @ring_step(%q, %k2, %v2, %earlier2)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc2, %lse_acc2 = call @merge(%acc1, %lse_acc1, %o2, %lse2)
      : (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>)
  // Step 3: the K/V of rank r - 3.
  %k3 = te.permute %k2 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v3 = te.permute %v2 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step3 = arith.constant 3 : i32
  %earlier3 = arith.cmpi sle, %step3, %rank : i32
  %o3, %lse3 = call @ring_step(%q, %k3, %v3, %earlier3)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %acc3, %lse_acc3 = call @merge(%acc2, %lse_acc2, %o3, %lse3)
      : (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>)
  %o = call @narrow(%acc3) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  return %o, %lse_acc3 : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
}

// %o and %lse are the forward's results, %do the output's gradient; all
// are this rank's chunks.
func.func @ring_attention_cp4_backward(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>, %o: tensor<1x64x4x32xbf16>, %do: tensor<1x64x4x32xbf16>, %lse: tensor<1x4x64x1xf32>)
    -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
  %rank_tensor = te.group_rank group @cp4 : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %dq0, %dk0, %dv0 = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x64x4x32xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xf32>
  %dq_acc0, %dk_acc0, %dv_acc0 = call @accumulate(%zeros, %zeros, %zeros, %dq0, %dk0, %dv0)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  // Step 1: the K/V of rank r - 1, the blocks of the forward; their
  // gradients go back to rank r - 1.
  %k1 = te.permute %k group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step1 = arith.constant 1 : i32
  %earlier1 = arith.cmpi sle, %step1, %rank : i32
  %dq1, %dk1, %dv1 = call @ring_step_backward(%q, %k1, %v1, %o, %do, %lse, %earlier1)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %dk1_home = te.permute %dk1 group @cp4 shift -1 : tensor<1x64x4x32xbf16>
  %dv1_home = te.permute %dv1 group @cp4 shift -1 : tensor<1x64x4x32xbf16>
  %dq_acc1, %dk_acc1, %dv_acc1 = call @accumulate(%dq_acc0, %dk_acc0, %dv_acc0, %dq1, %dk1_home, %dv1_home)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  // Step 2: the K/V of rank r - 2, the blocks of the forward; their
  // gradients go back to rank r - 2.
  %k2 = te.permute %k1 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v2 = te.permute %v1 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step2 = arith.constant 2 : i32
  %earlier2 = arith.cmpi sle, %step2, %rank : i32
  %dq2, %dk2, %dv2 = call @ring_step_backward(%q, %k2, %v2, %o, %do, %lse, %earlier2)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %dk2_home = te.permute %dk2 group @cp4 shift -2 : tensor<1x64x4x32xbf16>
  %dv2_home = te.permute %dv2 group @cp4 shift -2 : tensor<1x64x4x32xbf16>
  %dq_acc2, %dk_acc2, %dv_acc2 = call @accumulate(%dq_acc1, %dk_acc1, %dv_acc1, %dq2, %dk2_home, %dv2_home)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  // Step 3: the K/V of rank r - 3, the blocks of the forward; their
  // gradients go back to rank r - 3.
  %k3 = te.permute %k2 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %v3 = te.permute %v2 group @cp4 shift 1 : tensor<1x64x4x32xbf16>
  %step3 = arith.constant 3 : i32
  %earlier3 = arith.cmpi sle, %step3, %rank : i32
  %dq3, %dk3, %dv3 = call @ring_step_backward(%q, %k3, %v3, %o, %do, %lse, %earlier3)
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>, i1) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  %dk3_home = te.permute %dk3 group @cp4 shift -3 : tensor<1x64x4x32xbf16>
  %dv3_home = te.permute %dv3 group @cp4 shift -3 : tensor<1x64x4x32xbf16>
  %dq_acc3, %dk_acc3, %dv_acc3 = call @accumulate(%dq_acc2, %dk_acc2, %dv_acc2, %dq3, %dk3_home, %dv3_home)
      : (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  %dq = call @narrow(%dq_acc3) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  %dk = call @narrow(%dk_acc3) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  %dv = call @narrow(%dv_acc3) : (tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16>
  return %dq, %dk, %dv : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
}

// Step i > 0 on rank r, %earlier = (i <= r): the output and log-sum-exp of
// this rank's queries against the K/V of rank r - i, with an output of 0
// and a log-sum-exp of -inf for the rows that see none of them.
func.func private @ring_step(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>, %earlier: i1) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
  %o, %lse = scf.if %earlier -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
    // All queries, the first K/V chunk.
    %kh = tensor.extract_slice %k[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %vh = tensor.extract_slice %v[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %o, %lse = te.attention %q, %kh, %vh layout bshd {return_lse}
        : (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>) -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
    scf.yield %o, %lse : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
  } else {
    // The second query chunk, all the K/V.
    %qh = tensor.extract_slice %q[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %o, %lse = te.attention %qh, %k, %v layout bshd {return_lse}
        : (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) -> (tensor<1x32x4x32xbf16>, tensor<1x4x32x1xf32>)
    %zero = arith.constant 0.0 : bf16
    %minus_inf = arith.constant 0xFF800000 : f32
    %o_full = tensor.pad %o low[0, 32, 0, 0] high[0, 0, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    %lse_full = tensor.pad %lse low[0, 0, 32, 0] high[0, 0, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %minus_inf : f32
    } : tensor<1x4x32x1xf32> to tensor<1x4x64x1xf32>
    scf.yield %o_full, %lse_full : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
  }
  return %o, %lse : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
}

// The gradients of @ring_step's block, given the merged output %o, its
// gradient %do and the merged log-sum-exp %lse; zeros where the block has
// no part.
func.func private @ring_step_backward(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>, %v: tensor<1x64x4x32xbf16>, %o: tensor<1x64x4x32xbf16>, %do: tensor<1x64x4x32xbf16>,
                                      %lse: tensor<1x4x64x1xf32>, %earlier: i1) -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %dq, %dk, %dv = scf.if %earlier -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
    %kh = tensor.extract_slice %k[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %vh = tensor.extract_slice %v[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %dq, %dk, %dv = te.attention_backward %q, %kh, %vh, %o, %do, %lse layout bshd
        : (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>)
    %dk_full = tensor.pad %dk low[0, 0, 0, 0] high[0, 32, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    %dv_full = tensor.pad %dv low[0, 0, 0, 0] high[0, 32, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    scf.yield %dq, %dk_full, %dv_full : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
  } else {
    %qh = tensor.extract_slice %q[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %oh = tensor.extract_slice %o[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %doh = tensor.extract_slice %do[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1] : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %lseh = tensor.extract_slice %lse[0, 0, 32, 0] [1, 4, 32, 1] [1, 1, 1, 1] : tensor<1x4x64x1xf32> to tensor<1x4x32x1xf32>
    %dq, %dk, %dv = te.attention_backward %qh, %k, %v, %oh, %doh, %lseh layout bshd
        : (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x4x32x1xf32>) -> (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
    %dq_full = tensor.pad %dq low[0, 32, 0, 0] high[0, 0, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    scf.yield %dq_full, %dk, %dv : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
  }
  return %dq, %dk, %dv : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
}

// Merges a partial output (%o, %lse) into the running one (%acc, %acc_lse).
func.func private @merge(%acc: tensor<1x64x4x32xf32>, %acc_lse: tensor<1x4x64x1xf32>, %o: tensor<1x64x4x32xbf16>, %lse: tensor<1x4x64x1xf32>) -> (tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>) {
  %lse_init = tensor.empty() : tensor<1x4x64x1xf32>
  %merged_lse = linalg.generic {indexing_maps = [#map, #map, #map],
                                iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc_lse, %lse : tensor<1x4x64x1xf32>, tensor<1x4x64x1xf32>) outs(%lse_init : tensor<1x4x64x1xf32>) {
  ^bb0(%la: f32, %lb: f32, %out: f32):
    %m = arith.maximumf %la, %lb : f32
    %da = arith.subf %la, %m : f32
    %db = arith.subf %lb, %m : f32
    %ea = math.exp %da : f32
    %eb = math.exp %db : f32
    %sum = arith.addf %ea, %eb : f32
    %log = math.log %sum : f32
    %r = arith.addf %m, %log : f32
    linalg.yield %r : f32
  } -> tensor<1x4x64x1xf32>
  %init = tensor.empty() : tensor<1x64x4x32xf32>
  %merged = linalg.generic {indexing_maps = [#map, #map_l, #map, #map_l, #map_l, #map],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc, %acc_lse, %o, %lse, %merged_lse : tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>, tensor<1x4x64x1xf32>)
      outs(%init : tensor<1x64x4x32xf32>) {
  ^bb0(%a: f32, %la: f32, %b: bf16, %lb: f32, %l: f32, %out: f32):
    %da = arith.subf %la, %l : f32
    %db = arith.subf %lb, %l : f32
    %ea = math.exp %da : f32
    %eb = math.exp %db : f32
    %bf = arith.extf %b : bf16 to f32
    %wa = arith.mulf %a, %ea : f32
    %wb = arith.mulf %bf, %eb : f32
    %r = arith.addf %wa, %wb : f32
    linalg.yield %r : f32
  } -> tensor<1x64x4x32xf32>
  return %merged, %merged_lse : tensor<1x64x4x32xf32>, tensor<1x4x64x1xf32>
}

// Adds step gradients to the running sums.
func.func private @accumulate(%dq: tensor<1x64x4x32xf32>, %dk: tensor<1x64x4x32xf32>, %dv: tensor<1x64x4x32xf32>, %pq: tensor<1x64x4x32xbf16>, %pk: tensor<1x64x4x32xbf16>, %pv: tensor<1x64x4x32xbf16>)
    -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>) {
  %q_init = tensor.empty() : tensor<1x64x4x32xf32>
  %k_init = tensor.empty() : tensor<1x64x4x32xf32>
  %v_init = tensor.empty() : tensor<1x64x4x32xf32>
  %sq, %sk, %sv = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map, #map,
                                                  #map, #map, #map],
                                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dq, %dk, %dv, %pq, %pk, %pv : tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      outs(%q_init, %k_init, %v_init : tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>) {
  ^bb0(%aq: f32, %ak: f32, %av: f32, %bq: bf16, %bk: bf16, %bv: bf16,
       %oq: f32, %ok: f32, %ov: f32):
    %fq = arith.extf %bq : bf16 to f32
    %fk = arith.extf %bk : bf16 to f32
    %fv = arith.extf %bv : bf16 to f32
    %rq = arith.addf %aq, %fq : f32
    %rk = arith.addf %ak, %fk : f32
    %rv = arith.addf %av, %fv : f32
    linalg.yield %rq, %rk, %rv : f32, f32, f32
  } -> (tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>)
  return %sq, %sk, %sv : tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>, tensor<1x64x4x32xf32>
}

func.func private @widen(%x: tensor<1x64x4x32xbf16>) -> tensor<1x64x4x32xf32> {
  %init = tensor.empty() : tensor<1x64x4x32xf32>
  %r = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x64x4x32xbf16>) outs(%init : tensor<1x64x4x32xf32>) {
  ^bb0(%a: bf16, %out: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<1x64x4x32xf32>
  return %r : tensor<1x64x4x32xf32>
}

func.func private @narrow(%x: tensor<1x64x4x32xf32>) -> tensor<1x64x4x32xbf16> {
  %init = tensor.empty() : tensor<1x64x4x32xbf16>
  %r = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x64x4x32xf32>) outs(%init : tensor<1x64x4x32xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x64x4x32xbf16>
  return %r : tensor<1x64x4x32xbf16>
}
