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

#endif // TE_DIALECT_TE_TRANSFORMS_PASSES_TD
