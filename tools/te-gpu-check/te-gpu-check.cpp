//===- te-gpu-check.cpp - Checks and timings of the cuda device -----------===//
//
// te-gpu-check [--json FILE] [--megabytes N]
//
// What scripts/gpu-check.sh runs where a GPU is lent: opens te-mlir's cuda
// device and checks that data survives host -> device -> device -> host
// copies bit for bit, then times device-to-device copies (the bandwidth
// quantize kernels are measured against) and host <-> device copies with
// the device's events. Writes the figures as JSON. Without a usable driver
// it prints one "SKIPPED: <why>" line, writes {"status": "skipped", ...}
// and exits 0; a failed check exits 1.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

struct Report {
  std::string path;
  std::vector<std::pair<std::string, std::string>> fields;
  void add(const std::string &key, const std::string &json) {
    fields.push_back({key, json});
  }
  /// A number, or null where there is none (a rate over no time).
  void add(const std::string &key, double value) {
    char text[64];
    if (!(value >= 0) || value > 1e300)
      std::snprintf(text, sizeof(text), "null");
    else
      std::snprintf(text, sizeof(text), "%.3f", value);
    add(key, std::string(text));
  }
  void write() const {
    std::string text = "{";
    for (size_t i = 0; i < fields.size(); ++i)
      text += (i ? ",\n " : "\n ") + jsonString(fields[i].first) + ": " +
              fields[i].second;
    text += "\n}\n";
    std::fputs(text.c_str(), stdout);
    if (path.empty())
      return;
    if (FILE *file = std::fopen(path.c_str(), "w")) {
      std::fputs(text.c_str(), file);
      std::fclose(file);
    } else {
      std::fprintf(stderr, "te-gpu-check: cannot write %s\n", path.c_str());
    }
  }
};

[[noreturn]] void fail(Report &report, const std::string &what) {
  std::string message = what + ": " + te_last_error_message();
  std::fprintf(stderr, "te-gpu-check: error: %s\n", message.c_str());
  report.add("status", jsonString("failed"));
  report.add("error", jsonString(message));
  report.write();
  std::exit(1);
}

/// Milliseconds between two events recorded around `body` on the default
/// stream.
template <typename Body>
float timed(Report &report, te_device *device, int repeats, Body &&body) {
  te_event *start = nullptr, *end = nullptr;
  if (te_event_create(device, &start) || te_event_create(device, &end))
    fail(report, "te_event_create");
  body(); // warm-up
  if (te_event_record(start, nullptr))
    fail(report, "te_event_record");
  for (int i = 0; i < repeats; ++i)
    body();
  if (te_event_record(end, nullptr) || te_event_synchronize(end))
    fail(report, "te_event_record");
  float milliseconds = 0;
  if (te_event_elapsed_ms(start, end, &milliseconds))
    fail(report, "te_event_elapsed_ms");
  te_event_release(start);
  te_event_release(end);
  return milliseconds / repeats;
}

} // namespace

int main(int argc, char **argv) {
  Report report;
  long megabytes = 256;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      report.path = argv[++i];
    } else if (arg == "--megabytes" && i + 1 < argc) {
      megabytes = std::strtol(argv[++i], nullptr, 10);
      if (megabytes <= 0 || megabytes > 65536) {
        std::fprintf(stderr, "te-gpu-check: --megabytes expects 1 to 65536\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: te-gpu-check [--json FILE] [--megabytes N]\n");
      return 2;
    }
  }

  te_device *device = nullptr;
  if (te_device_open("cuda", 0, &device) != TE_OK) {
    std::string why = te_last_error_message();
    std::printf("SKIPPED: %s\n", why.c_str());
    report.add("status", jsonString("skipped"));
    report.add("reason", jsonString(why));
    report.write();
    return 0;
  }

  // Bytes that differ at every position, so a misplaced copy shows.
  const int64_t count = megabytes * (int64_t(1) << 20) / 4;
  std::vector<uint32_t> data(count), back(count, 0);
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x5bd1e995u;
  const int64_t dims[] = {count};
  te_buffer *a = nullptr, *b = nullptr;
  if (te_buffer_create(device, TE_DTYPE_I32, 1, dims, &a) ||
      te_buffer_create(device, TE_DTYPE_I32, 1, dims, &b))
    fail(report, "te_buffer_create");
  const size_t bytes = count * 4;
  if (te_buffer_write(a, data.data(), bytes) || te_buffer_copy(b, a) ||
      te_buffer_read(b, back.data(), bytes))
    fail(report, "copy round trip");
  bool same = std::memcmp(data.data(), back.data(), bytes) == 0;
  report.add("status", jsonString(same ? "passed" : "failed"));
  report.add("device", jsonString(te_device_name(device)));
  report.add("buffer_megabytes", static_cast<double>(megabytes));
  report.add("copy_round_trip", jsonString(same ? "bit-exact" : "differs"));

  float d2d = timed(report, device, 20, [&] {
    if (te_buffer_copy(b, a))
      fail(report, "te_buffer_copy");
  });
  // A device copy reads and writes every byte.
  report.add("d2d_copy_ms", d2d);
  report.add("d2d_copy_gb_per_s", 2.0 * bytes / (d2d * 1e6));
  float h2d = timed(report, device, 5, [&] {
    if (te_buffer_write(a, data.data(), bytes))
      fail(report, "te_buffer_write");
  });
  report.add("h2d_gb_per_s", bytes / (h2d * 1e6));
  float d2h = timed(report, device, 5, [&] {
    if (te_buffer_read(b, back.data(), bytes))
      fail(report, "te_buffer_read");
  });
  report.add("d2h_gb_per_s", bytes / (d2h * 1e6));

  te_buffer_release(a);
  te_buffer_release(b);
  te_device_release(device);
  report.write();
  return same ? 0 : 1;
}
