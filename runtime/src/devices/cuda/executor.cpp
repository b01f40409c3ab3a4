// The device half of a context on a CUDA artifact (executor.hpp).
#include "devices/cuda/executor.hpp"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "devices/cuda/driver.hpp"
#include "devices/cuda/nccl.hpp"
#include "devices/cuda/products.hpp"

namespace tfc::internal::cuda {
namespace {

// The run-time error codes the kernels report (tfc_kernel_error in tfc/artifact_abi.h),
// worded as the CPU kernels word them.
const char* errorCodeMessage(unsigned code) {
  switch (code) {
    case TFC_KERNEL_ERROR_EMBEDDING_ID: return "embedding: id out of range";
    case TFC_KERNEL_ERROR_KV_POSITION: return "kv_cache_update: position out of range";
    case TFC_KERNEL_ERROR_TARGET: return "cross_entropy: target out of range";
    case TFC_KERNEL_ERROR_SAMPLE_NAN: return "sample: the logits contain NaN";
    case TFC_KERNEL_ERROR_MOE_EXPERT: return "moe_ffn: expert id out of range";
    case TFC_KERNEL_ERROR_KV_BLOCK:
      return "paged KV cache: a block table entry is outside the pool";
    default: return nullptr;
  }
}

// "sm_90a" -> 90 (major * 10 + minor) and whether it is architecture-specific (a suffix:
// its cubin runs on that architecture only and its PTX cannot be compiled for others).
bool parseArch(const char* arch, int* number, bool* specific) {
  if (arch == nullptr || std::strncmp(arch, "sm_", 3) != 0) return false;
  char* end = nullptr;
  long value = std::strtol(arch + 3, &end, 10);
  if (end == arch + 3 || value < 10 || value > 1000) return false;
  *number = static_cast<int>(value);
  *specific = *end != '\0';
  return true;
}

// This process's rank among the job's processes on this node, as the MPI launchers say (Open
// MPI, MPICH's Hydra, Slurm); 0 outside one. The default GPU of a rank is this modulo the
// node's GPUs, so that the ranks of a node use different GPUs (NCCL refuses two ranks of one
// communicator on one GPU).
int localRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank < (1L << 20)) return static_cast<int>(rank);
  }
  return 0;
}

// The NCCL call of a collective kind (artifact_abi.h's TFC_COLLECTIVE_*), or null.
const char* ncclName(int32_t kind) {
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE: return "ncclAllReduce";
    case TFC_COLLECTIVE_REDUCE_SCATTER: return "ncclReduceScatter";
    case TFC_COLLECTIVE_ALL_GATHER: return "ncclAllGather";
    case TFC_COLLECTIVE_BROADCAST: return "ncclBroadcast";
    default: return nullptr;
  }
}

bool graphsEnabled() {
  const char* value = std::getenv("TFC_CUDA_GRAPHS");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

}  // namespace

struct Executor::Impl {
  const Driver* d = nullptr;
  std::string path;
  const tfc_artifact_t* table = nullptr;
  std::string description;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  CUdeviceptr errorWord = 0;

  std::vector<CUdeviceptr> params, state;
  std::vector<size_t> paramBytes, stateBytes;
  std::vector<void*> paramPointers, statePointers;  // the same addresses, for entry.call

  struct Entry {
    bool allocated = false;
    CUdeviceptr arena = 0;
    std::vector<CUdeviceptr> inputs, outputs;
    std::vector<void*> inputPointers, outputPointers;
    CUgraphExec graph = nullptr;
    bool captureFailed = false;
    // The input and output addresses of the last call, and of the graph: a graph bakes
    // them in, so it is replayed only for the same ones (always, with staging buffers).
    std::vector<void*> lastInputs, lastOutputs, graphInputs, graphOutputs;
  };
  std::vector<Entry> entries;
  std::unordered_map<const void*, CUdeviceptr> constants;
  std::vector<CUdeviceptr> allocations;  // everything to free
  uint64_t allocatedBytes = 0;           // their sizes' sum (nothing is freed before the end)
  // The products that cuBLASLt runs, and its workspace (allocated at the first one).
  std::unique_ptr<LibraryProducts> products;
  CUdeviceptr workspace = 0;

  // Which copy of the parameters (and of the state) is newer: uploaded before a call,
  // downloaded when the host reads.
  enum class Newer { Neither, Host, Device };
  Newer paramsNewer = Newer::Host, stateNewer = Newer::Host;
  bool capturing = false;
  Status pending;  // the first failure of a device_* callback during a call
  // Host copies of a collective's buffers (collective()); kept across calls.
  std::vector<unsigned char> collectiveSend, collectiveRecv;
  // The NCCL communicators of deviceCollective (openNccl): one per process group ("" the
  // world's), each with this rank's place in it; the world (told to abort the job when one
  // fails), this rank's place in it, and whether one failed (then all are aborted: the ranks
  // are out of step).
  struct NcclGroup {
    std::string name;
    ncclComm_t comm = nullptr;
    int rank = 0, size = 1;
  };
  const Nccl* nccl = nullptr;
  std::vector<NcclGroup> ncclGroups;
  Communicator* world = nullptr;
  int commRank = 0, commSize = 1;
  bool commFailed = false;
  int64_t ncclCollectives = 0;
  // While profiling: an event before and after each launch of the call, in launch order
  // (the order of the entry's tfc_entry_t.kernels), from a pool kept across calls.
  bool timing = false;
  std::vector<CUevent> events;
  size_t eventsUsed = 0;

  // OK, or "<path>: <what>: <the driver's error>". |what| is text or a function that
  // makes it, called only on failure: every copy and launch of a call is checked.
  template <typename What>
  Status check(CUresult result, const What& what) const {
    if (result == CUDA_SUCCESS) return Status();
    std::string text;
    if constexpr (std::is_invocable_v<What>) {
      text = what();
    } else {
      text = what;
    }
    return tfc::internal::cuda::check(*d, result, (path + ": " + text).c_str());
  }

  Status makeCurrent() const { return check(d->cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

  StatusOr<CUdeviceptr> allocate(size_t bytes, const std::string& what) {
    CUdeviceptr ptr = 0;
    CUresult result = d->cuMemAlloc(&ptr, bytes == 0 ? 1 : bytes);
    if (result != CUDA_SUCCESS) {
      size_t freeBytes = 0, totalBytes = 0;
      d->cuMemGetInfo(&freeBytes, &totalBytes);
      return Status::error(result == CUDA_ERROR_OUT_OF_MEMORY ? TFC_OUT_OF_MEMORY : TFC_INTERNAL,
                           "%s: cannot allocate %zu bytes on %s for %s (%zu of %zu bytes free): "
                           "%s",
                           path.c_str(), bytes, description.c_str(), what.c_str(), freeBytes,
                           totalBytes, describe(*d, result).c_str());
    }
    allocations.push_back(ptr);
    allocatedBytes += bytes;
    return ptr;
  }

  Status prepareEntry(int32_t index) {
    Entry& e = entries[static_cast<size_t>(index)];
    if (e.allocated) return Status();
    // (After a failed attempt: what it allocated stays in |allocations| until the end.)
    e.inputs.clear();
    e.outputs.clear();
    e.inputPointers.clear();
    e.outputPointers.clear();
    const tfc_entry_t& entry = table->entries[index];
    std::string name = std::string("entry '") + entry.name + "'";
    TFC_ASSIGN_OR_RETURN(e.arena, allocate(entry.arena_bytes, "the arena of " + name));
    // A staging buffer per input and output, for copies at the call.
    auto stage = [&](const tfc_tensor_desc_t* descs, int32_t count, const char* what,
                     std::vector<CUdeviceptr>* buffers, std::vector<void*>* pointers) {
      for (int32_t i = 0; i < count; ++i) {
        TFC_ASSIGN_OR_RETURN(CUdeviceptr p, allocate(tfc_tensor_desc_byte_size(&descs[i]),
                                                     std::string(what) + " '" + descs[i].name +
                                                         "' of " + name));
        buffers->push_back(p);
        pointers->push_back(reinterpret_cast<void*>(p));
      }
      return Status();
    };
    TFC_RETURN_IF_ERROR(
        stage(entry.inputs, entry.num_inputs, "input", &e.inputs, &e.inputPointers));
    TFC_RETURN_IF_ERROR(
        stage(entry.outputs, entry.num_outputs, "output", &e.outputs, &e.outputPointers));
    e.allocated = true;
    return Status();
  }

  Status upload(const std::vector<void*>& hostParams, const std::vector<void*>& hostState) {
    for (size_t i = 0; i < params.size() && paramsNewer == Newer::Host; ++i) {
      if (paramBytes[i] == 0) continue;  // another pipeline stage's
      TFC_RETURN_IF_ERROR(check(d->cuMemcpyHtoD(params[i], hostParams[i], paramBytes[i]),
                                std::string("uploading parameter '") + table->params[i].name +
                                    "'"));
    }
    for (size_t i = 0; i < state.size() && stateNewer == Newer::Host; ++i) {
      if (stateBytes[i] == 0) continue;
      TFC_RETURN_IF_ERROR(check(d->cuMemcpyHtoD(state[i], hostState[i], stateBytes[i]),
                                std::string("uploading state tensor '") + table->state[i].name +
                                    "'"));
    }
    return Status();
  }

  // Runs the entry's host code on the stream; launches go through the device_* callbacks.
  int32_t runHostCode(const tfc_entry_t& entry, const tfc_host_api_t* host, Entry& e,
                      std::vector<void*>& inputs, std::vector<void*>& outputs) {
    return entry.call(host, paramPointers.data(), statePointers.data(), inputs.data(),
                      outputs.data(), reinterpret_cast<void*>(e.arena));
  }

  // Captures the entry's launches as a graph; false (and the entry is run eagerly from
  // then on) when the driver refuses.
  bool capture(const tfc_entry_t& entry, const tfc_host_api_t* host, Entry& e,
               std::vector<void*>& inputs, std::vector<void*>& outputs) {
    if (d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
      return false;
    }
    capturing = true;
    int32_t result = runHostCode(entry, host, e, inputs, outputs);
    capturing = false;
    CUgraph graph = nullptr;
    CUresult ended = d->cuStreamEndCapture(stream, &graph);
    bool ok = result == 0 && pending.ok() && ended == CUDA_SUCCESS && graph != nullptr &&
              d->cuGraphInstantiate(&e.graph, graph, 0) == CUDA_SUCCESS;
    if (graph != nullptr) d->cuGraphDestroy(graph);
    if (!ok) {
      e.graph = nullptr;
      pending = Status();  // the eager run reports what is still wrong
    } else {
      e.graphInputs = inputs;
      e.graphOutputs = outputs;
    }
    return ok;
  }
};

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Executor::~Executor() {
  Impl& x = *impl_;
  if (x.d == nullptr || x.context == nullptr) return;
  x.d->cuCtxSetCurrent(x.context);
  if (x.stream != nullptr) x.d->cuStreamSynchronize(x.stream);
  x.products.reset();  // cuBLASLt's handle and plans, while the context lives
  for (auto& group : x.ncclGroups) {
    if (group.comm != nullptr) x.nccl->ncclCommDestroy(group.comm);  // (failed: aborted)
  }
  const char* stats = std::getenv("TFC_COMM_STATS");
  if (x.nccl != nullptr && stats != nullptr && *stats != '\0' && std::strcmp(stats, "0") != 0) {
    std::fprintf(stderr, "tfc comm stats: rank %d of %d: %lld collectives over NCCL on %s\n",
                 x.commRank, x.commSize, static_cast<long long>(x.ncclCollectives),
                 x.description.c_str());
  }
  for (auto& e : x.entries) {
    if (e.graph != nullptr) x.d->cuGraphExecDestroy(e.graph);
  }
  for (CUdeviceptr p : x.allocations) x.d->cuMemFree(p);
  for (CUevent event : x.events) x.d->cuEventDestroy(event);
  if (x.module != nullptr) x.d->cuModuleUnload(x.module);
  if (x.stream != nullptr) x.d->cuStreamDestroy(x.stream);
  x.d->cuDevicePrimaryCtxRelease(x.device);
}

const std::string& Executor::description() const { return impl_->description; }

StatusOr<std::unique_ptr<Executor>> Executor::create(const std::string& path,
                                                     const tfc_artifact_t& table,
                                                     int32_t ordinal,
                                                     const std::vector<bool>& paramHeld,
                                                     const std::vector<bool>& stateHeld) {
  auto driver = loadDriver();
  if (!driver.ok()) {
    return Status::error(driver.status().code(), "%s (CUDA, %s): %s", path.c_str(),
                         table.device_arch, driver.status().message());
  }
  auto impl = std::make_unique<Impl>();
  Impl& x = *impl;
  x.d = *driver;
  x.path = path;
  x.table = &table;
  const Driver& d = *x.d;
  int count = 0;
  TFC_RETURN_IF_ERROR(x.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (ordinal < 0 && count > 0) ordinal = localRank() % count;
  if (ordinal < 0 || ordinal >= count) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: there is no GPU %d (this machine has %d; "
                         "GPUs are numbered from 0)", path.c_str(), ordinal, count);
  }
  TFC_RETURN_IF_ERROR(x.check(d.cuDeviceGet(&x.device, ordinal), "cuDeviceGet"));
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof(name) - 1, x.device);
  int major = 0, minor = 0;
  TFC_RETURN_IF_ERROR(x.check(
      d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, x.device),
      "cuDeviceGetAttribute"));
  TFC_RETURN_IF_ERROR(x.check(
      d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, x.device),
      "cuDeviceGetAttribute"));
  int gpuArch = major * 10 + minor;
  x.description = "GPU " + std::to_string(ordinal) + ": " + name + " (sm_" +
                  std::to_string(gpuArch) + ")";
  x.products = std::make_unique<LibraryProducts>(path);

  // The cubin where the GPU is the architecture compiled for; the PTX (compiled by the
  // driver) where it is newer; nothing where it is older.
  int built = 0;
  bool specific = false;
  if (!parseArch(table.device_arch, &built, &specific)) {
    return Status::error(TFC_DATA_LOSS, "%s: unreadable device architecture '%s'", path.c_str(),
                         table.device_arch ? table.device_arch : "(null)");
  }
  bool exact = built == gpuArch;
  if (!exact && (gpuArch < built || specific)) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s was built for %s, which %s cannot run; recompile it with "
                         "--cuda-arch=sm_%d",
                         path.c_str(), table.device_arch, x.description.c_str(), gpuArch);
  }

  TFC_RETURN_IF_ERROR(x.check(d.cuDevicePrimaryCtxRetain(&x.context, x.device),
                              "cuDevicePrimaryCtxRetain on " + x.description));
  std::unique_ptr<Executor> executor(new Executor(std::move(impl)));
  TFC_RETURN_IF_ERROR(x.makeCurrent());
  const void* image = exact ? table.device_image : static_cast<const void*>(table.device_ptx);
  if (image == nullptr) {
    return Status::error(TFC_DATA_LOSS, "%s: the CUDA artifact has no %s", path.c_str(),
                         exact ? "cubin" : "PTX");
  }
  CUresult loaded = d.cuModuleLoadData(&x.module, image);
  if (loaded != CUDA_SUCCESS) {
    return Status::error(TFC_FAILED_PRECONDITION, "%s: %s cannot load its kernels (%s for %s): %s%s",
                         path.c_str(), x.description.c_str(), exact ? "cubin" : "PTX",
                         table.device_arch, describe(d, loaded).c_str(),
                         exact ? "" : "; a driver too old for this CUDA toolkit's PTX? "
                                      "recompile with --cuda-arch for this GPU");
  }
  for (int32_t i = 0; i < table.num_device_kernels; ++i) {
    CUfunction fn = nullptr;
    TFC_RETURN_IF_ERROR(x.check(d.cuModuleGetFunction(&fn, x.module, table.device_kernels[i]),
                                std::string("kernel '") + table.device_kernels[i] + "'"));
    x.functions.push_back(fn);
  }
  size_t wordBytes = 0;
  TFC_RETURN_IF_ERROR(x.check(d.cuModuleGetGlobal(&x.errorWord, &wordBytes, x.module,
                                                  "tfc_error_code"),
                              "the kernels' error word"));
  TFC_RETURN_IF_ERROR(x.check(d.cuStreamCreate(&x.stream, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate"));
  TFC_RETURN_IF_ERROR(x.check(d.cuMemsetD8Async(x.errorWord, 0, sizeof(unsigned), x.stream),
                              "clearing the error word"));

  // Another pipeline stage's tensors: no buffer (null, 0 bytes: never copied).
  for (int32_t i = 0; i < table.num_params; ++i) {
    if (!paramHeld[static_cast<size_t>(i)]) {
      x.params.push_back(0);
      x.paramBytes.push_back(0);
      x.paramPointers.push_back(nullptr);
      continue;
    }
    size_t bytes = tfc_tensor_desc_byte_size(&table.params[i]);
    TFC_ASSIGN_OR_RETURN(CUdeviceptr p,
                         x.allocate(bytes, std::string("parameter '") + table.params[i].name + "'"));
    x.params.push_back(p);
    x.paramBytes.push_back(bytes);
    x.paramPointers.push_back(reinterpret_cast<void*>(p));
  }
  for (int32_t i = 0; i < table.num_state; ++i) {
    if (!stateHeld[static_cast<size_t>(i)]) {
      x.state.push_back(0);
      x.stateBytes.push_back(0);
      x.statePointers.push_back(nullptr);
      continue;
    }
    size_t bytes = tfc_tensor_desc_byte_size(&table.state[i]);
    TFC_ASSIGN_OR_RETURN(CUdeviceptr p, x.allocate(bytes, std::string("state tensor '") +
                                                              table.state[i].name + "'"));
    x.state.push_back(p);
    x.stateBytes.push_back(bytes);
    x.statePointers.push_back(reinterpret_cast<void*>(p));
  }
  x.entries.resize(static_cast<size_t>(table.num_entries));
  return executor;
}

std::string Executor::name() const {
  return description() + "; products on " + productsSummary();
}

Status Executor::call(const Call& c) {
  const int32_t index = c.index;
  const tfc_host_api_t* host = c.host;
  const std::vector<void*>& params = *c.params;
  const std::vector<void*>& state = *c.state;
  const tfc_tensor_ref_t* inputs = c.inputs;
  const tfc_tensor_ref_t* outputs = c.outputs;
  const bool deviceIO = c.deviceIO;
  std::vector<double>* kernelSeconds = c.kernelSeconds;
  Impl& x = *impl_;
  const Driver& d = *x.d;
  const tfc_entry_t& entry = x.table->entries[index];
  TFC_RETURN_IF_ERROR(x.makeCurrent());
  TFC_RETURN_IF_ERROR(x.upload(params, state));
  TFC_RETURN_IF_ERROR(x.prepareEntry(index));
  Impl::Entry& e = x.entries[static_cast<size_t>(index)];
  std::vector<void*> ins = e.inputPointers, outs = e.outputPointers;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    if (deviceIO) {
      ins[static_cast<size_t>(i)] = inputs[i].data;
      continue;
    }
    TFC_RETURN_IF_ERROR(x.check(
        d.cuMemcpyHtoDAsync(e.inputs[static_cast<size_t>(i)], inputs[i].data,
                            inputs[i].byte_size, x.stream),
        [&] { return std::string("copying input '") + entry.inputs[i].name + "' to the GPU"; }));
  }
  for (int32_t i = 0; deviceIO && i < entry.num_outputs; ++i) {
    outs[static_cast<size_t>(i)] = outputs[i].data;
  }
  x.pending = Status();
  int32_t result = 0;
  // Profiles time each launch between events, so they run eagerly.
  x.timing = kernelSeconds != nullptr;
  x.eventsUsed = 0;
  // A graph for these addresses; made when the same ones come a second time.
  bool replay = e.graph != nullptr && e.graphInputs == ins && e.graphOutputs == outs &&
                !x.timing;
  bool repeated = e.lastInputs == ins && e.lastOutputs == outs;
  if (!replay && repeated && !e.captureFailed && !x.timing && graphsEnabled()) {
    if (e.graph != nullptr) {
      d.cuGraphExecDestroy(e.graph);
      e.graph = nullptr;
    }
    replay = x.capture(entry, host, e, ins, outs);
    e.captureFailed = !replay;
  }
  e.lastInputs = ins;
  e.lastOutputs = outs;
  if (replay) {
    TFC_RETURN_IF_ERROR(x.check(d.cuGraphLaunch(e.graph, x.stream), "cuGraphLaunch"));
  } else {
    result = x.runHostCode(entry, host, e, ins, outs);
  }
  unsigned errorCode = 0;
  Status copied = x.check(d.cuMemcpyDtoHAsync(&errorCode, x.errorWord, sizeof(errorCode),
                                              x.stream),
                          "reading the error word");
  if (copied.ok()) {
    copied = x.check(d.cuMemsetD8Async(x.errorWord, 0, sizeof(errorCode), x.stream),
                     "clearing the error word");
  }
  for (int32_t i = 0; i < entry.num_outputs && copied.ok() && !deviceIO; ++i) {
    copied = x.check(d.cuMemcpyDtoHAsync(outputs[i].data, e.outputs[static_cast<size_t>(i)],
                                         outputs[i].byte_size, x.stream),
                     [&] { return std::string("copying output '") + entry.outputs[i].name + "' back"; });
  }
  Status synced = x.check(d.cuStreamSynchronize(x.stream), [&] {
    return std::string("running entry '") + entry.name + "' on " + x.description;
  });
  // train_step writes parameters, decode its KV caches.
  x.paramsNewer = x.stateNewer = Impl::Newer::Device;
  for (size_t i = 0; synced.ok() && x.timing && i + 1 < x.eventsUsed &&
                     i / 2 < kernelSeconds->size(); i += 2) {
    float ms = 0.0f;
    if (d.cuEventElapsedTime(&ms, x.events[i], x.events[i + 1]) == CUDA_SUCCESS) {
      (*kernelSeconds)[i / 2] += ms / 1e3;
    }
  }
  x.timing = false;
  TFC_RETURN_IF_ERROR(std::exchange(x.pending, Status()));
  TFC_RETURN_IF_ERROR(std::move(synced));
  TFC_RETURN_IF_ERROR(std::move(copied));
  if (errorCode != 0) {
    const char* message = errorCodeMessage(errorCode);
    if (message != nullptr) return Status::error(TFC_INVALID_ARGUMENT, "%s", message);
    return Status::error(TFC_INTERNAL, "a kernel reported the unknown error code %u", errorCode);
  }
  if (result != 0) {
    return Status::error(TFC_INTERNAL, "the entry's host code failed (returned %d)", result);
  }
  return Status();
}

void Executor::markHostChanged(bool params, bool state) {
  if (params) impl_->paramsNewer = Impl::Newer::Host;
  if (state) impl_->stateNewer = Impl::Newer::Host;
}

Status Executor::download(const std::vector<void*>& params, const std::vector<void*>& state) {
  Impl& x = *impl_;
  bool paramsStale = x.paramsNewer == Impl::Newer::Device;
  bool stateStale = x.stateNewer == Impl::Newer::Device;
  if (!paramsStale && !stateStale) return Status();
  TFC_RETURN_IF_ERROR(x.makeCurrent());
  TFC_RETURN_IF_ERROR(x.check(x.d->cuStreamSynchronize(x.stream), "cuStreamSynchronize"));
  for (size_t i = 0; i < x.params.size() && paramsStale; ++i) {
    if (x.paramBytes[i] == 0) continue;  // another pipeline stage's
    TFC_RETURN_IF_ERROR(x.check(x.d->cuMemcpyDtoH(params[i], x.params[i], x.paramBytes[i]),
                                std::string("downloading parameter '") +
                                    x.table->params[i].name + "'"));
  }
  for (size_t i = 0; i < x.state.size() && stateStale; ++i) {
    if (x.stateBytes[i] == 0) continue;
    TFC_RETURN_IF_ERROR(x.check(x.d->cuMemcpyDtoH(state[i], x.state[i], x.stateBytes[i]),
                                std::string("downloading state tensor '") +
                                    x.table->state[i].name + "'"));
  }
  if (paramsStale) x.paramsNewer = Impl::Newer::Neither;
  if (stateStale) x.stateNewer = Impl::Newer::Neither;
  return Status();
}

void Executor::launch(int32_t kernel, const tfc_device_launch_t& shape, void* const* args,
                      int32_t numArgs) {
  Impl& x = *impl_;
  if (!x.pending.ok()) return;
  if (kernel < 0 || static_cast<size_t>(kernel) >= x.functions.size() || numArgs < 0 ||
      numArgs > TFC_DEVICE_MAX_KERNEL_ARGS) {
    x.pending = Status::error(TFC_INTERNAL,
                              "%s: launch of kernel %d with %d arguments, but the module has %zu "
                              "kernels and a kernel takes at most %d arguments",
                              x.path.c_str(), kernel, numArgs, x.functions.size(),
                              TFC_DEVICE_MAX_KERNEL_ARGS);
    return;
  }
  void* params[TFC_DEVICE_MAX_KERNEL_ARGS];
  for (int32_t i = 0; i < numArgs; ++i) params[i] = const_cast<void**>(&args[i]);
  CUevent before = nullptr, after = nullptr;
  if (x.timing) {
    while (x.events.size() < x.eventsUsed + 2) {
      CUevent event = nullptr;
      x.pending = x.check(x.d->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
      if (!x.pending.ok()) return;
      x.events.push_back(event);
    }
    before = x.events[x.eventsUsed];
    after = x.events[x.eventsUsed + 1];
    x.eventsUsed += 2;
    x.d->cuEventRecord(before, x.stream);
  }
  CUresult result = x.d->cuLaunchKernel(
      x.functions[static_cast<size_t>(kernel)], shape.grid[0], shape.grid[1], shape.grid[2],
      shape.block[0], shape.block[1], shape.block[2], shape.shared_bytes, x.stream, params,
      nullptr);
  if (after != nullptr) x.d->cuEventRecord(after, x.stream);
  if (result != CUDA_SUCCESS) {
    x.pending = x.check(result, [&] {
      return std::string("launching kernel '") + x.table->device_kernels[kernel] + "'";
    });
  }
}

int32_t Executor::matmul(const tfc_device_matmul_t& product, const void* a, const void* b,
                         void* c, const void* bias) {
  Impl& x = *impl_;
  if (!x.products->enabled()) return 1;
  if (!x.pending.ok()) return 0;  // the call already failed: nothing more runs
  if (x.workspace == 0) {
    if (x.capturing) {
      // Allocations cannot be captured; the first (eager) call allocates it.
      x.pending = Status::error(TFC_INTERNAL, "a first product while capturing a graph");
      return 0;
    }
    auto workspace = x.allocate(LibraryProducts::kWorkspaceBytes, "cuBLASLt's workspace");
    if (!workspace.ok()) {
      x.pending = std::move(workspace).takeStatus();
      return 0;
    }
    x.workspace = *workspace;
  }
  // Timed as a launch (profiles): the events around it fill the kernel's slot.
  CUevent after = nullptr;
  if (x.timing) {
    while (x.events.size() < x.eventsUsed + 2) {
      CUevent event = nullptr;
      x.pending = x.check(x.d->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
      if (!x.pending.ok()) return 0;
      x.events.push_back(event);
    }
  }
  CUevent before = x.timing ? x.events[x.eventsUsed] : nullptr;
  if (before != nullptr) x.d->cuEventRecord(before, x.stream);
  Status failure;
  if (!x.products->run(product, a, b, c, bias, x.stream, x.workspace, &failure)) {
    return 1;  // (the unused "before" event is recorded again by the kernel's launch)
  }
  if (x.timing) {
    after = x.events[x.eventsUsed + 1];
    x.eventsUsed += 2;
    x.d->cuEventRecord(after, x.stream);
  }
  x.pending = std::move(failure);
  return 0;
}

const std::string& Executor::productsSummary() const { return impl_->products->summary(); }

uint64_t Executor::deviceBytes() const { return impl_->allocatedBytes; }

void Executor::copy(void* dst, const void* src, uint64_t bytes) {
  Impl& x = *impl_;
  if (!x.pending.ok()) return;
  x.pending = x.check(x.d->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                             reinterpret_cast<CUdeviceptr>(src), bytes,
                                             x.stream),
                      "a device-to-device copy of the memory plan");
}

void* Executor::constant(const void* data, uint64_t bytes) {
  Impl& x = *impl_;
  auto found = x.constants.find(data);
  if (found != x.constants.end()) return reinterpret_cast<void*>(found->second);
  if (!x.pending.ok()) return nullptr;
  if (x.capturing) {
    // Allocations cannot be captured; the first (eager) call uploads every constant.
    x.pending = Status::error(TFC_INTERNAL, "a constant first used while capturing a graph");
    return nullptr;
  }
  auto device = x.allocate(bytes, "a constant of the model");
  if (!device.ok()) {
    x.pending = std::move(device).takeStatus();
    return nullptr;
  }
  x.pending = x.check(x.d->cuMemcpyHtoD(*device, data, bytes), "uploading a constant");
  if (!x.pending.ok()) return nullptr;
  x.constants.emplace(data, *device);
  return reinterpret_cast<void*>(*device);
}

Status Executor::throughHost(const void* send, size_t sendBytes, void* recv, size_t recvBytes,
                             const std::function<Status(const void*, void*)>& exchange) {
  Impl& x = *impl_;
  if (!x.pending.ok()) return Status();  // reported when the entry returns
  if (x.capturing) {
    // A graph cannot hold the exchange (the host must take part), so the entry runs eagerly;
    // nothing is exchanged now, so every rank still makes each collective once per call.
    x.pending = Status::error(TFC_INTERNAL, "a collective while capturing a graph");
    return Status();
  }
  x.collectiveSend.resize(sendBytes);
  x.collectiveRecv.resize(recvBytes);
  if (sendBytes > 0) {
    TFC_RETURN_IF_ERROR(x.check(x.d->cuMemcpyDtoHAsync(x.collectiveSend.data(),
                                                       reinterpret_cast<CUdeviceptr>(send),
                                                       sendBytes, x.stream),
                                "copying a collective's input to the host"));
  }
  TFC_RETURN_IF_ERROR(x.check(x.d->cuStreamSynchronize(x.stream),
                              "waiting for the kernels before a collective"));
  TFC_RETURN_IF_ERROR(exchange(x.collectiveSend.data(), x.collectiveRecv.data()));
  if (recvBytes == 0) return Status();
  // On the stream, so that the kernels after it read the result; the buffer stays as it is
  // until the next collective, which first waits for the stream.
  return x.check(x.d->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(recv),
                                        x.collectiveRecv.data(), recvBytes, x.stream),
                 "copying a collective's result to the GPU");
}

// Also after a failure: the entry's later collectives then fail too, never fall back on the
// host path, which would pair them with other collectives of the other ranks.
bool Executor::hasDeviceCollectives() const { return !impl_->ncclGroups.empty(); }

Status Executor::openNccl(const Nccl& nccl, Communicator& over, Communicator& world,
                          const std::string& group) {
  Impl& x = *impl_;
  TFC_RETURN_IF_ERROR(x.makeCurrent());
  const int rank = over.rank(), size = over.size();
  // Rank 0's unique id, and whether it could make one, to every rank. Each step below ends
  // the same way on every rank (an error everywhere, or success everywhere), so that none is
  // left waiting in NCCL for another that gave up.
  struct {
    ncclUniqueId id;
    int32_t made;
  } bootstrap;
  std::memset(&bootstrap, 0, sizeof(bootstrap));
  Status made;
  if (rank == 0) {
    made = checkNccl(nccl, nccl.ncclGetUniqueId(&bootstrap.id), "rank 0: ncclGetUniqueId");
    bootstrap.made = made.ok() ? 1 : 0;
  }
  TFC_RETURN_IF_ERROR(over.broadcast(&bootstrap, sizeof(bootstrap), 0, "the NCCL unique id"));
  if (!made.ok()) return made;
  if (bootstrap.made == 0) {
    return Status(TFC_FAILED_PRECONDITION, "rank 0 could not make an NCCL unique id");
  }
  // The current context's device is the communicator's (NCCL asks the CUDA runtime, which
  // follows the driver's current context).
  ncclComm_t comm = nullptr;
  Status init = checkNccl(nccl, nccl.ncclCommInitRank(&comm, size, bootstrap.id, rank),
                          "ncclCommInitRank (rank " + std::to_string(rank) + " of " +
                              std::to_string(size) + ", " + x.description + ")");
  float initialized = init.ok() ? 1.0f : 0.0f;
  Status agreed = over.allReduce(&initialized, &initialized, 1, ReduceOp::kSum,
                                 "the count of ranks whose ncclCommInitRank succeeded");
  if (!agreed.ok() || initialized != static_cast<float>(size)) {
    if (init.ok()) nccl.ncclCommAbort(comm);
    if (!agreed.ok()) return agreed;
    if (init.ok()) {
      return Status::error(TFC_FAILED_PRECONDITION, "ncclCommInitRank failed on %d of the %d "
                           "ranks (they say why)", size - static_cast<int>(initialized),
                           size);
    }
    return init;
  }
  x.nccl = &nccl;
  x.ncclGroups.push_back({group, comm, rank, size});
  x.world = &world;
  x.commRank = world.rank();
  x.commSize = world.size();
  return Status();
}

Status Executor::deviceCollective(int32_t kind, int32_t reduce, const void* send, void* recv,
                                  uint64_t count, const std::string& group,
                                  const std::string& what) {
  Impl& x = *impl_;
  if (!x.pending.ok()) return Status();  // reported when the entry returns
  if (x.capturing) {
    // As in collective(): never in a graph (the wait below is the host's).
    x.pending = Status::error(TFC_INTERNAL, "a collective while capturing a graph");
    return Status();
  }
  const char* name = ncclName(kind);
  // The group's communicator; the world's ("") serves every group where it is the only one.
  Impl::NcclGroup* on = nullptr;
  for (auto& g : x.ncclGroups) {
    if (g.name == group || (x.ncclGroups.size() == 1 && g.name.empty())) on = &g;
  }
  const int rank = on ? on->rank : x.commRank, size = on ? on->size : x.commSize;
  // "ncclAllReduce of group 'dp' (1234 elements), rank 0 of 2 on GPU 0: ..."
  auto subject = [&] {
    return std::string(name != nullptr ? name : "collective") + " of " + what + " (" +
           std::to_string(count) + (kind == TFC_COLLECTIVE_BROADCAST ? " bytes" : " elements") +
           "), rank " + std::to_string(rank) + " of " + std::to_string(size) + " on " +
           x.description;
  };
  if (x.commFailed) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: the NCCL communicator failed earlier and cannot be used again",
                         subject().c_str());
  }
  if (on == nullptr || on->comm == nullptr || name == nullptr) {
    return Status::error(TFC_INTERNAL, "%s: collective kind %d has no NCCL form here",
                         subject().c_str(), kind);
  }
  const ncclComm_t comm = on->comm;
  const Nccl& n = *x.nccl;
  // The kernels before the collective first, so that the deadline is the collective's own.
  TFC_RETURN_IF_ERROR(x.check(x.d->cuStreamSynchronize(x.stream), [&] {
    return "waiting for the kernels before " + subject();
  }));
  // A failure from here on leaves the ranks out of step: abort the communicator, and the
  // job at exit (a rank still inside a collective would hang MPI's finalization).
  auto fail = [&](std::string message) {
    for (auto& g : x.ncclGroups) {
      if (g.comm != nullptr) n.ncclCommAbort(g.comm);
      g.comm = nullptr;
    }
    x.commFailed = true;
    if (x.world != nullptr) x.world->markFailed();
    return Status(TFC_FAILED_PRECONDITION, message);
  };
  // Sum and mean: NCCL's ncclAvg divides the sum by the ranks' count, as TFC_REDUCE_MEAN does.
  const ncclRedOp_t op = reduce == TFC_REDUCE_MEAN ? ncclAvg : ncclSum;
  const size_t elements = static_cast<size_t>(count);
  ncclResult_t started = ncclSuccess;
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE:
      started = n.ncclAllReduce(send, recv, elements, ncclFloat32, op, comm, x.stream);
      break;
    case TFC_COLLECTIVE_REDUCE_SCATTER:
      started = n.ncclReduceScatter(send, recv, elements, ncclFloat32, op, comm, x.stream);
      break;
    case TFC_COLLECTIVE_ALL_GATHER:
      started = n.ncclAllGather(send, recv, elements, ncclFloat32, comm, x.stream);
      break;
    default:  // TFC_COLLECTIVE_BROADCAST: in place, from rank 0
      started = n.ncclBroadcast(recv, recv, elements, ncclUint8, 0, comm, x.stream);
      break;
  }
  if (started != ncclSuccess) {
    return fail(checkNccl(n, started, subject() + ": could not start").message());
  }
  ++x.ncclCollectives;
  // NCCL's calls only queue work: poll the stream (and NCCL's own errors, such as a peer's
  // connection lost) until it is done or the deadline passes, never block for ever.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const double timeout = commTimeoutSeconds();
  for (long polls = 0;; ++polls) {
    CUresult queried = x.d->cuStreamQuery(x.stream);
    if (queried == CUDA_SUCCESS) return Status();
    if (queried != CUDA_ERROR_NOT_READY) {
      return fail(x.check(queried, [&] { return subject(); }).message());
    }
    ncclResult_t async = ncclSuccess;
    ncclResult_t asked = n.ncclCommGetAsyncError(comm, &async);
    if (asked != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
      return fail(checkNccl(n, asked != ncclSuccess ? asked : async, subject()).message());
    }
    if (polls % 256 == 255 &&
        std::chrono::duration<double>(Clock::now() - start).count() > timeout) {
      char text[256];
      std::snprintf(text, sizeof(text),
                    ": did not complete within %.0f s (TFC_COMM_TIMEOUT_S): another rank of the "
                    "%d died, stopped or is running a different program; NCCL communicator "
                    "aborted",
                    timeout, size);
      return fail(subject() + text);
    }
    sched_yield();
  }
}

}  // namespace tfc::internal::cuda
