/*===- RuntimePluginFixture.c - Runtime plugins, good and broken ----------===*\
|*                                                                            *|
|* Compiled once per fixture (RUNTIME_FIXTURE_<KIND>): the good one offers    *|
|* two host-memory devices; each broken one fails one check of                *|
|* te_runtime_load_plugin.                                                    *|
\*===----------------------------------------------------------------------===*/

#include "te/Runtime/Plugin.h"

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static te_status allocate(void *instance, size_t size, size_t alignment,
                          void **ptr) {
  (void)instance;
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  *ptr = aligned_alloc(alignment < 16 ? 16 : alignment, rounded);
  return *ptr ? TE_OK : TE_ERROR_OUT_OF_MEMORY;
}
static void release(void *instance, void *ptr) {
  (void)instance;
  free(ptr);
}
static te_status copy(void *instance, void *dst, const void *src,
                      size_t bytes) {
  (void)instance;
  memcpy(dst, src, bytes);
  return TE_OK;
}
static te_status synchronize(void *instance) {
  (void)instance;
  return TE_OK;
}
static void *hostPointer(void *instance, void *ptr) {
  (void)instance;
  return ptr;
}

#define DEVICE(NAME, SYNCHRONIZE)                                              \
  {sizeof(te_device_ops),                                                      \
   NAME,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   allocate,                                                                   \
   release,                                                                    \
   copy,                                                                       \
   copy,                                                                       \
   copy,                                                                       \
   hostPointer,                                                                \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   SYNCHRONIZE, /* Version 2: no streams (the runtime emulates them), no       \
                   contexts. */                                                \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL, /* Version 3: no target arch. */                                      \
   NULL, /* Version 4: no library calls. */                                    \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL,                                                                       \
   NULL /* Version 5: no collectives. */}

static const te_device_ops deviceA = DEVICE("fixture_mem_a", synchronize);
#if defined(RUNTIME_FIXTURE_INVALID_SECOND)
/* No synchronize: the whole plugin must be refused, deviceA included. */
static const te_device_ops deviceB = DEVICE("fixture_mem_b", NULL);
#elif defined(RUNTIME_FIXTURE_TAKEN_NAME)
static const te_device_ops deviceB = DEVICE("cpu", synchronize);
#else
__attribute__((unused)) static const te_device_ops deviceB =
    DEVICE("fixture_mem_b", synchronize);
#endif
#if defined(RUNTIME_FIXTURE_NULL_TABLE)
/* A hole in the list: refused whole. */
__attribute__((unused)) static const te_device_ops *const devices[] = {&deviceA,
                                                                       NULL};
#else
__attribute__((unused)) static const te_device_ops *const devices[] = {
    &deviceA, &deviceB};
#endif

#if !defined(RUNTIME_FIXTURE_MISSING_SYMBOL)
EXPORT const te_runtime_plugin_info *te_runtime_plugin_query(uint32_t major,
                                                             uint32_t minor) {
  (void)major;
  (void)minor;
#if defined(RUNTIME_FIXTURE_QUERY_NULL)
  /* Refuses every runtime. */
  return NULL;
#endif
  static const te_runtime_plugin_info info = {
#if defined(RUNTIME_FIXTURE_SMALL_STRUCT)
      8,
#else
      sizeof(te_runtime_plugin_info),
#endif
#if defined(RUNTIME_FIXTURE_ABI_MAJOR)
      TE_RUNTIME_PLUGIN_ABI_MAJOR + 1,
#else
      TE_RUNTIME_PLUGIN_ABI_MAJOR,
#endif
#if defined(RUNTIME_FIXTURE_ABI_MINOR)
      99,
#else
      TE_RUNTIME_PLUGIN_ABI_MINOR,
#endif
      "fixture",
      "1.0",
      2,
#if defined(RUNTIME_FIXTURE_NO_TABLES)
      NULL,
#else
      devices,
#endif
      NULL};
  return &info;
}
#else
EXPORT int te_fixture_something_else(void) { return 0; }
#endif
