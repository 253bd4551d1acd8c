// The NCCL smoke of one GPU: a group of one rank, whose communicator NCCL
// makes without any other process. te.permute with the pair (0, 0) sends
// the tensor to the rank itself through NCCL (over a group of one, every
// other collective folds away at compile time); the GPU's output must be
// its input, as the CPU's is.
te.process_group @one size 1

func.func @nccl_self_exchange(%x: tensor<1024x256xbf16>) -> tensor<1024x256xbf16> {
  %y = te.permute %x group @one pairs [0, 0] : tensor<1024x256xbf16>
  return %y : tensor<1024x256xbf16>
}
