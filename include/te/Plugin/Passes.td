//===- Passes.td - Plugin dispatch passes ------------------*- tablegen -*-===//

#ifndef TE_PLUGIN_PASSES_TD
#define TE_PLUGIN_PASSES_TD

include "mlir/Pass/PassBase.td"

def TEDispatch : Pass<"te-dispatch", "ModuleOp"> {
  let summary = "Give each te op a lowering provider and run plugin lowerings";
  let description = [{
    Asks the lowering providers of the loaded plugins (NVTE_PLUGIN,
    `--te-plugin`), in priority order, whether they lower each te op in its
    full configuration for the target; the first that accepts lowers it,
    the others' reasons are kept for `--te-explain-dispatch`. Ops no
    provider takes stay for the native lowering (`convert-te-to-linalg`),
    which runs next in `te-lower-cpu`.

    A provider lowers its op alone in a scratch module; the result must
    verify, replace the op and keep its signature, or the op goes to the
    native lowering with a warning naming the plugin (an error with
    NVTE_PLUGIN_STRICT=1).

    `NVTE_PLUGIN_POLICY="attention=vendor_a,native;quantize=native"` orders
    (or restricts) the candidates per op; `NVTE_PLUGIN_DENY="vendor_a,
    vendor_b:attention"` removes a plugin for all ops or one op. The pass
    options override the environment. Providers see the target they lower
    for: the host CPU, or with `device=NAME` the target registered for
    runtime device NAME (a plugin's, see docs/PluginAPI.md).

    Before, with a plugin `fixture` whose provider takes te.amax:

    ```mlir
    %a = te.amax %x : tensor<8xf32> -> tensor<f32>
    ```

    After (whatever the provider emits, spliced in place):

    ```mlir
    %a = linalg.generic {...} ins(%x : tensor<8xf32>) outs(%init : tensor<f32>) ...
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"",
           "Per-op provider order, like NVTE_PLUGIN_POLICY (default: the "
           "environment)">,
    Option<"deny", "deny", "std::string", /*default=*/"",
           "Denied plugins or plugin:op pairs, like NVTE_PLUGIN_DENY "
           "(default: the environment)">,
    Option<"device", "device", "std::string", /*default=*/"",
           "Dispatch for the target of this runtime device, e.g. a "
           "plugin's (default: the host CPU)">,
  ];
}

def TEExplainDispatch : Pass<"te-explain-dispatch", "ModuleOp"> {
  let summary = "Print which backend lowers each te op, and why others declined";
  let description = [{
    Runs `te-dispatch` on a copy of the module and prints the table
    `te-run --explain` prints, to stdout: each te op, its location, the
    backend that lowers it (`plugin P/provider`, `<target> (native)`, or
    `none: <why>`), and every provider that declined it with its reason, or
    why an accepted lowering fell back to native. The module itself is left
    unchanged.

    ```
    op           location          backend              declined / notes
    te.amax      step.mlir:5:8     plugin fixture/amax  -
    te.amax      step.mlir:6:8     cpu (native)         fixture/amax: only f32 inputs, got bf16
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"",
           "Per-op provider order, like NVTE_PLUGIN_POLICY">,
    Option<"deny", "deny", "std::string", /*default=*/"",
           "Denied plugins or plugin:op pairs, like NVTE_PLUGIN_DENY">,
    Option<"device", "device", "std::string", /*default=*/"",
           "Dispatch for the target of this runtime device (default: the "
           "host CPU)">,
  ];
}

#endif // TE_PLUGIN_PASSES_TD
