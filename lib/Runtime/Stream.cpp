//===- Stream.cpp - Streams and events, native or emulated ----------------===//
//
// On a device with the stream group every call goes to the device. On one
// without it, all work runs in order on the default stream, so a stream is
// that queue, waiting on an event is already satisfied by the order, and an
// event is reached once te_device_ops.synchronize has returned after its
// record: recording synchronizes the device and notes the time.
//
//===----------------------------------------------------------------------===//

#include "DeviceImpl.h"
#include "Error.h"
#include "StreamImpl.h"

#include <memory>

using namespace te::runtime;

namespace {

bool hasStreams(const te_device &device) {
  // Registration guarantees the group is all present or all absent.
  return device.ops->stream_create != nullptr;
}

/// A message naming the device of a stream or event.
te_status deviceFailed(const char *fn, te_device *device, te_status status) {
  return fail(status, "%s: device '%s' %d failed: %s", fn, device->name,
              device->index, te_status_string(status));
}

} // namespace

te_status te::runtime::getExecContext(te_device *device, void *stream,
                                      void **slot, std::mutex &slotMutex,
                                      void **out) {
  *out = nullptr;
  if (!device->ops->exec_context_create)
    return TE_OK;
  std::lock_guard<std::mutex> lock(slotMutex);
  if (!*slot)
    if (te_status status =
            device->ops->exec_context_create(device->instance, stream, slot))
      return fail(status,
                  "device '%s' %d could not create the execution context of "
                  "a %s stream: %s",
                  device->name, device->index, stream ? "" : "default",
                  te_status_string(status));
  *out = *slot;
  return TE_OK;
}

extern "C" te_status te_stream_create(te_device *device, te_stream **out) {
  const char *fn = "te_stream_create";
  if (out)
    *out = nullptr;
  if (!device || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !device ? "device" : "out");
  return guard(fn, [&] {
    auto stream = std::make_unique<te_stream>();
    if (hasStreams(*device))
      if (te_status status =
              device->ops->stream_create(device->instance, &stream->handle))
        return deviceFailed(fn, device, status);
    retainDevice(device);
    stream->device = device;
    *out = stream.release();
    return TE_OK;
  });
}

extern "C" te_status te_stream_synchronize(te_stream *stream) {
  const char *fn = "te_stream_synchronize";
  if (!stream)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: stream must not be NULL", fn);
  te_device *device = stream->device;
  te_status status =
      stream->handle
          ? device->ops->stream_synchronize(device->instance, stream->handle)
          : device->ops->synchronize(device->instance);
  return status ? deviceFailed(fn, device, status) : TE_OK;
}

extern "C" void te_stream_release(te_stream *stream) {
  if (!stream)
    return;
  te_device *device = stream->device;
  // The execution context may be in use by work still on the stream.
  if (stream->handle)
    (void)device->ops->stream_synchronize(device->instance, stream->handle);
  else if (stream->execContext)
    (void)device->ops->synchronize(device->instance);
  if (stream->execContext)
    device->ops->exec_context_destroy(device->instance, stream->execContext);
  // A new stream may get the same handle: nothing kept for this one
  // outlives it.
  if (stream->handle)
    forgetStreamTemporaries(device, stream->handle);
  if (stream->handle)
    device->ops->stream_destroy(device->instance, stream->handle);
  delete stream;
  releaseDevice(device);
}

extern "C" te_status te_event_create(te_device *device, te_event **out) {
  const char *fn = "te_event_create";
  if (out)
    *out = nullptr;
  if (!device || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !device ? "device" : "out");
  return guard(fn, [&] {
    auto event = std::make_unique<te_event>();
    if (hasStreams(*device))
      if (te_status status =
              device->ops->event_create(device->instance, &event->handle))
        return deviceFailed(fn, device, status);
    retainDevice(device);
    event->device = device;
    *out = event.release();
    return TE_OK;
  });
}

/// Checks that `stream` (may be NULL) belongs to `device`.
static te_status checkSameDevice(const char *fn, te_device *device,
                                 const te_stream *stream) {
  if (stream && stream->device != device)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: the stream belongs to device '%s' %d, the event to "
                "device '%s' %d",
                fn, stream->device->name, stream->device->index, device->name,
                device->index);
  return TE_OK;
}

extern "C" te_status te_event_record(te_event *event, te_stream *stream) {
  const char *fn = "te_event_record";
  if (!event)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: event must not be NULL", fn);
  te_device *device = event->device;
  if (te_status status = checkSameDevice(fn, device, stream))
    return status;
  te_status status =
      event->handle
          ? device->ops->event_record(device->instance, event->handle,
                                      stream ? stream->handle : nullptr)
          : device->ops->synchronize(device->instance);
  if (status)
    return deviceFailed(fn, device, status);
  event->reachedAt = std::chrono::steady_clock::now();
  event->recorded = true;
  return TE_OK;
}

extern "C" te_status te_stream_wait_event(te_stream *stream, te_event *event) {
  const char *fn = "te_stream_wait_event";
  if (!event)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: event must not be NULL", fn);
  te_device *device = event->device;
  if (te_status status = checkSameDevice(fn, device, stream))
    return status;
  // Emulated: one queue in order, so later work already follows the event.
  if (!event->handle)
    return TE_OK;
  if (te_status status = device->ops->stream_wait_event(
          device->instance, stream ? stream->handle : nullptr, event->handle))
    return deviceFailed(fn, device, status);
  return TE_OK;
}

extern "C" te_status te_event_synchronize(te_event *event) {
  const char *fn = "te_event_synchronize";
  if (!event)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: event must not be NULL", fn);
  if (!event->recorded)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: the event was never recorded; call te_event_record first",
                fn);
  te_device *device = event->device;
  if (!event->handle)
    return TE_OK;
  if (te_status status =
          device->ops->event_synchronize(device->instance, event->handle))
    return deviceFailed(fn, device, status);
  return TE_OK;
}

extern "C" te_status te_event_elapsed_ms(te_event *start, te_event *end,
                                         float *milliseconds) {
  const char *fn = "te_event_elapsed_ms";
  if (!start || !end || !milliseconds)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !start ? "start"
                : !end ? "end"
                       : "milliseconds");
  if (start->device != end->device)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: the events belong to devices '%s' %d and '%s' %d", fn,
                start->device->name, start->device->index, end->device->name,
                end->device->index);
  if (!start->recorded || !end->recorded)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: the %s event was never recorded; call te_event_record "
                "first",
                fn, !start->recorded ? "start" : "end");
  te_device *device = start->device;
  if (!start->handle) {
    *milliseconds = std::chrono::duration<float, std::milli>(end->reachedAt -
                                                             start->reachedAt)
                        .count();
    return TE_OK;
  }
  if (te_status status = device->ops->event_elapsed_ms(
          device->instance, start->handle, end->handle, milliseconds))
    return deviceFailed(fn, device, status);
  return TE_OK;
}

extern "C" void te_event_release(te_event *event) {
  if (!event)
    return;
  te_device *device = event->device;
  if (event->handle)
    device->ops->event_destroy(device->instance, event->handle);
  delete event;
  releaseDevice(device);
}
