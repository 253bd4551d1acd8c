// Context parallelism as a ring (TE's "p2p" context parallelism), causal,
// forward and backward, on groups of 2 ranks (mpirun -np 2 or 4; the ring
// of 4 is ring_attention_cp4.mlir).
//
// The sequence is cut into 2 x cp chunks and rank r holds chunks r and
// 2 cp - 1 - r (TE's load-balanced order: every rank gets the same share
// of the causal triangle). Step 0 attends to the rank's own K/V, causally.
// Step i attends to the K/V of rank r - i, passed round the ring with
// te.permute: if i <= r, those K/V came before all of this rank's queries
// in their first chunk and after all of them in their second, so all the
// queries attend to the first chunk, unmasked; else only the second query
// chunk sees any of them, and it sees all of them. The partial outputs are
// merged by their log-sum-exps:
//   lse = log(exp(lse0) + exp(lse1)),  o = o0 exp(lse0 - lse) + o1 exp(lse1 - lse).
//
// The backward runs the same blocks with the forward's merged output and
// log-sum-exp, which makes each block's gradients the exact share of the
// whole attention's; the K/V gradients of step i go back to their owner,
// rank r - i.
#map_o = affine_map<(b, s, h, d) -> (b, s, h, d)>
#map_l = affine_map<(b, s, h, d) -> (b, h, s, 0)>
#map_lse = affine_map<(b, h, s, x) -> (b, h, s, x)>
te.process_group @cp size 2

func.func @ring_attention(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>,
                          %v: tensor<1x64x4x32xbf16>)
    -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
  %rank_tensor = te.group_rank group @cp : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %o0, %lse0 = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  // Step 1: the K/V of rank r - 1.
  %k1 = te.permute %k group @cp shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp shift 1 : tensor<1x64x4x32xbf16>
  %step = arith.constant 1 : i32
  %earlier = arith.cmpi sle, %step, %rank : i32
  %o1, %lse1 = scf.if %earlier
      -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>) {
    // All queries, the first K/V chunk.
    %kh = tensor.extract_slice %k1[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %vh = tensor.extract_slice %v1[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %o, %lse = te.attention %q, %kh, %vh layout bshd {return_lse}
        : (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>)
        -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
    scf.yield %o, %lse : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
  } else {
    // The second query chunk, all the K/V; the first chunk's rows get
    // nothing (an output of 0 with a log-sum-exp of -inf).
    %qh = tensor.extract_slice %q[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %o, %lse = te.attention %qh, %k1, %v1 layout bshd {return_lse}
        : (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
        -> (tensor<1x32x4x32xbf16>, tensor<1x4x32x1xf32>)
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
  // The merge: first the log-sum-exp, then the output weighted by it.
  %lse_init = tensor.empty() : tensor<1x4x64x1xf32>
  %lse = linalg.generic {indexing_maps = [#map_lse, #map_lse, #map_lse],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%lse0, %lse1 : tensor<1x4x64x1xf32>, tensor<1x4x64x1xf32>)
      outs(%lse_init : tensor<1x4x64x1xf32>) {
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
  %init = tensor.empty() : tensor<1x64x4x32xbf16>
  %o = linalg.generic {indexing_maps = [#map_o, #map_l, #map_o, #map_l, #map_l, #map_o],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o0, %lse0, %o1, %lse1, %lse : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>,
                                         tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>,
                                         tensor<1x4x64x1xf32>)
      outs(%init : tensor<1x64x4x32xbf16>) {
  ^bb0(%a: bf16, %la: f32, %b: bf16, %lb: f32, %l: f32, %out: bf16):
    %da = arith.subf %la, %l : f32
    %db = arith.subf %lb, %l : f32
    %ea = math.exp %da : f32
    %eb = math.exp %db : f32
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %wa = arith.mulf %af, %ea : f32
    %wb = arith.mulf %bf, %eb : f32
    %r = arith.addf %wa, %wb : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x64x4x32xbf16>
  return %o, %lse : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>
}

// The backward: %o and %lse are the forward's results, %do the output's
// gradient; all are this rank's chunks.
func.func @ring_attention_backward(
    %q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>,
    %v: tensor<1x64x4x32xbf16>, %o: tensor<1x64x4x32xbf16>,
    %do: tensor<1x64x4x32xbf16>, %lse: tensor<1x4x64x1xf32>)
    -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
  %rank_tensor = te.group_rank group @cp : tensor<i32>
  %rank = tensor.extract %rank_tensor[] : tensor<i32>
  // Step 0: the own chunks, causally.
  %dq0, %dk0, %dv0 = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>,
         tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
      -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  // Step 1: the K/V of rank r - 1, the blocks of the forward.
  %k1 = te.permute %k group @cp shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp shift 1 : tensor<1x64x4x32xbf16>
  %step = arith.constant 1 : i32
  %earlier = arith.cmpi sle, %step, %rank : i32
  %zero = arith.constant 0.0 : bf16
  %dq1, %dk1, %dv1 = scf.if %earlier
      -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
    %kh = tensor.extract_slice %k1[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %vh = tensor.extract_slice %v1[0, 0, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %dq, %dk, %dv = te.attention_backward %q, %kh, %vh, %o, %do, %lse layout bshd
        : (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>,
           tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
        -> (tensor<1x64x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>)
    // The second K/V chunk got no gradient.
    %dk_full = tensor.pad %dk low[0, 0, 0, 0] high[0, 32, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    %dv_full = tensor.pad %dv low[0, 0, 0, 0] high[0, 32, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    scf.yield %dq, %dk_full, %dv_full
        : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
  } else {
    %qh = tensor.extract_slice %q[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %oh = tensor.extract_slice %o[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %doh = tensor.extract_slice %do[0, 32, 0, 0] [1, 32, 4, 32] [1, 1, 1, 1]
        : tensor<1x64x4x32xbf16> to tensor<1x32x4x32xbf16>
    %lseh = tensor.extract_slice %lse[0, 0, 32, 0] [1, 4, 32, 1] [1, 1, 1, 1]
        : tensor<1x4x64x1xf32> to tensor<1x4x32x1xf32>
    %dq, %dk, %dv = te.attention_backward %qh, %k1, %v1, %oh, %doh, %lseh layout bshd
        : (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>,
           tensor<1x32x4x32xbf16>, tensor<1x32x4x32xbf16>, tensor<1x4x32x1xf32>)
        -> (tensor<1x32x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
    // The first query chunk got no gradient.
    %dq_full = tensor.pad %dq low[0, 32, 0, 0] high[0, 0, 0, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : bf16
    } : tensor<1x32x4x32xbf16> to tensor<1x64x4x32xbf16>
    scf.yield %dq_full, %dk, %dv
        : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
  }
  // The K/V gradients of step 1 belong to rank r - 1.
  %dk1_home = te.permute %dk1 group @cp shift -1 : tensor<1x64x4x32xbf16>
  %dv1_home = te.permute %dv1 group @cp shift -1 : tensor<1x64x4x32xbf16>
  %dq_init = tensor.empty() : tensor<1x64x4x32xbf16>
  %dk_init = tensor.empty() : tensor<1x64x4x32xbf16>
  %dv_init = tensor.empty() : tensor<1x64x4x32xbf16>
  %dq, %dk, %dv = linalg.generic {
      indexing_maps = [#map_o, #map_o, #map_o, #map_o, #map_o, #map_o,
                       #map_o, #map_o, #map_o],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dq0, %dq1, %dk0, %dk1_home, %dv0, %dv1_home
          : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>,
            tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      outs(%dq_init, %dk_init, %dv_init
           : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>) {
  ^bb0(%q0: bf16, %q1: bf16, %k0: bf16, %k1s: bf16, %v0: bf16, %v1s: bf16,
       %oq: bf16, %ok: bf16, %ov: bf16):
    %q0f = arith.extf %q0 : bf16 to f32
    %q1f = arith.extf %q1 : bf16 to f32
    %k0f = arith.extf %k0 : bf16 to f32
    %k1f = arith.extf %k1s : bf16 to f32
    %v0f = arith.extf %v0 : bf16 to f32
    %v1f = arith.extf %v1s : bf16 to f32
    %qs = arith.addf %q0f, %q1f : f32
    %ks = arith.addf %k0f, %k1f : f32
    %vs = arith.addf %v0f, %v1f : f32
    %qt = arith.truncf %qs : f32 to bf16
    %kt = arith.truncf %ks : f32 to bf16
    %vt = arith.truncf %vs : f32 to bf16
    linalg.yield %qt, %kt, %vt : bf16, bf16, bf16
  } -> (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
  return %dq, %dk, %dv : tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>
}
