// Context parallelism as a ring (TE's "p2p" context parallelism), forward,
// no mask, on groups of 2 ranks (mpirun -np 2 or 4): each rank holds a
// sequence shard of q, k and v. It attends to its own K/V shard, passes
// K/V one rank round the ring, attends to the shard it received, and
// merges the two partial outputs with their log-sum-exps:
//   lse = log(exp(lse0) + exp(lse1)),  o = o0 exp(lse0 - lse) + o1 exp(lse1 - lse).
// The result is each rank's shard of attention over the group's whole
// sequence. (TE's causal form, with its load-balanced chunk order, and the
// backward are not written yet.)
#map_o = affine_map<(b, s, h, d) -> (b, s, h, d)>
#map_l = affine_map<(b, s, h, d) -> (b, h, s, 0)>
te.process_group @cp size 2

func.func @ring_attention(%q: tensor<1x64x4x32xbf16>, %k: tensor<1x64x4x32xbf16>,
                          %v: tensor<1x64x4x32xbf16>) -> tensor<1x64x4x32xbf16> {
  %o0, %lse0 = te.attention %q, %k, %v layout bshd {return_lse}
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %k1 = te.permute %k group @cp shift 1 : tensor<1x64x4x32xbf16>
  %v1 = te.permute %v group @cp shift 1 : tensor<1x64x4x32xbf16>
  %o1, %lse1 = te.attention %q, %k1, %v1 layout bshd {return_lse}
      : (tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>, tensor<1x64x4x32xbf16>)
      -> (tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
  %init = tensor.empty() : tensor<1x64x4x32xbf16>
  %o = linalg.generic {indexing_maps = [#map_o, #map_l, #map_o, #map_l, #map_o],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o0, %lse0, %o1, %lse1 : tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>,
                                   tensor<1x64x4x32xbf16>, tensor<1x4x64x1xf32>)
      outs(%init : tensor<1x64x4x32xbf16>) {
  ^bb0(%a: bf16, %la: f32, %b: bf16, %lb: f32, %out: bf16):
    %m = arith.maximumf %la, %lb : f32
    %da = arith.subf %la, %m : f32
    %db = arith.subf %lb, %m : f32
    %ea = math.exp %da : f32
    %eb = math.exp %db : f32
    %sum = arith.addf %ea, %eb : f32
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %wa = arith.mulf %af, %ea : f32
    %wb = arith.mulf %bf, %eb : f32
    %num = arith.addf %wa, %wb : f32
    %r = arith.divf %num, %sum : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x64x4x32xbf16>
  return %o : tensor<1x64x4x32xbf16>
}
