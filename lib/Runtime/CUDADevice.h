//===- CUDADevice.h - The built-in cuda device ------------------*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_CUDADEVICE_H
#define TE_LIB_RUNTIME_CUDADEVICE_H

#include "te/Runtime/Device.h"

namespace te::runtime {

/// NVIDIA GPUs through the CUDA driver API, opened at run time (libcuda.so.1,
/// or the library TE_CUDA_DRIVER names). Registered as "cuda" like any
/// plugin would be; without a driver it has no instances, and opening it
/// says why.
const te_device_ops &getCUDADeviceOps();

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_CUDADEVICE_H
