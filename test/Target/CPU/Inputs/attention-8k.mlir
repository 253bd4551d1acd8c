// An s = 8192 causal attention: the production kernel needs little memory;
// a dense reference would need a 256 MiB score matrix per temporary.
func.func @attention(%q: tensor<1x8192x1x8xbf16>, %k: tensor<1x8192x1x8xbf16>,
                     %v: tensor<1x8192x1x8xbf16>) -> tensor<1x8192x1x8xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x8192x1x8xbf16>, tensor<1x8192x1x8xbf16>, tensor<1x8192x1x8xbf16>)
      -> tensor<1x8192x1x8xbf16>
  return %o : tensor<1x8192x1x8xbf16>
}
