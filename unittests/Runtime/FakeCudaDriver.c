/*===- FakeCudaDriver.c - A CUDA driver stand-in for the cuda device tests ===*\
|*                                                                            *|
|* What the cuda device (lib/Runtime/CUDADevice.cpp) asks of libcuda.so.1,   *|
|* over host memory, so that the device's plumbing is tested where there is  *|
|* no GPU: entry points come only through cuGetProcAddress_v2, every call    *|
|* but the device queries fails unless a context is current, modules are     *|
|* "FAKECUBIN\n" followed by a manifest, and the one kernel, fake_double,    *|
|* doubles four floats. FAKE_CUDA_DEVICES (default 1) is how many GPUs it    *|
|* has; 0 makes cuInit report none. FAKE_CUDA_COMPUTE_CAPABILITY (default    *|
|* 90) is their compute capability, major and minor digits.                 *|
\*===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoDevice = 100,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kNotFound = 500,
};

static int devices = 1;
static int primaryContext;
static int contextDepth;
static int liveAllocations;
static int liveContexts;
static int launches;
static unsigned lastGrid[3], lastBlock[3];

EXPORT int fake_cuda_live_allocations(void) { return liveAllocations; }
EXPORT int fake_cuda_live_contexts(void) { return liveContexts; }
EXPORT int fake_cuda_launches(void) { return launches; }
EXPORT unsigned fake_cuda_last_grid_x(void) { return lastGrid[0]; }
EXPORT unsigned fake_cuda_last_block_x(void) { return lastBlock[0]; }

#define NEED_CONTEXT                                                           \
  if (contextDepth <= 0)                                                       \
  return kInvalidContext

static CUresult cuInit(unsigned flags) {
  (void)flags;
  const char *count = getenv("FAKE_CUDA_DEVICES");
  devices = count ? atoi(count) : 1;
  return devices > 0 ? kSuccess : kNoDevice;
}
static CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return kSuccess;
}
static CUresult cuGetErrorString(CUresult result, const char **text) {
  static char buffer[64];
  snprintf(buffer, sizeof(buffer), "fake driver error %d", result);
  *text = buffer;
  return kSuccess;
}
static CUresult cuDeviceGetCount(int *count) {
  *count = devices;
  return kSuccess;
}
static CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= devices)
    return kInvalidValue;
  *device = ordinal;
  return kSuccess;
}
static CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  const char *capability = getenv("FAKE_CUDA_COMPUTE_CAPABILITY");
  int digits = capability ? atoi(capability) : 90;
  *value = attribute == 75 ? digits / 10 : attribute == 76 ? digits % 10 : 0;
  return kSuccess;
}
static CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  ++liveContexts;
  *context = &primaryContext;
  return kSuccess;
}
static CUresult cuDevicePrimaryCtxRelease(int device) {
  (void)device;
  --liveContexts;
  return kSuccess;
}
static CUresult cuCtxPushCurrent(void *context) {
  if (context != &primaryContext)
    return kInvalidContext;
  ++contextDepth;
  return kSuccess;
}
static CUresult cuCtxPopCurrent(void **context) {
  if (contextDepth <= 0)
    return kInvalidContext;
  --contextDepth;
  *context = &primaryContext;
  return kSuccess;
}
static CUresult cuCtxSynchronize(void) {
  NEED_CONTEXT;
  return kSuccess;
}
static CUresult cuMemAlloc(CUdeviceptr *pointer, size_t size) {
  NEED_CONTEXT;
  if (size > ((size_t)1 << 40))
    return kOutOfMemory;
  void *memory = aligned_alloc(256, (size + 255) / 256 * 256);
  if (!memory)
    return kOutOfMemory;
  ++liveAllocations;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  return kSuccess;
}
static CUresult cuMemFree(CUdeviceptr pointer) {
  NEED_CONTEXT;
  --liveAllocations;
  free((void *)(uintptr_t)pointer);
  return kSuccess;
}
static CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  NEED_CONTEXT;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return kSuccess;
}
static CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  NEED_CONTEXT;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return kSuccess;
}
static CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  NEED_CONTEXT;
  memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return kSuccess;
}
static CUresult cuStreamCreate(void **stream, unsigned flags) {
  NEED_CONTEXT;
  (void)flags;
  *stream = malloc(1);
  return kSuccess;
}
static CUresult cuStreamDestroy(void *stream) {
  NEED_CONTEXT;
  free(stream);
  return kSuccess;
}
static CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  NEED_CONTEXT;
  return kSuccess;
}
static CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)stream, (void)event, (void)flags;
  NEED_CONTEXT;
  return kSuccess;
}
/* An event's time is the number of launches before its record, in ms. */
static CUresult cuEventCreate(void **event, unsigned flags) {
  NEED_CONTEXT;
  (void)flags;
  *event = calloc(1, sizeof(float));
  return kSuccess;
}
static CUresult cuEventDestroy(void *event) {
  NEED_CONTEXT;
  free(event);
  return kSuccess;
}
static CUresult cuEventRecord(void *event, void *stream) {
  (void)stream;
  NEED_CONTEXT;
  *(float *)event = (float)launches;
  return kSuccess;
}
static CUresult cuEventSynchronize(void *event) {
  (void)event;
  NEED_CONTEXT;
  return kSuccess;
}
static CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  NEED_CONTEXT;
  *ms = *(float *)end - *(float *)start;
  return kSuccess;
}

typedef struct {
  char *manifest;
} FakeModule;

static const char kMagic[] = "FAKECUBIN\n";

static CUresult cuModuleLoadData(void **module, const void *image) {
  NEED_CONTEXT;
  if (strncmp((const char *)image, kMagic, sizeof(kMagic) - 1) != 0)
    return kInvalidImage;
  FakeModule *loaded = malloc(sizeof(FakeModule));
  loaded->manifest = strdup((const char *)image + sizeof(kMagic) - 1);
  *module = loaded;
  return kSuccess;
}
static CUresult cuModuleUnload(void *module) {
  NEED_CONTEXT;
  free(((FakeModule *)module)->manifest);
  free(module);
  return kSuccess;
}
static CUresult cuModuleGetGlobal(CUdeviceptr *pointer, size_t *size,
                                  void *module, const char *name) {
  NEED_CONTEXT;
  FakeModule *loaded = module;
  if (strcmp(name, "te_kernel_manifest") != 0 || !*loaded->manifest)
    return kNotFound;
  *pointer = (CUdeviceptr)(uintptr_t)loaded->manifest;
  *size = strlen(loaded->manifest) + 1;
  return kSuccess;
}

static void fakeDouble(void **params) {
  const float *input = (const float *)(uintptr_t)*(CUdeviceptr *)params[0];
  float *output = (float *)(uintptr_t)*(CUdeviceptr *)params[1];
  for (int i = 0; i < 4; ++i)
    output[i] = 2 * input[i];
}

static CUresult cuModuleGetFunction(void **function, void *module,
                                    const char *name) {
  (void)module;
  NEED_CONTEXT;
  if (strcmp(name, "fake_double") != 0)
    return kNotFound;
  *function = (void *)&fakeDouble;
  return kSuccess;
}
static CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned sharedBytes, void *stream,
                               void **params, void **extra) {
  (void)gy, (void)gz, (void)by, (void)bz, (void)sharedBytes, (void)stream;
  (void)extra;
  NEED_CONTEXT;
  if (function != (void *)&fakeDouble)
    return kInvalidValue;
  lastGrid[0] = gx;
  lastBlock[0] = bx;
  ++launches;
  fakeDouble(params);
  return kSuccess;
}

#define ENTRY(name) {#name, (void *)&name}
static const struct {
  const char *name;
  void *function;
} kEntries[] = {
    ENTRY(cuInit),
    ENTRY(cuDriverGetVersion),
    ENTRY(cuGetErrorString),
    ENTRY(cuDeviceGetCount),
    ENTRY(cuDeviceGet),
    ENTRY(cuDeviceGetAttribute),
    ENTRY(cuDevicePrimaryCtxRetain),
    ENTRY(cuDevicePrimaryCtxRelease),
    ENTRY(cuCtxPushCurrent),
    ENTRY(cuCtxPopCurrent),
    ENTRY(cuCtxSynchronize),
    ENTRY(cuMemAlloc),
    ENTRY(cuMemFree),
    ENTRY(cuMemcpyHtoD),
    ENTRY(cuMemcpyDtoH),
    ENTRY(cuMemcpyDtoD),
    ENTRY(cuStreamCreate),
    ENTRY(cuStreamDestroy),
    ENTRY(cuStreamSynchronize),
    ENTRY(cuStreamWaitEvent),
    ENTRY(cuEventCreate),
    ENTRY(cuEventDestroy),
    ENTRY(cuEventRecord),
    ENTRY(cuEventSynchronize),
    ENTRY(cuEventElapsedTime),
    ENTRY(cuModuleLoadData),
    ENTRY(cuModuleUnload),
    ENTRY(cuModuleGetFunction),
    ENTRY(cuModuleGetGlobal),
    ENTRY(cuLaunchKernel),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **function,
                                    int version, unsigned long long flags,
                                    int *status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i)
    if (strcmp(kEntries[i].name, symbol) == 0) {
      *function = kEntries[i].function;
      if (status)
        *status = 0;
      return kSuccess;
    }
  *function = NULL;
  if (status)
    *status = 1;
  return kNotFound;
}
