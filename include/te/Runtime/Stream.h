//===- Stream.h - Streams, events and launches on a stream --------*- C -*-===//
//
// A stream is an ordered queue of work on one device; work on different
// streams may overlap, and events order work across streams and time it.
// A device whose te_device_ops has the stream group (a GPU) runs streams
// natively; on any other device (the host CPU, a plugin without streams)
// the runtime gives the same API with every stream being the device's one
// queue: launches run in order, and an event is reached when the device
// has synchronized up to it.
//
// Each stream carries the device's execution context for it (library
// handles, workspace; te_device_ops.exec_context_create), created at its
// first launch and destroyed with the stream.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_STREAM_H
#define TE_RUNTIME_STREAM_H

#include "te/Runtime/Buffer.h"
#include "te/Runtime/Device.h"
#include "te/Runtime/Module.h"
#include "te/Runtime/Status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A stream of one device. Holds a reference to its device.
typedef struct te_stream te_stream;
/// An event of one device. Holds a reference to its device.
typedef struct te_event te_event;

/// Creates a stream on `device` and stores it in *out (NULL on error).
/// Errors: TE_ERROR_INVALID_ARGUMENT for NULL arguments; whatever the
/// device's stream_create returns.
TE_RUNTIME_EXPORT te_status te_stream_create(te_device *device,
                                             te_stream **out);

/// Blocks until everything issued to `stream` is complete.
TE_RUNTIME_EXPORT te_status te_stream_synchronize(te_stream *stream);

/// Destroys the stream after the work issued to it is complete, with its
/// execution context. NULL is ignored.
TE_RUNTIME_EXPORT void te_stream_release(te_stream *stream);

/// Creates an event on `device` and stores it in *out (NULL on error).
TE_RUNTIME_EXPORT te_status te_event_create(te_device *device, te_event **out);

/// Records `event` on `stream` (NULL: the device's default stream): the
/// event is reached when everything issued there so far is complete.
/// Errors: TE_ERROR_INVALID_ARGUMENT when the stream belongs to another
/// device.
TE_RUNTIME_EXPORT te_status te_event_record(te_event *event, te_stream *stream);

/// Makes work issued to `stream` (NULL: the default stream) after this call
/// wait for `event`, without blocking the caller.
TE_RUNTIME_EXPORT te_status te_stream_wait_event(te_stream *stream,
                                                 te_event *event);

/// Blocks until `event` is reached.
/// Errors: TE_ERROR_INVALID_ARGUMENT when it was never recorded.
TE_RUNTIME_EXPORT te_status te_event_synchronize(te_event *event);

/// Stores in *milliseconds the time between two reached events of one
/// device. Errors: TE_ERROR_INVALID_ARGUMENT when either was never recorded
/// or they belong to different devices.
TE_RUNTIME_EXPORT te_status te_event_elapsed_ms(te_event *start, te_event *end,
                                                float *milliseconds);

/// Destroys the event. NULL is ignored.
TE_RUNTIME_EXPORT void te_event_release(te_event *event);

/// te_kernel_launch on `stream` (NULL: the default stream): the arguments
/// are checked the same way, the launch gets the stream and its execution
/// context, and the call may return before the kernel completes. A kernel
/// with run-time checks (Module.h) is the exception: its status is read
/// after the stream has completed it, so the call waits.
/// Errors: as te_kernel_launch; TE_ERROR_INVALID_ARGUMENT when the stream
/// belongs to another device than the kernel's module.
TE_RUNTIME_EXPORT te_status te_kernel_launch_on(te_kernel *kernel,
                                                te_buffer *const *args,
                                                int nargs, te_stream *stream);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_STREAM_H
