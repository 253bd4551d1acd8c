//===- Passes.td - Transformations of te modules -----------*- tablegen -*-===//

#ifndef TE_DIALECT_TE_TRANSFORMS_PASSES_TD
#define TE_DIALECT_TE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TEInsertChecks : Pass<"te-insert-checks", "ModuleOp"> {
  let summary = "Check the index operands of te ops at run time";
  let description = [{
    Adds, before each te op that reads tensors through run-time indices, the
    `te.check` ops that validate them, so that every backend reports bad
    data with one clear message instead of reading out of bounds or
    computing garbage. It runs before the dispatch, so plugin lowerings are
    checked too. For te.attention and te.attention_backward:

    * `thd`: `cu_seqlens_q` and `cu_seqlens_kv` start at 0 and never
      decrease; without `seq_offsets` their last entry is at most the
      number of tokens (t_q, t_kv); with them, every offset is >= 0, each
      sequence fits before the next offset, and the last offset is at most
      the number of tokens.
    * non-`thd` padding masks: every `seqlens_q` entry lies in [0, s_q] and
      every `seqlens_kv` entry in [0, s_kv].

    For te.grouped_matmul, every `splits` entry is >= 0 and they sum to the
    rows of `a`.

    Before:

    ```mlir
    %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%lq, %lkv)
        : (...) -> tensor<2x16x4x8xf32>
    ```

    After (one check per rule; the loop finds the first bad entry):

    ```mlir
    %bad, %at, %value = scf.for ... iter_args(...) { ... }
    te.check %bad, %at, %value
        message "te.attention at {loc}: seqlens_q entry {0} = {1} is outside [0, 16] (s_q)"
    ...
    %o = te.attention %q, %k, %v layout bshd mask padding seqlens(%lq, %lkv) ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TEFoldEmpty : Pass<"te-fold-empty", "ModuleOp"> {
  let summary = "Replace te ops on zero-size tensors by their defined results";
  let description = [{
    Zero-size tensors are valid te inputs (an empty micro-batch, an empty
    key/value cache). docs/TEDialect.md defines what each op gives on them;
    this pass, which every pipeline runs before the dispatch, writes those
    results down as constants, so that no lowering (native or plugin) sees a
    zero-size problem:

    * `te.attention` with b, h_q, s_q (t_q) or s_kv (t_kv) zero: `o` is 0
      (it has no elements unless only s_kv is 0); a query row that sees no
      key has LSE -inf (`vanilla`), 0 (`off_by_one`) or alpha_h
      (`learnable`), as for rows a mask empties.
    * `te.attention_backward` with one of those sizes zero: every gradient
      is 0 (a sum over no queries or no keys; `o` is the forward's output,
      0 when s_kv is 0, so rowsum(d_o * o) is 0 too).
    * `te.amax` of an empty tensor: 0.
    * `te.quantize` of an empty tensor in a block mode (`mxfp8_1x32`,
      `block_1x128`, `block_128x128`): empty data and scales (a
      `per_tensor` cast still computes scale_inv = 1 / scale and amax 0).
    * `te.dequantize` of empty data: an empty result.
    * `te.scaled_matmul` with no rows or no columns: an empty product, and
      an FP8 output amax of 0. (No columns of A, k = 0, is a product of 0
      plus the bias: its lowering computes that.) Likewise
      `te.grouped_matmul` with no rows (T = 0) or no columns.

    Results without elements become `tensor.empty`, the others constants.

    Before:

    ```mlir
    %o = te.attention %q, %k, %v layout bshd mask no_mask
        : (tensor<2x0x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>)
        -> tensor<2x0x4x8xf32>
    ```

    After:

    ```mlir
    %o = tensor.empty() : tensor<2x0x4x8xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TEMaterializeChecks : Pass<"te-materialize-checks", "ModuleOp"> {
  let summary = "Turn a kernel's te.check ops into a status result";
  let description = [{
    Each public function with `te.check` ops gets one more result, its
    status: `tensor<4xi64>` holding (0, 0, 0, 0) when every check passed,
    else (n, v0, v1, v2) for the first failing check n (counting from 1 in
    the function's order) and its values. The check messages go into the
    module attribute `te.kernel_checks` (function name -> messages), from
    which the kernel compiler writes the kernel's manifest; the runtime
    reads the status after each launch and fails it with the message.
    Checks must sit in the function's entry block (te-insert-checks and
    plugin lowerings put them there).

    Before:

    ```mlir
    func.func @f(...) -> tensor<...> {
      te.check %bad, %at message "seqlens_q entry {0} is bad"
      ...
      return %o : tensor<...>
    }
    ```

    After:

    ```mlir
    module attributes {te.kernel_checks = {f = ["seqlens_q entry {0} is bad"]}} {
      func.func @f(...) -> (tensor<...>, tensor<4xi64>) {
        %first = arith.select ...
        ...
        %status = tensor.from_elements %code, %v0, %v1, %v2 : tensor<4xi64>
        return %o, %status : tensor<...>, tensor<4xi64>
      }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TEUniqueReturns : Pass<"te-unique-returns", "func::FuncOp"> {
  let summary = "Give each tensor a function returns twice a copy of its own";
  let description = [{
    The first stage of every target's kernel bufferization
    (addKernelBufferization, te/Target/Target.h): a value an entry point
    returns more than once becomes one result plus copies
    (`bufferization.alloc_tensor ... copy(...)`), so that each output buffer
    has one producer (MLIR 22's buffer-results-to-out-params cannot hoist an
    allocation returned twice).

    Before:

    ```mlir
    return %a, %a : tensor<4xf32>, tensor<4xf32>
    ```

    After:

    ```mlir
    %copy = bufferization.alloc_tensor() copy(%a) : tensor<4xf32>
    return %a, %copy : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let dependentDialects = ["bufferization::BufferizationDialect"];
}

#endif // TE_DIALECT_TE_TRANSFORMS_PASSES_TD
