// An s = 16384 causal attention: the production kernel needs little
// memory, the dense reference of --check a 1 GiB score matrix per
// temporary.
func.func @attention(%q: tensor<1x16384x1x8xbf16>, %k: tensor<1x16384x1x8xbf16>,
                     %v: tensor<1x16384x1x8xbf16>) -> tensor<1x16384x1x8xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x16384x1x8xbf16>, tensor<1x16384x1x8xbf16>, tensor<1x16384x1x8xbf16>)
      -> tensor<1x16384x1x8xbf16>
  return %o : tensor<1x16384x1x8xbf16>
}
