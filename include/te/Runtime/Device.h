//===- Device.h - Device plugin interface and device registry -----*- C -*-===//
//
// Every device the runtime drives -- the built-in host CPU, CUDA GPUs, vendor
// accelerators -- is described by the same C function table, te_device_ops,
// and registered by name. The generic runtime (buffers, modules, launches)
// only ever calls through that table, so a plugin gets exactly the
// capabilities the host device has. The host CPU is registered as "cpu" before
// the first registry access.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_DEVICE_H
#define TE_RUNTIME_DEVICE_H

#include "te/Runtime/Status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct te_launch_config;
struct te_channel_spec;
struct te_collective_desc;

/// Operations a device implements. A plugin fills one in and passes it to
/// te_device_register.
///
/// Versioning: struct_size must be set to sizeof(te_device_ops) as the plugin
/// saw it. Versions only append fields: a table from a newer plugin is
/// accepted (the runtime ignores what it does not know), and so is one from
/// an older plugin, down to the first version's (TE_DEVICE_OPS_V1_SIZE,
/// ending at `synchronize`): the fields it lacks read as NULL. Version 2
/// appended the stream group and the execution context pair, and gave
/// `launch` its te_launch_config; version 3 target_arch; version 4
/// library_call; version 5 the collective group.
///
/// Contexts: `context` is the pointer given to te_device_register. Each opened
/// device instance has its own `instance` pointer: what `open` returned for it,
/// or `context` itself when `open` is NULL. All entries except device_count
/// and open receive the instance.
///
/// Threading: the runtime may call any entry from several threads at once, on
/// the same or on different instances; a plugin synchronizes internally.
///
/// Errors: entries return TE_OK or a te_status describing the failure; the
/// runtime adds context (device name, sizes, paths) to its own message.
///
/// Required entries: allocate, free, copy_to_device, copy_to_host,
/// copy_device_to_device, synchronize. The module entries (load_module,
/// unload_module, get_manifest, get_function, launch) are optional as a group:
/// all present, or all NULL for a device that only stores buffers (loading a
/// module then fails with TE_ERROR_UNSUPPORTED). The stream group (the nine
/// stream_* and event_* entries), the exec_context pair and the collective
/// group are optional as groups too; the other entries are optional
/// individually.
typedef struct te_device_ops {
  /// sizeof(te_device_ops) as compiled into the plugin.
  size_t struct_size;
  /// Registry name, e.g. "cpu" or "cuda": 1 to 63 characters from
  /// [A-Za-z0-9_.-]. Copied at registration.
  const char *name;

  /// Optional. Number of instances (for example GPUs) present; negative or
  /// zero means none. NULL means exactly one, index 0.
  int (*device_count)(void *context);
  /// Optional. Prepares instance `index` (0 <= index < device_count) and
  /// stores its state in *instance. NULL means the instance is `context`.
  /// device_count and open run with the registry locked, so they must not
  /// call te_device_register or te_device_open.
  te_status (*open)(void *context, int index, void **instance);
  /// Optional. Releases what `open` prepared, after the last buffer and
  /// module of the instance are gone.
  void (*close)(void *instance);

  /// Allocates `size` (> 0) bytes aligned to `alignment` (a power of two) and
  /// stores the device address in *ptr. Returns TE_ERROR_OUT_OF_MEMORY when
  /// the memory is not available.
  te_status (*allocate)(void *instance, size_t size, size_t alignment,
                        void **ptr);
  /// Frees memory from allocate. Never called with NULL.
  void (*free)(void *instance, void *ptr);
  /// Copies `bytes` from host memory to device memory. The data must be
  /// visible to kernels launched after this returns.
  te_status (*copy_to_device)(void *instance, void *device_dst,
                              const void *host_src, size_t bytes);
  /// Copies `bytes` from device memory to host memory. Blocks until the copy
  /// is complete and ordered after every kernel launched before the call.
  te_status (*copy_to_host)(void *instance, void *host_dst,
                            const void *device_src, size_t bytes);
  /// Copies `bytes` between two non-overlapping device allocations, ordered
  /// after earlier launches and copies.
  te_status (*copy_device_to_device)(void *instance, void *device_dst,
                                     const void *device_src, size_t bytes);
  /// Optional. Returns the host address of device memory that the host can
  /// read and write directly, or NULL if `device_ptr` is not host visible.
  /// NULL means no memory of this device is host visible.
  void *(*host_pointer)(void *instance, void *device_ptr);

  /// Loads a kernel module, either from the file `path` (when `image` is NULL)
  /// or from the `image_size` bytes at `image` (when `path` is NULL), and
  /// stores an opaque handle in *module. On failure writes a NUL-terminated
  /// reason of at most error_size bytes to `error` and returns
  /// TE_ERROR_LOAD_FAILED (or TE_ERROR_OUT_OF_MEMORY).
  te_status (*load_module)(void *instance, const char *path, const void *image,
                           size_t image_size, void **module, char *error,
                           size_t error_size);
  /// Unloads a module from load_module.
  void (*unload_module)(void *instance, void *module);
  /// Stores in *text the module's NUL-terminated kernel manifest (see
  /// Module.h), which must stay valid until the module is unloaded. Returns
  /// TE_ERROR_NOT_FOUND if the module carries no manifest.
  te_status (*get_manifest)(void *instance, void *module, const char **text);
  /// Looks up a kernel defined by the module itself (not by a library it
  /// depends on) and stores an opaque handle in *function. Returns
  /// TE_ERROR_NOT_FOUND if there is none.
  te_status (*get_function)(void *instance, void *module, const char *symbol,
                            void **function);
  /// Runs `function` with `nargs` arguments; args[i] is the device address of
  /// argument i's buffer (inputs first, then outputs, as in the manifest).
  /// `config` is a `const te_launch_config *` (stream, execution context,
  /// geometry) for a table of version 2 or later, and NULL for a version 1
  /// table. May return before the kernel completes; copy_to_host and
  /// synchronize wait for it.
  te_status (*launch)(void *instance, void *function, void **args, int nargs,
                      const void *config);
  /// Blocks until every launch and copy issued to the instance is complete.
  te_status (*synchronize)(void *instance);

  /* ---- Version 2: streams, events and per-launch execution contexts. ---- */

  /// Stream group (all nine or none). A stream is an ordered queue of
  /// launches; work on different streams may overlap. NULL as a stream
  /// argument is the device's default stream, which every version 1 entry
  /// (copies, launches without a stream) uses. A device without the group
  /// runs everything in order on its default stream, and the runtime
  /// emulates streams and events on top of synchronize.
  te_status (*stream_create)(void *instance, void **stream);
  void (*stream_destroy)(void *instance, void *stream);
  /// Blocks until everything issued to `stream` is complete.
  te_status (*stream_synchronize)(void *instance, void *stream);
  te_status (*event_create)(void *instance, void **event);
  void (*event_destroy)(void *instance, void *event);
  /// Marks the point in `stream` reached when everything issued to it so
  /// far is complete.
  te_status (*event_record)(void *instance, void *event, void *stream);
  /// Makes later work on `stream` wait for `event` (without blocking the
  /// host).
  te_status (*stream_wait_event)(void *instance, void *stream, void *event);
  /// Blocks until `event` is reached.
  te_status (*event_synchronize)(void *instance, void *event);
  /// The milliseconds between two reached events.
  te_status (*event_elapsed_ms)(void *instance, void *start, void *end,
                                float *milliseconds);

  /// Execution context pair (both or none): what kernels of this device
  /// need at launch besides their buffers -- library handles (cuDNN,
  /// cuBLASLt) bound to a stream, workspace memory. The runtime creates one
  /// per stream it launches on (NULL: the default stream) when it first
  /// launches there, passes it in te_launch_config, and destroys it with
  /// the stream (the default stream's with the instance, before close).
  te_status (*exec_context_create)(void *instance, void *stream,
                                   void **exec_context);
  void (*exec_context_destroy)(void *instance, void *exec_context);

  /* ---- Version 3. ---- */

  /// The arch the instance's kernels are best compiled for, as its
  /// target names archs (a GPU's "sm_90a"), or NULL when it has no single
  /// one (may itself be NULL). The string lives as long as the instance.
  const char *(*target_arch)(void *instance);

  /* ---- Version 4. ---- */

  /// Optional. Runs a library call of a module's steps (a manifest `call`
  /// line, te/Runtime/Module.h) on `config`'s stream: `function` names it
  /// ("cublaslt.matmul"), `parameters` is its key=value list, `args` the
  /// device addresses of its `nargs` operands and `sizes` their byte sizes
  /// (the manifest is untrusted: the device checks that the parameters fit
  /// the buffers). Invalid parameters or a library that is missing fail
  /// with TE_ERROR_UNSUPPORTED and a detail saying what to do. NULL:
  /// modules with library calls do not load.
  te_status (*library_call)(void *instance, const char *function,
                            const char *parameters, void **args,
                            const size_t *sizes, int nargs,
                            const struct te_launch_config *config);

  /* ---- Version 5: collectives (te/Runtime/Collective.h). ---- */

  /// Collective group (all four or none). `world` gives this process's
  /// rank in the device's world and the world's size, starting the
  /// device's collective library on first use. `channel_create` makes the
  /// communicator of the group `spec` puts this rank in; every rank of the
  /// world calls it for the same specs in the same order (it may
  /// communicate). `collective` runs one collective on a channel from
  /// `input` into `output` (device addresses; the runtime checked their
  /// sizes against `desc`), ordered on `config`'s stream. It checks that
  /// the group's ranks agree on `desc` and fails on every rank, naming the
  /// group and both shapes, when they do not (TE_ERROR_SHAPE_MISMATCH);
  /// it never waits longer than the spec's timeout for a rank that does
  /// not arrive: it fails then, or, where its library cannot give up on a
  /// call (MPI), ends the process with a message (the cpu device). A
  /// failed channel keeps failing. Errors say what happened through the
  /// returned status (TE_ERROR_KERNEL_FAILED for the group's failures,
  /// TE_ERROR_UNSUPPORTED when the library is missing).
  te_status (*world)(void *instance, int *rank, int *size);
  te_status (*channel_create)(void *instance,
                              const struct te_channel_spec *spec,
                              void **channel);
  void (*channel_destroy)(void *instance, void *channel);
  te_status (*collective)(void *instance, void *channel,
                          const struct te_collective_desc *desc,
                          const void *input, void *output,
                          const struct te_launch_config *config);
} te_device_ops;

/// The size of a version 1 table (everything up to `synchronize`): the
/// smallest struct_size te_device_register accepts.
#define TE_DEVICE_OPS_V1_SIZE                                                  \
  (offsetof(te_device_ops, synchronize) + sizeof(void *))

/// How one launch runs: what te_device_ops.launch receives as `config` on a
/// version 2 table.
typedef struct te_launch_config {
  /// sizeof(te_launch_config) as the runtime was compiled; fields are only
  /// appended.
  size_t struct_size;
  /// Blocks per grid and threads per block, from the kernel's manifest
  /// (its `launch` line); all zero when the manifest gives none (host
  /// kernels, or a device that chooses itself).
  unsigned grid[3];
  unsigned block[3];
  /// Dynamic shared memory per block, in bytes.
  size_t shared_memory_bytes;
  /// The stream (from stream_create), or NULL for the default stream.
  void *stream;
  /// The stream's execution context (from exec_context_create), or NULL
  /// when the device has none.
  void *exec_context;
} te_launch_config;

/// An opened device instance. Opaque; reference counted.
typedef struct te_device te_device;

/// Adds a device type to the process-wide registry. The table is copied, so
/// `ops` may be freed afterwards; `context` and the code behind the function
/// pointers must stay valid for the rest of the process (there is no
/// unregistration).
/// Errors: TE_ERROR_INVALID_ARGUMENT if ops is NULL, struct_size is smaller
/// than this header's te_device_ops, the name is missing or malformed, a
/// required entry is NULL, the module entries are only partly present, or a
/// device of that name is already registered. Thread safe.
TE_RUNTIME_EXPORT te_status te_device_register(const te_device_ops *ops,
                                               void *context);

/// Opens instance `index` of the device registered as `name` and stores a new
/// reference in *out. Opening the same name and index again while a reference
/// is held returns the same te_device.
/// Errors: TE_ERROR_INVALID_ARGUMENT if name or out is NULL or index is
/// negative; TE_ERROR_NOT_FOUND if no device of that name is registered (the
/// message lists the registered ones) or index is not below its instance
/// count; whatever the device's open entry returns. *out is set to NULL on
/// error. Thread safe.
TE_RUNTIME_EXPORT te_status te_device_open(const char *name, int index,
                                           te_device **out);

/// Returns the registry name the device was opened with, or NULL for NULL.
/// The string lives as long as the process. Thread safe.
TE_RUNTIME_EXPORT const char *te_device_name(const te_device *device);

/// 1 when `device`'s memory is the host's: an address of host memory is a
/// device address, so te_buffer_wrap takes any host array (the cpu
/// device); else 0 (memory the host reaches only through copies), and 0
/// for NULL. Probed once: the host sees an allocation of the device at the
/// allocation's own address (host_pointer is the identity). A device whose
/// allocations are host-mapped but whose kernels cannot read ordinary
/// (pageable) host memory must not make host_pointer the identity. Thread
/// safe.
TE_RUNTIME_EXPORT int te_device_host_memory(te_device *device);

/// Returns the instance index the device was opened with, or -1 for NULL.
/// Thread safe.
TE_RUNTIME_EXPORT int te_device_index(const te_device *device);

/// Returns the arch the device's kernels are best compiled for (the cuda
/// device's GPU: "sm_80", "sm_89", "sm_90a", ...), or NULL for NULL and for
/// devices that do not say (the host, version 1 and 2 tables). The string
/// lives as long as the device. Thread safe.
TE_RUNTIME_EXPORT const char *te_device_target_arch(const te_device *device);

/// Blocks until all work issued to the device is complete.
/// Errors: TE_ERROR_INVALID_ARGUMENT for NULL; whatever the device's
/// synchronize entry returns. Thread safe.
TE_RUNTIME_EXPORT te_status te_device_synchronize(te_device *device);

/// Drops a reference from te_device_open. Buffers and modules hold their own
/// references, so the instance is closed only once they are released too.
/// NULL is ignored. Thread safe.
TE_RUNTIME_EXPORT void te_device_release(te_device *device);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_DEVICE_H
