//===- ManifestEcho.c - A kernel library whose manifest tests choose ------===//
//
// The manifest parser must reject every malformed manifest with a useful
// message. Rather than one library per case, the tests open this library
// themselves, set the text te_kernel_manifest returns, then load it through
// the runtime (dlopen hands both the same copy). The processor features it
// states (te_kernel_cpu_features) are the tests' choice too: none until set.
//
//===----------------------------------------------------------------------===//

#define EXPORT __attribute__((visibility("default")))

static const char *manifest = "";

EXPORT void te_test_set_manifest(const char *text) { manifest = text; }

EXPORT const char *te_kernel_manifest(void) { return manifest; }

static const char *cpuFeatures = 0;

EXPORT void te_test_set_cpu_features(const char *list) { cpuFeatures = list; }

EXPORT const char *te_kernel_cpu_features(void) { return cpuFeatures; }

EXPORT void te_test_echo_noop(void **args) { (void)args; }

/* A symbol that exists but is not a function. */
EXPORT int te_test_echo_data = 42;
