//===- HostFeatures.h - The processor features a kernel library needs -*- C++
//-*-===//
//
// A host kernel library is machine code for the processor it was compiled
// for (the host, or TE_CPU_ARCH's): run on a processor without one of its
// instruction sets, it stops at an illegal instruction. So the library
// states what it needs: the cpu target writes, in every library, a function
//
//   const char *te_kernel_cpu_features(void);
//
// returning the features it was compiled for, comma-separated, in LLVM's
// names, limited to those this header can check (the rest of x86-64's are
// in every processor te-mlir runs on). The runtime's cpu device reads it
// when it loads the library and refuses, with the missing features named,
// a library this processor and process cannot run. AMX tiles count only
// where the OS also grants them (te/ABI/HostTiles.h).
//
// Plain C++ (te/ABI's rule): no MLIR, LLVM or runtime types.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_HOSTFEATURES_H
#define TE_ABI_HOSTFEATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace te::abi {

/// The symbol of the function a host kernel library states its features by.
inline constexpr const char *kCPUFeaturesSymbol = "te_kernel_cpu_features";

/// The features (LLVM's names) a library's list may hold, in a fixed order.
const std::vector<std::string_view> &getCheckableCPUFeatures();

/// Whether `feature` is one of getCheckableCPUFeatures().
bool isCheckableCPUFeature(std::string_view feature);

/// Whether code using `feature` runs in this process: the processor has it
/// (CPUID), the OS saves its registers (XCR0), and for AMX tiles the OS
/// granted them to this process. False for a feature that is not
/// checkable, and everywhere but on x86-64.
bool isCPUFeatureUsable(std::string_view feature);

/// Of a comma-separated `list`, the features this process cannot use (an
/// unknown name counts as one: a library from a newer compiler may need
/// something this runtime cannot check), in the list's order.
std::vector<std::string> findUnusableCPUFeatures(std::string_view list);

} // namespace te::abi

#endif // TE_ABI_HOSTFEATURES_H
