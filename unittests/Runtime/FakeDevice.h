//===- FakeDevice.h - A plugin device for the runtime tests -----*- C++ -*-===//
//
// A device registered through te_device_register, as an out-of-tree plugin
// would be. Its memory is host memory that the runtime cannot see as such (no
// host_pointer entry), and it counts every call, so tests can prove that the
// generic runtime goes through the table and only through it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_UNITTESTS_RUNTIME_FAKEDEVICE_H
#define TE_UNITTESTS_RUNTIME_FAKEDEVICE_H

#include "te/Runtime/Collective.h"
#include "te/Runtime/Device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace te::runtime::testing {

/// State shared by all instances of one registered fake device. Lives for the
/// whole process, as the registry requires of a context.
struct FakeDevice {
  std::string name;
  int instanceCount = 2;
  bool failOpen = false;
  bool failAllocate = false;
  std::atomic<int> liveInstances{0};
  std::atomic<int> liveAllocations{0};
  std::atomic<int> copiesToDevice{0};
  std::atomic<int> copiesToHost{0};
  std::atomic<int> deviceCopies{0};
  std::atomic<int> launches{0};
  std::atomic<int> synchronizations{0};
  std::atomic<int> loadedModules{0};
  // With streams (ops(withModules, /*withStreams=*/true)): live objects and
  // what the last launch was given.
  std::atomic<int> liveStreams{0};
  std::atomic<int> liveEvents{0};
  std::atomic<int> liveExecContexts{0};
  std::atomic<int> streamSynchronizations{0};
  std::atomic<int> waits{0};
  std::atomic<const void *> lastConfig{nullptr};
  std::atomic<void *> lastStream{nullptr};
  std::atomic<void *> lastExecContext{nullptr};

  /// A manifest served by the fake module loader (see withModules).
  static constexpr const char *kManifest = "te-kernel-abi 1\n"
                                           "entry double fake_double\n"
                                           "in f32 4\n"
                                           "out f32 4\n"
                                           "end\n";
  /// What the module loader serves; set before loading a module.
  std::string manifest = kManifest;

  /// The library calls made (withModules): `fake.double` doubles four f32
  /// from its first operand into its second, like fake_double.
  struct LibraryCall {
    std::string function, parameters;
    std::vector<size_t> sizes;
    void *stream;
    void *execContext;
  };
  std::mutex callsMutex;
  std::vector<LibraryCall> calls;

  /// The channels made and the collectives run (withCollectives): a world
  /// (of one rank unless a test says otherwise), whose collectives copy
  /// their input to their output.
  int worldRank = 0;
  int worldSize = 1;
  struct Channel {
    std::string group;
    int size;
    std::vector<int> ranks;
    double timeout;
  };
  struct Collective {
    Channel *channel;
    te_collective_desc desc;
    std::vector<int64_t> pairs;
  };
  std::vector<std::unique_ptr<Channel>> channels;
  std::vector<Collective> collectives;
  std::atomic<int> liveChannels{0};

  /// Registers nothing; returns a complete table for this device.
  te_device_ops ops(bool withModules = false, bool withStreams = false,
                    bool withCollectives = false) {
    te_device_ops table = {};
    table.struct_size = sizeof(te_device_ops);
    table.name = name.c_str();
    table.device_count = [](void *context) {
      return self(context)->instanceCount;
    };
    table.open = [](void *context, int index, void **instance) {
      if (self(context)->failOpen)
        return TE_ERROR_UNSUPPORTED;
      ++self(context)->liveInstances;
      *instance = context;
      return TE_OK;
    };
    table.close = [](void *instance) { --self(instance)->liveInstances; };
    table.allocate = [](void *instance, size_t size, size_t alignment,
                        void **ptr) {
      if (self(instance)->failAllocate)
        return TE_ERROR_OUT_OF_MEMORY;
      *ptr = std::aligned_alloc(alignment,
                                (size + alignment - 1) / alignment * alignment);
      ++self(instance)->liveAllocations;
      return *ptr ? TE_OK : TE_ERROR_OUT_OF_MEMORY;
    };
    table.free = [](void *instance, void *ptr) {
      --self(instance)->liveAllocations;
      std::free(ptr);
    };
    table.copy_to_device = [](void *instance, void *dst, const void *src,
                              size_t bytes) {
      ++self(instance)->copiesToDevice;
      std::memcpy(dst, src, bytes);
      return TE_OK;
    };
    table.copy_to_host = [](void *instance, void *dst, const void *src,
                            size_t bytes) {
      ++self(instance)->copiesToHost;
      std::memcpy(dst, src, bytes);
      return TE_OK;
    };
    table.copy_device_to_device = [](void *instance, void *dst, const void *src,
                                     size_t bytes) {
      ++self(instance)->deviceCopies;
      std::memcpy(dst, src, bytes);
      return TE_OK;
    };
    table.synchronize = [](void *instance) {
      ++self(instance)->synchronizations;
      return TE_OK;
    };
    if (withModules) {
      table.load_module = [](void *instance, const char *, const void *, size_t,
                             void **module, char *, size_t) {
        ++self(instance)->loadedModules;
        *module = instance;
        return TE_OK;
      };
      table.unload_module = [](void *instance, void *) {
        --self(instance)->loadedModules;
      };
      table.get_manifest = [](void *instance, void *, const char **text) {
        *text = self(instance)->manifest.c_str();
        return TE_OK;
      };
      table.library_call = [](void *instance, const char *function,
                              const char *parameters, void **args,
                              const size_t *sizes, int nargs,
                              const te_launch_config *config) {
        FakeDevice &fake = *self(instance);
        {
          std::lock_guard<std::mutex> lock(fake.callsMutex);
          fake.calls.push_back({function, parameters,
                                std::vector<size_t>(sizes, sizes + nargs),
                                config->stream, config->exec_context});
        }
        if (std::strcmp(function, "fake.double") != 0 || nargs != 2)
          return TE_ERROR_UNSUPPORTED;
        doubleKernel(args);
        return TE_OK;
      };
      table.get_function = [](void *, void *, const char *symbol,
                              void **function) {
        if (std::strcmp(symbol, "fake_double") != 0)
          return TE_ERROR_NOT_FOUND;
        *function = reinterpret_cast<void *>(&doubleKernel);
        return TE_OK;
      };
      table.launch = [](void *instance, void *function, void **args, int nargs,
                        const void *config) {
        ++self(instance)->launches;
        self(instance)->lastConfig = config;
        if (config) {
          const auto *launch = static_cast<const te_launch_config *>(config);
          self(instance)->lastStream = launch->stream;
          self(instance)->lastExecContext = launch->exec_context;
        }
        if (function != reinterpret_cast<void *>(&doubleKernel) || nargs != 2)
          return TE_ERROR_INTERNAL;
        doubleKernel(args);
        return TE_OK;
      };
    }
    if (withStreams) {
      // Streams and events are heap tokens; the fake runs everything at once,
      // so waiting is counting. An event's "time" is a counter in ms.
      table.stream_create = [](void *instance, void **stream) {
        ++self(instance)->liveStreams;
        *stream = new int(0);
        return TE_OK;
      };
      table.stream_destroy = [](void *instance, void *stream) {
        --self(instance)->liveStreams;
        delete static_cast<int *>(stream);
      };
      table.stream_synchronize = [](void *instance, void *) {
        ++self(instance)->streamSynchronizations;
        return TE_OK;
      };
      table.event_create = [](void *instance, void **event) {
        ++self(instance)->liveEvents;
        *event = new float(0);
        return TE_OK;
      };
      table.event_destroy = [](void *instance, void *event) {
        --self(instance)->liveEvents;
        delete static_cast<float *>(event);
      };
      table.event_record = [](void *instance, void *event, void *) {
        *static_cast<float *>(event) =
            static_cast<float>(self(instance)->launches.load());
        return TE_OK;
      };
      table.stream_wait_event = [](void *instance, void *, void *) {
        ++self(instance)->waits;
        return TE_OK;
      };
      table.event_synchronize = [](void *, void *) { return TE_OK; };
      table.event_elapsed_ms = [](void *, void *start, void *end,
                                  float *milliseconds) {
        *milliseconds =
            *static_cast<float *>(end) - *static_cast<float *>(start);
        return TE_OK;
      };
      table.exec_context_create = [](void *instance, void *stream,
                                     void **context) {
        ++self(instance)->liveExecContexts;
        // Remembers its stream, so tests can see which one it belongs to.
        *context = new void *(stream);
        return TE_OK;
      };
      table.exec_context_destroy = [](void *instance, void *context) {
        --self(instance)->liveExecContexts;
        delete static_cast<void **>(context);
      };
    }
    if (withCollectives) {
      table.world = [](void *instance, int *rank, int *size) {
        *rank = self(instance)->worldRank;
        *size = self(instance)->worldSize;
        return TE_OK;
      };
      table.channel_create = [](void *instance, const te_channel_spec *spec,
                                void **channel) {
        FakeDevice &fake = *self(instance);
        std::lock_guard<std::mutex> lock(fake.callsMutex);
        fake.channels.push_back(std::make_unique<Channel>(Channel{
            spec->group, spec->size,
            spec->ranks
                ? std::vector<int>(spec->ranks, spec->ranks + spec->num_ranks)
                : std::vector<int>(),
            spec->timeout_seconds}));
        ++fake.liveChannels;
        *channel = fake.channels.back().get();
        return TE_OK;
      };
      table.channel_destroy = [](void *instance, void *) {
        --self(instance)->liveChannels;
      };
      table.collective = [](void *instance, void *channel,
                            const te_collective_desc *desc, const void *input,
                            void *output, const te_launch_config *) {
        FakeDevice &fake = *self(instance);
        std::lock_guard<std::mutex> lock(fake.callsMutex);
        fake.collectives.push_back(
            {static_cast<Channel *>(channel), *desc,
             std::vector<int64_t>(desc->pairs,
                                  desc->pairs + 2 * desc->num_pairs)});
        size_t bytes = te_dtype_size(desc->dtype);
        for (int d = 0; d < desc->rank; ++d)
          bytes *= static_cast<size_t>(desc->dims[d]);
        std::memcpy(output, input, bytes);
        return TE_OK;
      };
    }
    return table;
  }

private:
  static FakeDevice *self(void *context) {
    return static_cast<FakeDevice *>(context);
  }
  static void doubleKernel(void **args) {
    const float *input = static_cast<const float *>(args[0]);
    float *output = static_cast<float *>(args[1]);
    for (int i = 0; i < 4; ++i)
      output[i] = 2 * input[i];
  }
};

/// Registers a fake device named `name` once per process and returns it, so
/// tests can run in any order and in one process or many.
FakeDevice &registerFakeDevice(const std::string &name,
                               bool withModules = false,
                               bool withStreams = false,
                               bool withCollectives = false);

} // namespace te::runtime::testing

#endif // TE_UNITTESTS_RUNTIME_FAKEDEVICE_H
