//===- te-collective-bench.cpp - te collectives against raw MPI ----------===//
//
// mpirun -np N te-collective-bench [--sizes 1024,...] [--rounds R] [--json F]
//
// For each op (all_reduce sum, all_gather) and each message size (bytes per
// rank), compiles a te program that runs the collective over the world,
// then times, in alternating rounds on the same buffers, te_kernel_launch of
// it and the raw MPI call (MPI_Allreduce / MPI_Allgather). A round is a
// barrier and `iterations` calls; its time is the slowest rank's. The
// medians of the rounds give each side's time per call, the bus bandwidth
// as nccl-tests defines it (all_reduce: 2 (n-1)/n bytes / time; all_gather:
// (n-1)/n of the gathered bytes / time), their ratio and the per-call
// overhead of te above MPI. Rank 0 prints a table and, with --json, writes
// the rows.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/Jit.h"
#include "te/Runtime/Runtime.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "te-collective-bench: error: %s\n", message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

void check(te_status status, const char *what) {
  if (status != TE_OK)
    fail(std::string(what) + ": " + te_last_error_message());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Row {
  std::string op;
  int ranks;
  size_t bytes;
  double teMicroseconds, mpiMicroseconds;
  double teBusGBs, mpiBusGBs;
};

/// Times `iterations` calls of `call` on every rank after a barrier; the
/// slowest rank's seconds per call.
template <typename Call> double timeRound(int iterations, Call &&call) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i)
    call();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      iterations;
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  std::vector<size_t> sizes;
  int rounds = 7;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t start = 0; start < list.size();) {
        size_t end = list.find(',', start);
        sizes.push_back(std::strtoull(list.substr(start, end - start).c_str(),
                                      nullptr, 10));
        start = end == std::string::npos ? list.size() : end + 1;
      }
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (arg == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else {
      fail("usage: mpirun -np N te-collective-bench [--sizes B,B,...] "
           "[--rounds R] [--json FILE]");
    }
  }
  if (sizes.empty())
    for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 4)
      sizes.push_back(bytes);

  te_device *cpu = nullptr;
  check(te_device_open("cpu", 0, &cpu), "opening the cpu device");
  te_jit *jit = nullptr;
  if (te_jit_create(nullptr, &jit) != TE_OK)
    fail(te_jit_last_error_message());

  std::vector<Row> rows;
  for (const char *op : {"all_reduce", "all_gather"}) {
    bool gather = std::strcmp(op, "all_gather") == 0;
    for (size_t bytes : sizes) {
      size_t count = std::max<size_t>(bytes / 4, 1);
      size_t outCount = gather ? count * ranks : count;
      std::string in = "tensor<" + std::to_string(count) + "xf32>";
      std::string out = "tensor<" + std::to_string(outCount) + "xf32>";
      std::string program =
          "te.process_group @world size " + std::to_string(ranks) +
          "\nfunc.func @f(%x: " + in + ") -> " + out + " {\n  %y = " +
          (gather ? "te.all_gather %x group @world dim 0 : " + in + " -> " + out
                  : "te.all_reduce %x group @world reduce sum : " + in) +
          "\n  return %y : " + out + "\n}\n";
      te_module *module = nullptr;
      if (te_jit_load(jit, cpu, program.data(), program.size(), op, &module,
                      nullptr, nullptr) != TE_OK)
        fail(te_jit_last_error_message());
      te_kernel *kernel = nullptr;
      check(te_module_get_kernel(module, "f", &kernel), "kernel");
      int64_t inDims[] = {static_cast<int64_t>(count)};
      int64_t outDims[] = {static_cast<int64_t>(outCount)};
      te_buffer *buffers[2] = {};
      check(te_buffer_create(cpu, TE_DTYPE_F32, 1, inDims, &buffers[0]),
            "input");
      check(te_buffer_create(cpu, TE_DTYPE_F32, 1, outDims, &buffers[1]),
            "output");
      std::vector<float> values(count, 1.0f + rank);
      check(te_buffer_write(buffers[0], values.data(), count * 4), "fill");
      void *inPtr = te_buffer_host_pointer(buffers[0]);
      void *outPtr = te_buffer_host_pointer(buffers[1]);

      auto teCall = [&] {
        check(te_kernel_launch(kernel, buffers, 2), "te_kernel_launch");
      };
      auto mpiCall = [&] {
        if (gather)
          MPI_Allgather(inPtr, static_cast<int>(count), MPI_FLOAT, outPtr,
                        static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
        else
          MPI_Allreduce(inPtr, outPtr, static_cast<int>(count), MPI_FLOAT,
                        MPI_SUM, MPI_COMM_WORLD);
      };
      // About 20 ms of calls per round (as timed by MPI, once).
      double probe = timeRound(3, mpiCall);
      int iterations = static_cast<int>(
          std::clamp(0.02 / std::max(probe, 1e-7), 3.0, 2000.0));
      MPI_Bcast(&iterations, 1, MPI_INT, 0, MPI_COMM_WORLD);
      timeRound(iterations, teCall);
      std::vector<double> teTimes, mpiTimes;
      for (int r = 0; r < rounds; ++r) {
        if (r % 2) {
          mpiTimes.push_back(timeRound(iterations, mpiCall));
          teTimes.push_back(timeRound(iterations, teCall));
        } else {
          teTimes.push_back(timeRound(iterations, teCall));
          mpiTimes.push_back(timeRound(iterations, mpiCall));
        }
      }
      double te = median(teTimes), mpi = median(mpiTimes);
      double moved = gather ? double(count * 4) * ranks * (ranks - 1) / ranks
                            : double(count * 4) * 2 * (ranks - 1) / ranks;
      rows.push_back({op, ranks, count * 4, te * 1e6, mpi * 1e6,
                      moved / te / 1e9, moved / mpi / 1e9});
      te_buffer_release(buffers[0]);
      te_buffer_release(buffers[1]);
      te_module_release(module);
    }
  }

  if (rank == 0) {
    std::printf("%-11s %5s %10s %11s %11s %9s %9s %7s %9s\n", "op", "ranks",
                "bytes", "te us", "MPI us", "te GB/s", "MPI GB/s", "ratio",
                "over us");
    for (const Row &row : rows)
      std::printf("%-11s %5d %10zu %11.2f %11.2f %9.3f %9.3f %7.3f %9.2f\n",
                  row.op.c_str(), row.ranks, row.bytes, row.teMicroseconds,
                  row.mpiMicroseconds, row.teBusGBs, row.mpiBusGBs,
                  row.mpiMicroseconds / row.teMicroseconds,
                  row.teMicroseconds - row.mpiMicroseconds);
    if (!json.empty()) {
      FILE *file = std::fopen(json.c_str(), "w");
      if (!file)
        fail("cannot write " + json);
      std::fprintf(file, "[\n");
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row &row = rows[i];
        std::fprintf(file,
                     "  {\"op\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
                     "\"te_us\": %.3f, \"mpi_us\": %.3f, \"te_busbw_gbs\": "
                     "%.4f, \"mpi_busbw_gbs\": %.4f}%s\n",
                     row.op.c_str(), row.ranks, row.bytes, row.teMicroseconds,
                     row.mpiMicroseconds, row.teBusGBs, row.mpiBusGBs,
                     i + 1 < rows.size() ? "," : "");
      }
      std::fprintf(file, "]\n");
      std::fclose(file);
    }
  }
  te_jit_release(jit);
  te_device_release(cpu);
  MPI_Finalize();
  return 0;
}
