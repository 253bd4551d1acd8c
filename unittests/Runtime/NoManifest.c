//===- NoManifest.c - A shared library without te_kernel_manifest ---------===//

__attribute__((visibility("default"))) void te_test_orphan(void **args) {
  (void)args;
}
