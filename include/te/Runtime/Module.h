//===- Module.h - Kernel modules and kernel launches --------------*- C -*-===//
//
// A kernel module is what te-mlir's JIT produces for a device: for the host, a
// shared library. Besides its kernels it carries a text manifest, returned by
// `const char *te_kernel_manifest(void)` on the host, which declares every
// kernel's entry name, symbol and argument types:
//
//   te-kernel-abi 2
//   entry <name> <symbol>
//   in <dtype> <dims> [<role>]
//   out <dtype> <dims>
//   status i64 4
//   check <message>
//   end
//
// Lines end with '\n' (the last one optionally), tokens are separated by one
// space. After the version line come one or more entry ... end blocks; inside
// a block all `in` lines precede all `out` lines. <dtype> is a te_dtype_name
// spelling, <dims> is like 2x128x16x64, or `scalar` for rank 0. A kernel's
// arguments are its `in` lines then its `out` lines, in order. On the host
// each symbol is `void symbol(void **args)`, args[i] being the data pointer
// of argument i.
//
// Version 2 adds an optional role to `in` lines (te_kernel_arg_role) and
// run-time checks: a kernel whose block has a `status` line
// (after its outputs) takes one more argument, after the outputs, which the
// runtime supplies: four i64 the kernel sets to (0, 0, 0, 0), or to
// (n, v0, v1, v2) when its n-th `check` (counting from 1) failed. The check
// lines follow the status line; each message may show the values as {0},
// {1} and {2}. te_kernel_launch then fails with TE_ERROR_KERNEL_FAILED and
// that message. Version 1 manifests (no checks) are read as before.
//
// Version 3 adds an optional launch geometry to an entry, for devices whose
// kernels run on a grid (GPUs):
//
//   launch <grid> <block> <shared-bytes>
//
// anywhere inside the block, <grid> and <block> like 128x1x1 (one to three
// dimensions, each from 1 to 2^31-1), <shared-bytes> the dynamic shared
// memory per block. The runtime passes it in te_launch_config; without it
// the geometry there is zero.
//
// Version 4 lets an entry run as several kernels (a reduction and the pass
// that uses it, say) with temporary device buffers between them:
//
//   temp <bytes>
//   step <symbol> <grid> <block> <shared-bytes> <operand>...
//
// anywhere inside the block, instead of `launch`. Each `temp` line declares
// a temporary (t0, t1, ... in order) of that many bytes on the device,
// uninitialized. The kernel keeps its temporaries across launches: a
// launch takes a set that no other launch is enqueuing with, and once its
// steps are enqueued the set serves later launches on the same stream
// (which the stream runs after them) without waiting. Releasing a stream
// frees the sets kept for it, the module the rest, and a launch that runs
// out of device memory frees the idle ones and tries again. The steps run in
// order on the launch's stream, each a kernel with its own geometry, taking the
// listed operands as its arguments: a<N> is the entry's argument N (inputs then
// outputs), t<N> temporary N, and s the status buffer. An entry with steps does
// not launch its own symbol (it names the program function the steps were made
// from), and only the steps' symbols must be defined by the module.
//
// Version 5 adds library calls to the steps: a step that runs a function of
// a library the device provides (cuBLASLt's matmul on the cuda device)
// instead of a kernel of the module:
//
//   call <function> <parameters> <operand>...
//
// in the same list as `step` lines, run in order with them on the launch's
// stream. <function> is the library function ("cublaslt.matmul"; letters,
// digits, '.' and '_'), <parameters> its configuration as key=value pairs
// separated by commas (no spaces), <operand> as for `step`. The device
// (te_device_ops.library_call) validates the parameters; a module with
// `call` lines loads only on a device that runs library calls. The
// runtime runs `collective.<op>` calls itself, on the device's collective
// group (te/Runtime/Collective.h); a module with them loads only on a
// device that has collectives.
//
// te-mlir's compiler writes this format and the runtime reads it with one
// pair of functions (writeManifest and readManifest, te/ABI/Manifest.h),
// the writer putting each entry's lines in the order they are introduced
// above: arguments, status and checks, launch, temporaries, then the steps
// and calls in the order they run.
//
// Thread safety: a loaded module and its kernels are immutable (but for the
// temporaries a kernel keeps, under its own lock), so getters and
// te_kernel_launch may be called from any number of threads at once, also on
// the same kernel (the kernel code itself must be reentrant, which te-mlir's
// generated code is). Loading and releasing different modules concurrently is
// safe.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_MODULE_H
#define TE_RUNTIME_MODULE_H

#include "te/Runtime/Buffer.h"
#include "te/Runtime/DType.h"
#include "te/Runtime/Device.h"
#include "te/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The newest manifest version this runtime reads; it reads every version
/// from 1 up to this one.
#define TE_KERNEL_ABI_VERSION 5

/// A loaded kernel module. Opaque; reference counted.
typedef struct te_module te_module;

/// One kernel of a module. Opaque; owned by its module.
typedef struct te_kernel te_kernel;

/// Describes one kernel argument.
typedef struct te_arg_info {
  /// 1 for an output (written by the kernel), 0 for an input.
  int is_output;
  te_dtype dtype;
  int rank;
  /// `rank` dimensions, owned by the module and valid while it is alive.
  const int64_t *dims;
} te_arg_info;

/// Loads the kernel module at `path` on `device`, parses its manifest and
/// resolves every kernel symbol, storing the module in *out with a reference
/// count of one. The module holds a reference to `device`. A module is code,
/// so the file is opened once and must be a regular file (a FIFO or a
/// device is refused, never waited on) owned by the user or root, writable
/// by nobody else, in a directory only they can change (or a sticky one);
/// on the host that checked file is what dlopen(RTLD_NOW | RTLD_LOCAL)
/// loads, on the cuda device what is read (docs/Runtime.md, "Files and
/// libraries te-mlir loads"). A path without '/' is taken relative to the
/// working directory, never searched for.
/// Errors: TE_ERROR_INVALID_ARGUMENT if an argument is NULL or path is empty;
/// TE_ERROR_UNSUPPORTED if the device cannot load modules;
/// TE_ERROR_LOAD_FAILED if the file cannot be loaded (the message carries the
/// loader's reason) or is refused by those rules (the message says why), has
/// no manifest, or the manifest is malformed, has an
/// unsupported version, names an unknown dtype or a symbol the module does
/// not define (the message names the path and manifest line). *out is set to
/// NULL on error. Thread safe.
TE_RUNTIME_EXPORT te_status te_module_load(te_device *device, const char *path,
                                           te_module **out);

/// Like te_module_load, but from the `size` bytes of a module image in host
/// memory (on the host, the bytes of a shared library). The runtime does not
/// keep `image` after the call. `display_name` is used in messages and may be
/// NULL. Errors as for te_module_load. Thread safe.
TE_RUNTIME_EXPORT te_status te_module_load_image(te_device *device,
                                                 const void *image, size_t size,
                                                 const char *display_name,
                                                 te_module **out);

/// Returns the number of kernels in the module, or -1 for NULL.
TE_RUNTIME_EXPORT int te_module_num_kernels(const te_module *module);

/// Returns the entry name of kernel `index` in manifest order (owned by the
/// module), or NULL for NULL or an index out of range.
TE_RUNTIME_EXPORT const char *te_module_kernel_name(const te_module *module,
                                                    int index);

/// Returns the device the module is loaded on (a borrowed reference, valid
/// while the module is alive), or NULL for NULL.
TE_RUNTIME_EXPORT te_device *te_module_device(const te_module *module);

/// Looks up the kernel declared by `entry <entry> ...` and stores it in *out.
/// The kernel is owned by the module and valid until the module's last
/// reference is released.
/// Errors: TE_ERROR_INVALID_ARGUMENT if an argument is NULL;
/// TE_ERROR_NOT_FOUND if the module has no such entry (the message lists the
/// entries it has). *out is set to NULL on error. Thread safe.
TE_RUNTIME_EXPORT te_status te_module_get_kernel(te_module *module,
                                                 const char *entry,
                                                 te_kernel **out);

/// Adds a reference. NULL is ignored. Thread safe.
TE_RUNTIME_EXPORT void te_module_retain(te_module *module);

/// Drops a reference; the last one unloads the module (invalidating its
/// kernels) and releases the device. When its kernels keep step temporaries,
/// the last release first waits for the device (all its streams) to finish
/// with them. Do not release the last reference while another thread is
/// launching one of its kernels. NULL is ignored.
TE_RUNTIME_EXPORT void te_module_release(te_module *module);

/// Gives the module the source locations of its program's te ops, one per
/// line (`file:line:col`, as te_compiler_source_locations returns them):
/// kernels name the op a failing run-time check belongs to by number, and
/// te_kernel_launch's message shows the location instead. te_jit_load does
/// this for the modules it returns; call it before the module's kernels are
/// launched. Errors: TE_ERROR_INVALID_ARGUMENT for NULL arguments.
TE_RUNTIME_EXPORT te_status
te_module_set_source_locations(te_module *module, const char *locations);

/// Returns the kernel's entry name (owned by the module), or NULL for NULL.
TE_RUNTIME_EXPORT const char *te_kernel_name(const te_kernel *kernel);

/// Returns the number of arguments (inputs plus outputs), or -1 for NULL.
TE_RUNTIME_EXPORT int te_kernel_num_args(const te_kernel *kernel);

/// Describes argument `index` (inputs first, then outputs) in *out.
/// Errors: TE_ERROR_INVALID_ARGUMENT if kernel or out is NULL or index is
/// out of range. Thread safe.
TE_RUNTIME_EXPORT te_status te_kernel_arg(const te_kernel *kernel, int index,
                                          te_arg_info *out);

/// The role of input `index` (docs/Runtime.md, "Random inputs"): what its
/// values must be like for the kernel's te op to make sense of them
/// (`cu_seqlens:96:-1`, `positive`, ...), as recorded by the compiler, or
/// "" when any values do or for an output or an index out of range. Owned
/// by the module. Thread safe.
TE_RUNTIME_EXPORT const char *te_kernel_arg_role(const te_kernel *kernel,
                                                 int index);

/// Launches the kernel on its module's device with `args[0..nargs)`, inputs
/// then outputs, after checking every argument against the manifest. May
/// return before the kernel completes; te_buffer_read and
/// te_device_synchronize wait for it.
/// Errors (nothing is launched): TE_ERROR_INVALID_ARGUMENT if kernel is NULL,
/// nargs differs from te_kernel_num_args, args or one of its buffers is NULL,
/// a buffer is on another device than the kernel, or an output is the same
/// buffer as another argument; TE_ERROR_DTYPE_MISMATCH if an element type
/// differs; TE_ERROR_SHAPE_MISMATCH if the rank or a dimension differs. The
/// message names the argument index, the expected and the actual type, e.g.
/// "argument 2 (input): expected bf16 2x128x16x64, got f32 2x128x16x64".
/// Otherwise returns what the device's launch returns, or, for a kernel with
/// run-time checks (a `status` in its manifest), TE_ERROR_KERNEL_FAILED when
/// one failed: the kernel ran, but refused its data (an index operand out of
/// range, a library call that failed); the message names the op, its source
/// location and the operand, and the outputs are unspecified. Such a launch
/// waits for the kernel to complete. Thread safe.
TE_RUNTIME_EXPORT te_status te_kernel_launch(te_kernel *kernel,
                                             te_buffer *const *args, int nargs);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_MODULE_H
