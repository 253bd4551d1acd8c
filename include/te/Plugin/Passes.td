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

def TELowerTarget : Pass<"te-lower-target", "ModuleOp"> {
  let summary = "Lower te for a runtime device: the dispatch, then its target's pipeline";
  let description = [{
    What compiling for runtime device `device` does before serializing:
    `te-dispatch` for the device's target (the built-in `cpu`, or a
    plugin's, see docs/PluginAPI.md), then the target's own pipeline on
    what the providers left. `te-lower-target{device=cpu}` is
    `te-lower-cpu`; for a plugin's device it shows that plugin's lowering,
    e.g. `te-opt --te-plugin=libvendor.so --te-lower-target=device=vendor
    --mlir-print-ir-after-all`. A device without a target is an error that
    lists the devices that have one; a target's plugin starts (activates)
    first.

    `arch` names the processor to compile for, as a JIT would for the
    device it runs on: `te-opt --te-lower-target="device=cuda arch=sm_90a"`
    lowers for Hopper on a machine without a GPU. It overrides the
    environment (TE_CUDA_ARCH) for the rest of the process; the built-in
    cuda target reads it (TargetRegistry::getArchOverride).
  }];
  let options = [
    Option<"device", "device", "std::string", /*default=*/"\"cpu\"",
           "The runtime device to lower for">,
    Option<"arch", "arch", "std::string", /*default=*/"",
           "The arch to compile for, e.g. sm_90a for device=cuda (default: "
           "TE_CUDA_ARCH, else sm_80)">,
  ];
}

#endif // TE_PLUGIN_PASSES_TD
