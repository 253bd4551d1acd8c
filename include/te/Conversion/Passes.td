//===- Passes.td - te conversion passes --------------------*- tablegen -*-===//

#ifndef TE_CONVERSION_PASSES_TD
#define TE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// TEToLinalg
//===----------------------------------------------------------------------===//

def ConvertTEToLinalg : Pass<"convert-te-to-linalg", "ModuleOp"> {
  let summary = "Lower te ops to linalg, scf, vector, tensor, arith and math";
  let description = [{
    The target-independent lowering of te ops for the host CPU: every op
    becomes `linalg.generic` / `linalg.reduce` ops on tensors whose bodies
    are `arith` and `math`; te.attention becomes scf loops with an online
    softmax (memory O(s * d): the score matrix never exists), blocked over
    tiles of query rows and chunks of keys where no per-element term
    (arbitrary mask, bias tensor, dropout, thd) applies, one query row at a
    time otherwise (docs/CPULowering.md). FP8 casts are emitted as bit-exact integer
    arithmetic (round-to-nearest-even, saturation to the format's largest
    finite value, NaN kept), because neither `arith.truncf` nor LLVM can
    convert to FP8 on the host.

    Before:

    ```mlir
    %a = te.amax %x : tensor<4x8xbf16> -> tensor<f32>
    ```

    After:

    ```mlir
    %zero = arith.constant 0.0 : f32
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %a = linalg.generic {iterator_types = ["reduction", "reduction"], ...}
        ins(%x : tensor<4x8xbf16>) outs(%init : tensor<f32>) { ... }
    ```

    Collectives (te.all_reduce, all_gather, reduce_scatter, all_to_all,
    permute) are not computed by the kernel: each becomes a call, on
    buffers, of a private declaration whose `te.library_function` is
    `collective.<op>` and whose `te.library_parameters` give the group,
    dtype, shape and attributes; the runtime's device runs it
    (te/Runtime/Collective.h), and `te-cpu-host-steps` cuts the kernel
    around it.

    An op (or configuration) the host lowering does not cover yet is an
    error that names it; plugins that lower such ops run before this pass.

    `dot-unit` names a bf16 dot-product unit of the target (the cpu target
    sets it from the host's features): with `avx512-bf16`, the attention
    scores of bf16 inputs (q k^T, and dO v^T in the backward) are
    AVX512-BF16 dot products of bf16 pairs (`x86vector.avx512.dot`) rather
    than f32 FMAs on widened inputs, and so are the backward's dQ, dK and
    dV sums when the head dimensions are multiples of 16 (P and scale * dS
    rounded to bf16 once). Empty (the default): f32 FMAs only. The same
    unit runs te.scaled_matmul's micro-kernel for bf16 and FP8 operands
    (FP8 decoded to bf16 while packing, exactly).

    `tile-unit` names a bf16 matrix unit of the target with tile registers
    (the cpu target sets it from the host's features): with `amx-bf16`,
    te.scaled_matmul and te.grouped_matmul with bf16 and FP8 operands run
    on AMX tiles (`amx.tile_mulf`, 2x2 tiles of 16x16 f32 a micro-kernel),
    in place of the dot unit's pair dots. Empty (the default): none.

    `vector-lanes` is the number of f32 lanes of the target's vectors (16
    for AVX-512, 8 for AVX2): te.scaled_matmul's f32 FMA micro-kernel (f32
    and f16 operands, and every operand without a dot unit) keeps its
    accumulators in registers of that width.
  }];
  let options = [
    Option<"dotUnit", "dot-unit", "std::string", /*default=*/"\"\"",
           "bf16 dot-product unit for attention scores and GEMMs: "
           "avx512-bf16, or empty for none">,
    Option<"tileUnit", "tile-unit", "std::string", /*default=*/"\"\"",
           "bf16 tile unit for GEMMs: amx-bf16, or empty for none">,
    Option<"vectorLanes", "vector-lanes", "int64_t", /*default=*/"16",
           "f32 lanes of the target's vector registers (16: AVX-512, 8: "
           "AVX2, 4: SSE or NEON), for the GEMM's FMA micro-kernel">
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect", "::mlir::x86vector::X86VectorDialect"
  ];
}

def ConvertTEToGPU : Pass<"convert-te-to-gpu", "ModuleOp"> {
  let summary = "Lower te ops to GPU kernel launches and gpu.func kernels";
  let description = [{
    The GPU targets' lowering of te ops, op by op on tensors: each op
    becomes `gpu.launch_func` ops on buffers (its inputs through
    `bufferization.to_buffer read_only`, its outputs fresh `memref.alloc`s
    returned by `bufferization.to_tensor restrict`), and its kernels are
    `gpu.func`s in a `gpu.module` named after their contents (identical
    kernels share one module). The enclosing module becomes a
    `gpu.container_module`. Kernels use only gpu, arith, math, vector,
    memref, scf and llvm ops, with te's codec and scaling math, so that
    every GPU target computes the CPU backend's bits.

    Before:

    ```mlir
    %a = te.amax %x : tensor<256x512xbf16> -> tensor<f32>
    ```

    After:

    ```mlir
    %xb = bufferization.to_buffer %x read_only : tensor<256x512xbf16> to memref<256x512xbf16>
    %ab = memref.alloc() {alignment = 256 : i64} : memref<f32>
    gpu.launch_func @te_amax_<hash>::@te_amax_<hash>_amax_init blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%ab : memref<f32>)
    gpu.launch_func @te_amax_<hash>::@te_amax_<hash>_amax blocks in (%c64, %c1, %c1) threads in (%c256, %c1, %c1) args(%xb : memref<256x512xbf16>, %ab : memref<f32>)
    %a = bufferization.to_tensor %ab restrict writable : memref<f32> to tensor<f32>
    ```

    Run from the command line it generates code for a generic GPU with
    `warp-size` lanes, or with `target=` for a registered GPU target, as
    that target's pipeline runs it (`target=cuda:sm_90a`; what
    `--dump-pass-pipeline` prints for `te-lower-target=device=cuda`). An
    op it cannot take is an error with the reason.
  }];
  let options = [
    Option<"warpSize", "warp-size", "unsigned", /*default=*/"32",
           "Threads of a warp of the GPU kernels are generated for">,
    Option<"targetSpec", "target", "std::string", /*default=*/"\"\"",
           "A registered GPU target and its arch (cuda:sm_90a; cuda alone "
           "for its default arch) instead of a generic GPU">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def TEDecomposeReference : Pass<"te-decompose-reference", "ModuleOp"> {
  let summary = "Rewrite te ops into a dense reference formulation";
  let description = [{
    The reference side of differential checks (`te-run --check`,
    `te-lower-cpu-reference`): te.attention and te.attention_backward
    become the textbook dense computation, written independently of
    convert-te-to-linalg's online-softmax loops. The f32 score tensor
    [b, h_q, s_q, s_kv] ([1, h_q, t_q, t_kv] for thd) is a `linalg.generic`
    contraction over d_qk (q and k read through layout-dependent maps, the
    kv head as h floordiv (h_q / h_kv)); a second `linalg.generic` adds
    scale, bias and alibi and sets invisible keys to -inf, computing
    visibility for every (b, h, i, j) from `linalg.index` values with the
    op's mask, window and padding rules (thd: from per-token tables of
    sequence, position and lengths, built by a reduction over the
    sequences; a key is visible only within the query's sequence); then row
    max, exp, row sum (starting from the off_by_one / learnable term), P V,
    normalization and the cast to the output type. LSE = max + log(sum); a
    row that sees nothing has O = 0 and LSE = log of the extra term.
    Dropout is a dense tensor of keep factors computed per element from the
    op's documented counter-based hash; it scales the weights of V, not the
    softmax statistics. The backward pass is the dense chain rule from the
    given o, d_o and lse: P = exp(x - LSE), D = dO . O, dP = (dO V^T) o F,
    dS = P o (dP - D), dQ = scale dS K, dK = scale dS^T Q and
    dV = (P o F)^T dO (summed over the query heads of each kv head), dbias
    = (scale) dS summed over the bias's broadcast dimensions,
    d_softmax_offset = -sum exp(alpha - LSE) D.

    The forward pass runs over blocks of query rows (an `scf.for` whose
    iterations slice q, the mask and the bias and insert their rows of O
    and the LSE) once a block's score tensor would pass 64 MiB, so that a
    check of a long sequence needs O(block * s_kv) memory; every rule that
    depends on the row (diagonal, window, padding, dropout's counter) reads
    the row of the whole problem. thd and the backward pass stay dense.

    Before:

    ```mlir
    %o = te.attention %q, %k, %v layout bshd mask causal
        : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>)
        -> tensor<1x4x2x8xf32>
    ```

    After (abridged):

    ```mlir
    %s = linalg.generic {iterator_types = ["parallel", "parallel",
        "parallel", "parallel", "reduction"]} ins(%q, %k : ...)
        outs(%zero : tensor<1x2x4x4xf32>) { ... }
    %x = linalg.generic ... ins(%s : tensor<1x2x4x4xf32>) {
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      ...  // -inf where j > i
    }
    ...
    ```

    The other te ops are left alone: their host lowering (FP8 casts,
    scaling, GEMM) is bit-exact and is itself checked bit for bit against
    numpy, so the reference pipeline lowers them the normal way. A
    configuration without a reference (attention with dynamic shapes) is
    an error that names it: a check must never compare the production
    lowering with itself.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

//===----------------------------------------------------------------------===//
// Host math
//===----------------------------------------------------------------------===//

def ApproximateMathForCPU : Pass<"te-approximate-math"> {
  let summary = "Polynomial approximations of exp and log for the host";
  let description = [{
    Replaces f32 `math.exp` and `math.log` with MLIR's polynomial
    approximations (accurate to a few ulp), so the host code calls no libm
    function: the attention kernels spent up to two thirds of their time in
    scalar `expf` calls, which also stop LLVM from vectorizing around them.

    ```mlir
    %e = math.exp %x : f32
    ```

    becomes a short sequence of `arith` ops (range reduction, polynomial,
    exponent reconstruction by bit manipulation).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

//===----------------------------------------------------------------------===//
// Host threads
//===----------------------------------------------------------------------===//

def CPUHostSteps : Pass<"te-cpu-host-steps", "ModuleOp"> {
  let summary = "Cut entry points around their library calls into steps";
  let description = [{
    After bufferization, before deallocation: an entry point (a public
    function) that calls a library function the device runs (a
    collective) cannot be one kernel, because the runtime runs the call.
    Its top-level ops are cut at each such call into steps: each run of ops
    between calls becomes a function `<entry>__step<k>` of its own, taking
    the entry's arguments and the buffers it shares with other steps or
    calls; those shared buffers become the entry's temporaries. The plan
    (manifest `temp`, `step` and `call` lines, te/Runtime/Module.h, with
    operands `a<N>` for argument N and `t<N>` for temporary N) is recorded
    in the module's `te.host_steps` dictionary under the entry's name, and
    the entry's body is emptied: the runtime runs the steps instead. A
    library call's operands must be whole buffers; a call's output that is
    only copied into an output argument is written there directly.
    Entry points without library calls are left alone. The module's
    `te.process_group` declarations, to which nothing refers once the
    collectives are calls, are erased.
  }];
}

def CPUParallelLoops : Pass<"te-cpu-parallel-loops", "ModuleOp"> {
  let summary = "Choose the scf.parallel loops that run on several host threads";
  let description = [{
    Keeps, of each nest of `scf.parallel` loops (from linalg's parallel
    dimensions and the attention lowering's `scf.forall`), the outermost
    loop whose static work -- its trip count times the estimated operations
    of one iteration -- is at least `min-work`, and turns every other
    `scf.parallel` into sequential `scf.for` loops. What stays parallel
    becomes an OpenMP parallel loop (`convert-scf-to-openmp`); small loops
    stay on the calling thread, where starting threads would cost more than
    the loop. Only as many outer dimensions of a loop stay parallel as give
    the threads enough iterations, never the innermost of several. The
    body of each parallel loop becomes a private function whose buffer
    arguments are `llvm.noalias`: OpenMP passes captured values through a
    structure, which would hide from LLVM that the kernel's outputs alias
    nothing (and keep it from vectorizing loops that read a scale while
    storing outputs). A `memref.copy` with a strided side becomes a
    parallel loop first: the LLVM lowering would call MLIR's runtime
    library for it, which kernels do not link.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Least estimated operations of a loop worth several threads">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def CPUOpenMPThreads : Pass<"te-cpu-openmp-threads", "ModuleOp"> {
  let summary = "Give every OpenMP region the kernel's thread count";
  let description = [{
    After `convert-scf-to-openmp`: each `omp.parallel` gets a `num_threads`
    clause read from the module's `__te_num_threads` global, which the
    kernel library's `te_kernel_set_num_threads` sets (the runtime calls it
    before each launch; 0 leaves OpenMP's default). Loops whose iterations
    are coarse (at least `min-iteration-work` estimated operations, e.g.
    attention tiles of uneven length) are scheduled dynamically, the rest
    statically. The `memref.alloca_scope` that convert-scf-to-openmp puts
    around each loop body is inlined where it allocates nothing.
  }];
  let options = [
    Option<"minIterationWork", "min-iteration-work", "int64_t",
           /*default=*/"65536",
           "Least estimated operations per iteration for a dynamic schedule">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::omp::OpenMPDialect"];
}

#endif // TE_CONVERSION_PASSES_TD
