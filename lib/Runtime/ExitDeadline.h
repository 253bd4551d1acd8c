//===- ExitDeadline.h - Ending a rank that waits too long -------*- C++ -*-===//
//
// Some calls of a collective library wait for every rank of the job and
// cannot be abandoned: NCCL's blocking communicator creation, MPI's
// initialization (which waits until every rank has started MPI). A rank that
// never comes would keep the others waiting forever; instead, a rank that waits
// longer than TE_COLLECTIVE_TIMEOUT ends itself with a message and exit status
// 2, which makes the job's launcher end the job.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_EXITDEADLINE_H
#define TE_LIB_RUNTIME_EXITDEADLINE_H

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace te::runtime {

/// Ends the process, printing "te-mlir: error: <message>", unless it is
/// destroyed within `seconds`. Meant for calls made once per group, not
/// per collective: it starts a thread.
class ExitDeadline {
public:
  ExitDeadline(double seconds, std::string message)
      : watcher([this, seconds, message = std::move(message)] {
          std::unique_lock<std::mutex> lock(mutex);
          // Bounded as te_collective_timeout is: a duration in
          // nanoseconds must not overflow.
          double bounded = seconds < 1e6 ? seconds : 1e6;
          if (finished.wait_for(lock, std::chrono::duration<double>(bounded),
                                [this] { return done; }))
            return;
          std::fprintf(stderr, "te-mlir: error: %s\n", message.c_str());
          std::fflush(nullptr);
          std::_Exit(2);
        }) {}

  ~ExitDeadline() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    finished.notify_one();
    watcher.join();
  }

  ExitDeadline(const ExitDeadline &) = delete;
  ExitDeadline &operator=(const ExitDeadline &) = delete;

private:
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  // Last: the thread starts once the members it uses exist.
  std::thread watcher;
};

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_EXITDEADLINE_H
