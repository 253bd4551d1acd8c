//===- Threads.cpp - Host threads of CPU kernels --------------------------===//

#include "te/Runtime/Threads.h"

#include "Error.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sched.h>
#include <unistd.h>

using namespace te::runtime;

namespace {

constexpr int kMaxThreads = 4096;

/// The CPUs this process may run on.
int availableCPUs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0)
      return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

/// TE_NUM_THREADS, else availableCPUs(); computed once.
int defaultThreads() {
  static const int threads = [] {
    const char *text = std::getenv("TE_NUM_THREADS");
    if (text && *text) {
      char *end = nullptr;
      errno = 0;
      long value = std::strtol(text, &end, 10);
      if (errno == 0 && *end == '\0' && value >= 1 && value <= kMaxThreads)
        return static_cast<int>(value);
      int cpus = availableCPUs();
      std::fprintf(stderr,
                   "te-mlir: ignoring TE_NUM_THREADS='%s': not a whole number "
                   "from 1 to %d; using %d (the CPUs this process may use)\n",
                   text, kMaxThreads, cpus);
      return cpus;
    }
    return availableCPUs();
  }();
  return threads;
}

/// What te_set_num_threads set; 0: the default.
std::atomic<int> chosenThreads{0};

} // namespace

te_status te_set_num_threads(int num_threads) {
  if (num_threads < 0 || num_threads > kMaxThreads)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "te_set_num_threads: %d threads; give 1 to %d, or 0 for the "
                "default",
                num_threads, kMaxThreads);
  chosenThreads.store(num_threads, std::memory_order_relaxed);
  return TE_OK;
}

int te_get_num_threads(void) {
  int chosen = chosenThreads.load(std::memory_order_relaxed);
  return chosen > 0 ? chosen : defaultThreads();
}
