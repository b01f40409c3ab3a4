// Contexts: state, arenas, the thread pool, and calling entry points.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "devices/cuda/executor.hpp"
#include "devices/cuda/nccl.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"
#include "base/file_util.hpp"
#include "core/host_device.hpp"
#include "core/runtime_internal.hpp"

using tfc::Status;
using tfc::internal::quoteForMessage;

tfc_context_s::~tfc_context_s() {
  device.reset();
  pool.reset();
  for (auto& buffer : state) tfc::internal::freeBuffer(allocator, buffer);
  tfc_params_release(params);
  tfc_artifact_release(artifact);
}

namespace {

void hostParallelFor(void* user, int64_t n, int64_t grain,
                     void (*fn)(void* ctx, int64_t begin, int64_t end), void* ctx) {
  auto* context = static_cast<tfc_context_t*>(user);
  context->pool->parallelFor(n, grain, fn, ctx);
}

void hostReportError(void* user, const char* message) {
  auto* context = static_cast<tfc_context_t*>(user);
  std::lock_guard<std::mutex> lock(context->errorMutex);
  if (context->hasError) return;  // keep the first
  context->hasError = true;
  context->error = message != nullptr ? message : "(null message)";
}

// Collectives of compiled code (tfc.all_reduce, ...) go to the communicator of their group:
// the world where the artifact has one kind of parallelism, else this rank's "dp", "pp" or
// "tp" group of the mesh (groupCommunicator()).
tfc::StatusOr<tfc::Communicator*> communicatorOf(const tfc_context_t* context, const char* group) {
  return tfc::groupCommunicator(group != nullptr ? group : "", context->mesh);
}

tfc::Status runCollective(tfc::Communicator* comm, int32_t kind, int32_t reduce,
                          const char* group, const void* send, void* recv, uint64_t count) {
  const tfc::ReduceOp op = reduce == TFC_REDUCE_MEAN ? tfc::ReduceOp::kMean : tfc::ReduceOp::kSum;
  // A group's communicator names itself and its ranks in its messages.
  const std::string what =
      comm->name().empty() ? std::string("group '") + (group ? group : "") + "'" : "";
  const auto* in = static_cast<const float*>(send);
  auto* out = static_cast<float*>(recv);
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE: return comm->allReduce(in, out, count, op, what);
    case TFC_COLLECTIVE_REDUCE_SCATTER: return comm->reduceScatter(in, out, count, op, what);
    case TFC_COLLECTIVE_ALL_GATHER: return comm->allGather(in, out, count, what);
    case TFC_COLLECTIVE_ALL_TO_ALL: return comm->allToAll(in, out, count, what);
    case TFC_COLLECTIVE_BROADCAST: return comm->broadcast(recv, count, 0, what);
    case TFC_COLLECTIVE_BARRIER: return comm->barrier(what);
    default: return tfc::Status::error(TFC_INVALID_ARGUMENT, "unknown collective kind %d", kind);
  }
}

// The bytes a collective reads from |send| and writes to |recv| (artifact_abi.h's counts).
void collectiveBytes(int32_t kind, uint64_t count, int size, size_t* sendBytes,
                     size_t* recvBytes) {
  const size_t n = static_cast<size_t>(count) * sizeof(float);
  const size_t all = n * static_cast<size_t>(size);
  switch (kind) {
    case TFC_COLLECTIVE_ALL_REDUCE: *sendBytes = n, *recvBytes = n; break;
    case TFC_COLLECTIVE_REDUCE_SCATTER: *sendBytes = all, *recvBytes = n; break;
    case TFC_COLLECTIVE_ALL_GATHER: *sendBytes = n, *recvBytes = all; break;
    case TFC_COLLECTIVE_ALL_TO_ALL: *sendBytes = all, *recvBytes = all; break;
    case TFC_COLLECTIVE_BROADCAST: *sendBytes = 0, *recvBytes = static_cast<size_t>(count); break;
    default: *sendBytes = 0, *recvBytes = 0; break;
  }
}

int32_t hostCollective(void* user, int32_t kind, int32_t reduce, const char* group,
                       const void* send, void* recv, uint64_t count) {
  auto* context = static_cast<tfc_context_t*>(user);
  auto comm = communicatorOf(context, group);
  tfc::Status status = comm.ok() ? tfc::Status() : std::move(comm).takeStatus();
  if (status.ok() && context->device->hasDeviceCollectives() &&
      kind != TFC_COLLECTIVE_ALL_TO_ALL && kind != TFC_COLLECTIVE_BARRIER) {
    // On the GPU, over NCCL (all-to-all, which NCCL has no call for, and the barrier, which
    // has no data, go through the host), on the group's communicator (setUpDeviceCollectives).
    status = context->device->deviceCollective(kind, reduce, send, recv, count,
                                               group != nullptr ? group : "",
                                               std::string("group '") + (group ? group : "") +
                                                   "'");
  } else if (status.ok()) {
    // On the host's buffers, or a GPU's staged through the host.
    size_t sendBytes = 0, recvBytes = 0;
    collectiveBytes(kind, count, (*comm)->size(), &sendBytes, &recvBytes);
    // A broadcast receives in place: its host copy starts as the root's data.
    if (kind == TFC_COLLECTIVE_BROADCAST) sendBytes = recvBytes;
    status = context->device->throughHost(
        kind == TFC_COLLECTIVE_BROADCAST ? recv : send, sendBytes, recv, recvBytes,
        [&](const void* hostSend, void* hostRecv) {
          if (kind == TFC_COLLECTIVE_BROADCAST && hostRecv != hostSend) {
            std::memcpy(hostRecv, hostSend, recvBytes);
          }
          return runCollective(*comm, kind, reduce, group, hostSend, hostRecv, count);
        });
  }
  if (status.ok()) return 0;
  hostReportError(user, status.message());
  return 1;
}

// Point-to-point messages between pipeline stages (tfc.send / tfc.recv) go to their group's
// communicator: the world where the artifact is pipeline parallel alone. A GPU's buffers are
// staged through the host (over MPI, also where NCCL runs the collectives).
int32_t hostP2p(void* user, int32_t kind, const char* group, int32_t peer, int64_t tag,
                void* data, uint64_t bytes) {
  auto* context = static_cast<tfc_context_t*>(user);
  auto comm = communicatorOf(context, group);
  tfc::Status status = comm.ok() ? tfc::Status() : std::move(comm).takeStatus();
  const std::string what = "message " + std::to_string(tag) + " of group '" +
                           (group ? group : "") + "'";
  auto exchange = [&](void* host) {
    return kind == TFC_P2P_SEND ? (*comm)->send(peer, tag, host, bytes, what)
                                : (*comm)->recv(peer, tag, host, bytes, what);
  };
  if (status.ok()) {
    const bool send = kind == TFC_P2P_SEND;
    status = context->device->throughHost(
        send ? data : nullptr, send ? bytes : 0, send ? nullptr : data, send ? 0 : bytes,
        [&](const void* hostSend, void* hostRecv) {
          return exchange(send ? const_cast<void*>(hostSend) : hostRecv);
        });
  }
  if (status.ok()) return 0;
  hostReportError(user, status.message());
  return 1;
}

// Gradient buckets (tfc.all_reduce_start / _wait) go to the world communicator's buckets.
int32_t hostCollectiveStart(void* user, int32_t kind, int32_t reduce, const char* group,
                            int64_t tag, int32_t num_buffers, const void* const* send,
                            const int64_t* counts) {
  auto world = tfc::worldCommunicator();
  tfc::Status status = world.ok() ? tfc::Status() : std::move(world).takeStatus();
  if (status.ok() && !static_cast<tfc_context_t*>(user)->device->takesGradientBuckets()) {
    // The communication thread reads host memory; tfc compiles CUDA artifacts with
    // blocking collectives, which the executor stages through the host.
    status = tfc::Status::error(TFC_UNIMPLEMENTED,
                                "gradient buckets on a GPU are not built (recompile with "
                                "--dp-bucket-mb=-1)");
  }
  if (status.ok() && static_cast<tfc_context_t*>(user)->mesh.dimensions() > 1) {
    // Buckets live on the world communicator; tfc compiles blocking all-reduces for a mesh.
    status = tfc::Status::error(TFC_UNIMPLEMENTED,
                                "gradient buckets of group '%s' in a %s artifact are not built "
                                "(tfc compiles its gradients' all-reduces blocking)",
                                group ? group : "",
                                static_cast<tfc_context_t*>(user)->mesh.flags().c_str());
  }
  if (status.ok() && kind != TFC_COLLECTIVE_ALL_REDUCE) {
    status = tfc::Status::error(TFC_INVALID_ARGUMENT,
                                "collective kind %d in a gradient bucket (all_reduce only)", kind);
  }
  if (status.ok()) {
    const tfc::ReduceOp op = reduce == TFC_REDUCE_MEAN ? tfc::ReduceOp::kMean : tfc::ReduceOp::kSum;
    status = (*world)->startAllReduce(
        tag, num_buffers, reinterpret_cast<const float* const*>(send), counts, op,
        std::string("gradient bucket ") + std::to_string(tag) + " of group '" +
            (group ? group : "") + "'");
  }
  if (status.ok()) return 0;
  hostReportError(user, status.message());
  return 1;
}

int32_t hostCollectiveWait(void* user, int64_t tag, int32_t num_buffers, void* const* recv,
                           const int64_t* counts) {
  auto world = tfc::worldCommunicator();
  tfc::Status status = world.ok() ? tfc::Status() : std::move(world).takeStatus();
  if (status.ok()) {
    status = (*world)->waitAllReduce(tag, num_buffers, reinterpret_cast<float* const*>(recv),
                                     counts);
  }
  if (status.ok()) return 0;
  hostReportError(user, status.message());
  return 1;
}

// A data-parallel artifact runs only in a world of the size it was compiled for: the batch
// each rank reads and the mean of the gradients depend on it.
tfc::Status checkWorldSize(const tfc_loaded_artifact_t* artifact) {
  const char* json = artifact->table->metadata_json;
  std::optional<int64_t> compiled =
      tfc::metadataInt(json != nullptr ? json : "", TFC_METADATA_WORLD_SIZE);
  if (!compiled) return tfc::Status();
  TFC_ASSIGN_OR_RETURN(tfc::Communicator* world, tfc::worldCommunicator());
  if (*compiled == world->size()) return tfc::Status();
  // Name the flags it came from: --dp, --pp, --tp or several (their product is the world).
  TFC_ASSIGN_OR_RETURN(tfc::ProcessMesh mesh, tfc::processMesh(json != nullptr ? json : ""));
  std::string flags = mesh.size() > 1 ? mesh.flags() : "--dp=1";
  std::string hint;
  // Expert parallel: its ranks are data-parallel replicas that share the experts.
  if (auto ep = tfc::metadataInt(json != nullptr ? json : "", TFC_METADATA_EP_SIZE)) {
    flags = "--ep=" + std::to_string(*ep);
    hint = "recompile with --ep=" + std::to_string(world->size());
  } else if (mesh.dimensions() <= 1) {
    const std::string flag = flags.substr(0, flags.find('='));
    hint = "recompile with " + flag + "=" + std::to_string(world->size()) +
           (mesh.pp > 1 ? " (one rank a stage)" : "");
  } else {
    std::vector<std::string> flagNames;
    for (const char* group : {"dp", "pp", "tp"}) {
      if (mesh.sizeOf(group) > 1) flagNames.push_back(std::string("--") + group);
    }
    std::string names = flagNames[0];
    for (size_t i = 1; i < flagNames.size(); ++i) {
      names += (i + 1 == flagNames.size() ? " and " : ", ") + flagNames[i];
    }
    hint = "recompile with " + names + " whose product is " + std::to_string(world->size());
  }
  return tfc::Status::error(
      TFC_FAILED_PRECONDITION,
      "%s was compiled for %lld processes (tfc %s) but runs in a world of %d (%s); start it "
      "with `mpirun -np %lld ...` or %s",
      artifact->path.c_str(), static_cast<long long>(*compiled), flags.c_str(), world->size(),
      world->size() == 1 ? "not under mpirun" : "mpirun -np", static_cast<long long>(*compiled),
      hint.c_str());
}

// How a CUDA context of a multi-process job runs its collectives: over NCCL on the GPU's
// buffers, or staged through the host over the world communicator (MPI). TFC_COMM_DEVICE
// chooses: "auto" (the default: NCCL where it loads), "nccl" (an error where it does not),
// "host". Only for an artifact compiled for a world of processes (its collectives); rank 0
// says on stderr, once per process, which transport and why.
Status setUpDeviceCollectives(tfc_context_t* context, tfc::internal::cuda::Executor& executor) {
  const char* json = context->artifact->table->metadata_json;
  if (!tfc::metadataInt(json != nullptr ? json : "", TFC_METADATA_WORLD_SIZE)) return Status();
  TFC_ASSIGN_OR_RETURN(tfc::Communicator* world, tfc::worldCommunicator());
  if (world->size() == 1) return Status();
  const char* variable = std::getenv("TFC_COMM_DEVICE");
  const std::string mode = variable != nullptr && *variable != '\0' ? variable : "auto";
  if (mode != "auto" && mode != "nccl" && mode != "host") {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "TFC_COMM_DEVICE='%s' is not a transport for a CUDA artifact's "
                         "collectives: auto (the default: NCCL where libnccl.so.2 loads), nccl "
                         "or host (staged through the host over MPI)",
                         variable);
  }
  static std::once_flag said;
  auto say = [&](const std::string& line) {
    if (world->rank() != 0) return;
    std::call_once(said, [&] { std::fprintf(stderr, "tfc: %s\n", line.c_str()); });
  };
  if (mode == "host") {
    say("collectives staged through the host over MPI (TFC_COMM_DEVICE=host)");
    return Status();
  }
  auto nccl = tfc::internal::cuda::loadNccl();
  // Every rank takes the same way: one falling back alone would leave the others waiting.
  float loaded = nccl.ok() ? 1.0f : 0.0f;
  TFC_RETURN_IF_ERROR(world->allReduce(&loaded, &loaded, 1, tfc::ReduceOp::kSum,
                                       "the count of ranks that load NCCL"));
  if (!nccl.ok() || loaded != static_cast<float>(world->size())) {
    const std::string why =
        !nccl.ok() ? nccl.status().message()
                   : fmt::format("NCCL loads on {} of the {} ranks only", loaded, world->size());
    if (mode == "nccl") {
      return Status::error(TFC_FAILED_PRECONDITION,
                           "%s: rank %d: TFC_COMM_DEVICE=nccl, but NCCL cannot be used: %s "
                           "(install NCCL 2.10 or newer, set TFC_NCCL_LIBRARY to its "
                           "libnccl.so.2, or set TFC_COMM_DEVICE=host)",
                           context->artifact->path.c_str(), world->rank(), why.c_str());
    }
    say("collectives staged through the host over MPI (" + why + ")");
    return Status();
  }
  // One communicator for the world, or one per process group of a mesh (every rank opens
  // "dp", then "pp", then "tp", those of more than one rank). The first fails alike on every
  // rank: NCCL loads but cannot run (a GPU it cannot use, the emulated driver of the tests) is
  // a reason to fall back as a missing NCCL is.
  std::vector<std::string> groups;
  if (context->mesh.dimensions() > 1) {
    for (const char* group : {"dp", "pp", "tp"}) {
      if (context->mesh.sizeOf(group) > 1) groups.push_back(group);
    }
  } else {
    groups.push_back("");
  }
  std::string groupNames;
  for (const std::string& group : groups) {
    groupNames += (groupNames.empty() ? "; groups " : " and ") + group;
  }
  if (groups.size() == 1) groupNames.clear();
  auto open = [&](const std::string& group) -> Status {
    tfc::Communicator* over = world;
    if (!group.empty()) {
      TFC_ASSIGN_OR_RETURN(over, communicatorOf(context, group.c_str()));
    }
    return executor.openNccl(**nccl, *over, *world, group);
  };
  if (Status opened = open(groups[0]); !opened.ok()) {
    if (mode == "nccl") {
      return Status::error(opened.code(), "%s: TFC_COMM_DEVICE=nccl: %s (%s)",
                           context->artifact->path.c_str(), opened.message(),
                           (*nccl)->path.c_str());
    }
    say(std::string("collectives staged through the host over MPI (NCCL ") +
        tfc::internal::cuda::ncclVersionText((*nccl)->version) + " from " + (*nccl)->path +
        " loads but cannot run: " + opened.message() + ")");
    return Status();
  }
  // A later group's failure, after the first opened, leaves no way back to the host.
  for (size_t g = 1; g < groups.size(); ++g) {
    if (Status opened = open(groups[g]); !opened.ok()) {
      return Status::error(opened.code(), "%s: NCCL for group '%s': %s (%s)",
                           context->artifact->path.c_str(), groups[g].c_str(), opened.message(),
                           (*nccl)->path.c_str());
    }
  }
  say("collectives on the GPUs over NCCL " +
      tfc::internal::cuda::ncclVersionText((*nccl)->version) + " (" + (*nccl)->path +
      ", TFC_COMM_DEVICE=" + mode + groupNames + ")");
  return Status();
}

// tfc_host_api_t.device_* of a CUDA artifact's context, whose device is its executor.
// The compiled code's device callbacks come only from a CUDA artifact's context, whose
// cudaExecutor is its device.
tfc::internal::cuda::Executor& executorOf(void* user) {
  return *static_cast<tfc_context_t*>(user)->cudaExecutor;
}

void hostDeviceLaunch(void* user, int32_t kernel, const tfc_device_launch_t* launch,
                      void* const* args, int32_t numArgs) {
  executorOf(user).launch(kernel, *launch, args, numArgs);
}

void hostDeviceCopy(void* user, void* dst, const void* src, uint64_t bytes) {
  executorOf(user).copy(dst, src, bytes);
}

int32_t hostDeviceMatmul(void* user, const tfc_device_matmul_t* product, const void* a,
                         const void* b, void* c, const void* bias) {
  return executorOf(user).matmul(*product, a, b, c, bias);
}

void* hostDeviceConstant(void* user, const void* data, uint64_t bytes) {
  return executorOf(user).constant(data, bytes);
}

// The host copies of the context's parameters and state, current again.
Status download(const tfc_context_t* context) {
  return context->device->download(context->paramPointers, context->statePointers);
}

void hostKernelBegin(void* user, int32_t) {
  auto* context = static_cast<tfc_context_t*>(user);
  context->profile.launchStart = std::chrono::steady_clock::now();
}

void hostKernelEnd(void* user, int32_t kernel) {
  auto* context = static_cast<tfc_context_t*>(user);
  auto end = std::chrono::steady_clock::now();
  tfc_context_s::Profile& profile = context->profile;
  if (profile.entry < 0) return;
  std::vector<double>& seconds = profile.kernelSeconds[static_cast<size_t>(profile.entry)];
  // An index past the table (an artifact without one) is not timed.
  if (kernel < 0 || static_cast<size_t>(kernel) >= seconds.size()) return;
  seconds[static_cast<size_t>(kernel)] +=
      std::chrono::duration<double>(end - profile.launchStart).count();
}

Status resetState(tfc_context_t* context) {
  std::vector<tfc::internal::InitSpec> specs;
  TFC_RETURN_IF_ERROR(tfc::internal::initSpecsFor(context->artifact, true, &specs));
  const tfc_artifact_t& table = *context->artifact->table;
  for (int32_t i = 0; i < table.num_state; ++i) {
    if (context->state[static_cast<size_t>(i)].data == nullptr) continue;  // another stage's
    const tfc_tensor_desc_t& desc = table.state[i];
    Status status = tfc::internal::fillInit(
        specs[static_cast<size_t>(i)], static_cast<tfc_dtype_t>(desc.dtype),
        tfc::internal::descShape(desc),
        tfc::internal::initStreamSeed(context->stateSeed, static_cast<uint64_t>(i)),
        context->state[static_cast<size_t>(i)].data);
    if (!status.ok()) {
      return Status::error(status.code(), "%s: state tensor %s: %s",
                           context->artifact->path.c_str(), quoteForMessage(desc.name).c_str(),
                           status.message());
    }
  }
  context->device->markHostChanged(false, true);
  return Status();
}

struct Range {
  uintptr_t begin;
  uintptr_t end;
  std::string what;
};

// The ABI forbids aliasing between the buffers of one call.
Status checkNoOverlap(std::vector<Range>& ranges, const std::string& entrySubject) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "%s: %s and %s overlap in memory (buffers of a call may not alias; "
                           "pass a copy)",
                           entrySubject.c_str(), ranges[i - 1].what.c_str(),
                           ranges[i].what.c_str());
    }
  }
  return Status();
}

// The KV-cache entries of decoder-only models take positions the compiled code can only
// check late and obscurely: a position past the cache fails as a row of the position
// embedding ("embedding: id out of range"), and prefill's n is clamped (after an int32
// n - 1, so n = -2147483648 acts as the maximum). Checked here, before the call, so that
// every caller (tfc-run, Python, the C API) gets the same message. Host buffers only.
Status checkCacheInputs(const tfc_context_t* context, const tfc_entry_t& entry,
                        const tfc_tensor_ref_t* inputs, const std::string& subject) {
  const std::string name = entry.name;
  if (name != "prefill" && name != "decode") return Status();
  auto scalar = [&](const char* input) -> std::optional<int64_t> {
    for (int32_t i = 0; i < entry.num_inputs; ++i) {
      if (std::strcmp(entry.inputs[i].name, input) != 0 || entry.inputs[i].rank != 0 ||
          inputs[i].data == nullptr) {
        continue;
      }
      if (entry.inputs[i].dtype == TFC_DTYPE_I32) {
        return *static_cast<const int32_t*>(inputs[i].data);
      }
      if (entry.inputs[i].dtype == TFC_DTYPE_I64) {
        return *static_cast<const int64_t*>(inputs[i].data);
      }
    }
    return std::nullopt;
  };
  // The chunk's length P: the tokens each call writes into the cache.
  int64_t chunk = 1;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    if ((std::strcmp(entry.inputs[i].name, "tokens") == 0 ||
         std::strcmp(entry.inputs[i].name, "token") == 0) &&
        entry.inputs[i].rank == 2) {
      chunk = entry.inputs[i].shape[1];
    }
  }
  if (std::optional<int64_t> n = scalar("n"); n && name == "prefill" && (*n < 1 || *n > chunk)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: n = %lld is out of range: it counts the tokens of the chunk in "
                         "use, 1 to %lld (the chunk's length P)",
                         subject.c_str(), static_cast<long long>(*n),
                         static_cast<long long>(chunk));
  }
  std::optional<int64_t> pos = scalar("pos");
  if (!pos) return Status();
  const int64_t nCtx = context->nCtx;
  if (*pos < 0) {
    std::string limit =
        nCtx > 0 ? " and the context length (n_ctx) is " + std::to_string(nCtx) : "";
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: pos = %lld is not a position in the KV cache: positions start "
                         "at 0%s",
                         subject.c_str(), static_cast<long long>(*pos), limit.c_str());
  }
  if (nCtx > 0 && *pos + chunk > nCtx) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: position %lld + %lld token%s exceeds the context: the model's "
                         "context length (n_ctx) is %lld, so pos is at most %lld",
                         subject.c_str(), static_cast<long long>(*pos),
                         static_cast<long long>(chunk), chunk == 1 ? "" : "s",
                         static_cast<long long>(nCtx), static_cast<long long>(nCtx - chunk));
  }
  return Status();
}

std::string nameList(const tfc_tensor_desc_t* descs, int32_t count) {
  std::string list;
  for (int32_t i = 0; i < count; ++i) {
    if (i > 0) list += ", ";
    list += descs[i].name;
  }
  return list;
}

Status callEntry(tfc_context_t* context, int32_t index, const tfc_tensor_ref_t* inputs,
                 size_t numInputs, const tfc_tensor_ref_t* outputs, size_t numOutputs,
                 bool deviceIO = false) {
  const tfc_loaded_artifact_t* artifact = context->artifact;
  const tfc_artifact_t& table = *artifact->table;
  if (index < 0 || index >= table.num_entries) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: entry index %d is out of range [0, %d)",
                         artifact->path.c_str(), index, table.num_entries);
  }
  const tfc_entry_t& entry = table.entries[index];
  std::string subject = artifact->path + ": entry " + quoteForMessage(entry.name);
  if (deviceIO && context->device->usesHostMemory()) {
    return Status::error(TFC_FAILED_PRECONDITION, "%s: device buffers given, but this context "
                         "runs on the CPU (a CPU artifact; call it with host buffers)",
                         subject.c_str());
  }
  if (numInputs != static_cast<size_t>(entry.num_inputs)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s takes %d input%s (%s), got %zu",
                         subject.c_str(), entry.num_inputs, entry.num_inputs == 1 ? "" : "s",
                         nameList(entry.inputs, entry.num_inputs).c_str(), numInputs);
  }
  if (numOutputs != static_cast<size_t>(entry.num_outputs)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s has %d output%s (%s), got %zu",
                         subject.c_str(), entry.num_outputs, entry.num_outputs == 1 ? "" : "s",
                         nameList(entry.outputs, entry.num_outputs).c_str(), numOutputs);
  }
  if ((numInputs > 0 && inputs == nullptr) || (numOutputs > 0 && outputs == nullptr)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: null inputs or outputs array",
                         subject.c_str());
  }
  std::vector<Range> ranges;
  for (size_t i = 0; i < numInputs; ++i) {
    std::string what = "input " + quoteForMessage(entry.inputs[i].name);
    TFC_RETURN_IF_ERROR(
        tfc::internal::checkTensorRef(inputs[i], entry.inputs[i], subject + " " + what));
    auto begin = reinterpret_cast<uintptr_t>(inputs[i].data);
    if (inputs[i].byte_size > 0) ranges.push_back({begin, begin + inputs[i].byte_size, what});
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    std::string what = "output " + quoteForMessage(entry.outputs[i].name);
    TFC_RETURN_IF_ERROR(
        tfc::internal::checkTensorRef(outputs[i], entry.outputs[i], subject + " " + what));
    auto begin = reinterpret_cast<uintptr_t>(outputs[i].data);
    if (outputs[i].byte_size > 0) ranges.push_back({begin, begin + outputs[i].byte_size, what});
  }
  // A GPU's buffers are in another address space than the host's parameters and state.
  for (size_t i = 0; i < context->params->buffers.size() && !deviceIO; ++i) {
    const auto& buffer = context->params->buffers[i];
    auto begin = reinterpret_cast<uintptr_t>(buffer.data);
    ranges.push_back({begin, begin + buffer.byteSize,
                      "parameter " + quoteForMessage(table.params[i].name)});
  }
  for (size_t i = 0; i < context->state.size() && !deviceIO; ++i) {
    auto begin = reinterpret_cast<uintptr_t>(context->state[i].data);
    ranges.push_back({begin, begin + context->state[i].byteSize,
                      "state tensor " + quoteForMessage(table.state[i].name)});
  }
  TFC_RETURN_IF_ERROR(checkNoOverlap(ranges, subject));
  if (!deviceIO) TFC_RETURN_IF_ERROR(checkCacheInputs(context, entry, inputs, subject));
  tfc_status_t unset = tfc_params_check_all_set(context->params);
  if (unset != nullptr) return Status(unset);

  {
    std::lock_guard<std::mutex> lock(context->errorMutex);
    context->hasError = false;
    context->error.clear();
  }
  tfc_context_s::Profile& profile = context->profile;
  const bool profiling = context->host.kernel_begin != nullptr;
  tfc::internal::Device::Call call;
  call.index = index;
  call.host = &context->host;
  call.params = &context->paramPointers;
  call.state = &context->statePointers;
  call.inputs = inputs;
  call.numInputs = numInputs;
  call.outputs = outputs;
  call.numOutputs = numOutputs;
  call.deviceIO = deviceIO;
  call.kernelSeconds = profiling ? &profile.kernelSeconds[static_cast<size_t>(index)] : nullptr;
  profile.entry = index;  // the host's kernel callbacks time the launches of this entry
  Status deviceStatus = context->device->call(call);
  profile.entry = -1;
  if (profiling && deviceStatus.ok()) ++profile.calls[static_cast<size_t>(index)];
  std::lock_guard<std::mutex> lock(context->errorMutex);
  if (context->hasError) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: %s", subject.c_str(),
                         context->error.c_str());
  }
  if (!deviceStatus.ok()) {
    return Status::error(deviceStatus.code(), "%s: %s", subject.c_str(),
                         deviceStatus.message());
  }
  return Status();
}

}  // namespace

extern "C" {

void tfc_context_options_initialize(tfc_context_options_t* out_options) {
  if (out_options == nullptr) return;
  std::memset(out_options, 0, sizeof(*out_options));
  out_options->allocator = tfc_allocator_system();
  out_options->num_threads = 0;
  out_options->state_seed = 0;
  out_options->device = -1;
}

tfc_status_t tfc_context_create(tfc_loaded_artifact_t* artifact, tfc_params_t* params,
                                const tfc_context_options_t* options,
                                tfc_context_t** out_context) {
  if (artifact == nullptr || params == nullptr || out_context == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_create: null argument");
  }
  if (params->artifact != artifact) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_context_create: the params belong to %s, not to %s",
                           params->artifact->path.c_str(), artifact->path.c_str());
  }
  if (tfc::Status world = checkWorldSize(artifact); !world.ok()) return world.release();
  // The process groups of the artifact's mesh, made here, where every rank creates its
  // context at the same point (splitting the world is a collective), not inside a step.
  auto mesh = tfc::processMesh(artifact->table->metadata_json ? artifact->table->metadata_json
                                                              : "");
  if (!mesh.ok()) return std::move(mesh).takeStatus().release();
  if (auto groups = tfc::groupCommunicator("tp", *mesh); !groups.ok()) {
    return std::move(groups).takeStatus().release();
  }
  tfc_context_options_t defaults;
  tfc_context_options_initialize(&defaults);
  if (options == nullptr) options = &defaults;
  if (options->allocator.allocate == nullptr || options->allocator.deallocate == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_context_create: the allocator has null functions (call "
                           "tfc_context_options_initialize)");
  }
  if (options->num_threads < 0 || options->num_threads > TFC_CONTEXT_MAX_THREADS) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_context_create: num_threads is %d: at most %d threads "
                           "(0 means all cores)",
                           options->num_threads, TFC_CONTEXT_MAX_THREADS);
  }
  auto* context = new (std::nothrow) tfc_context_s();
  if (context == nullptr) return tfc_status_make(TFC_OUT_OF_MEMORY, "out of memory");
  tfc_artifact_retain(artifact);
  tfc_params_retain(params);
  context->artifact = artifact;
  context->params = params;
  context->allocator = options->allocator;
  context->stateSeed = options->state_seed;
  context->mesh = *mesh;
  context->nCtx = std::max<int64_t>(
      0, tfc::metadataInt(artifact->table->metadata_json ? artifact->table->metadata_json : "",
                          "n_ctx")
             .value_or(0));
  const tfc_artifact_t& table = *artifact->table;
  if (table.device == TFC_DEVICE_CPU) {
    context->device =
        std::make_unique<tfc::internal::HostDevice>(table, context->allocator);
    context->deviceName = context->device->name();
  } else if (table.device == TFC_DEVICE_CUDA) {
    auto executor = tfc::internal::cuda::Executor::create(
        artifact->path, table, options->device, artifact->paramHeld, artifact->stateHeld);
    if (!executor.ok()) {
      tfc_context_release(context);
      return std::move(executor).takeStatus().release();
    }
    tfc::internal::cuda::Executor& cuda = **executor;
    context->cudaExecutor = &cuda;
    context->device = std::move(*executor);
    context->deviceName = context->device->name();
    if (Status comm = setUpDeviceCollectives(context, cuda); !comm.ok()) {
      tfc_context_release(context);
      return comm.release();
    }
    context->host.device_launch = hostDeviceLaunch;
    context->host.device_copy = hostDeviceCopy;
    context->host.device_constant = hostDeviceConstant;
    context->host.device_matmul = hostDeviceMatmul;
  } else {
    Status unknown = Status::error(TFC_UNIMPLEMENTED, "%s: unknown device kind %d (a newer "
                                   "tfc's artifact?)", artifact->path.c_str(), table.device);
    tfc_context_release(context);
    return unknown.release();
  }
  Status status;
  for (int32_t i = 0; i < table.num_state && status.ok(); ++i) {
    // Another pipeline stage's state (its layers' optimizer moments): no storage here.
    if (!artifact->stateHeld[static_cast<size_t>(i)]) {
      context->state.emplace_back();
      continue;
    }
    std::string what = "state tensor " + quoteForMessage(table.state[i].name);
    auto buffer = tfc::internal::allocateBuffer(
        context->allocator, tfc_tensor_desc_byte_size(&table.state[i]), true, what.c_str());
    if (buffer.ok()) {
      context->state.push_back(*buffer);
    } else {
      status = std::move(buffer).takeStatus();
    }
  }
  if (status.ok()) status = resetState(context);
  if (!status.ok()) {
    tfc_context_release(context);
    return status.release();
  }
  // The context keeps the parameters' pointers, so every parameter needs its storage now;
  // it never moves afterwards.
  for (int32_t i = 0; i < table.num_params && status.ok(); ++i) {
    if (!artifact->paramHeld[static_cast<size_t>(i)]) {  // another pipeline stage's
      context->paramPointers.push_back(nullptr);
      continue;
    }
    auto storage = tfc::internal::paramStorage(params, i);
    if (storage.ok()) {
      context->paramPointers.push_back(*storage);
    } else {
      status = std::move(storage).takeStatus();
    }
  }
  if (!status.ok()) {
    tfc_context_release(context);
    return status.release();
  }
  for (auto& buffer : context->state) context->statePointers.push_back(buffer.data);
  auto pool = tfc::internal::ThreadPool::create(context->device->hostThreads(options->num_threads));
  if (!pool.ok()) {
    Status failed = Status::error(pool.status().code(), "tfc_context_create: %s",
                                  pool.status().message());
    tfc_context_release(context);
    return failed.release();
  }
  context->pool = std::move(*pool);
  context->host.struct_size = sizeof(tfc_host_api_t);
  context->host.user = context;
  context->host.parallel_for = hostParallelFor;
  context->host.report_error = hostReportError;
  context->host.collective = hostCollective;
  context->host.collective_start = hostCollectiveStart;
  context->host.collective_wait = hostCollectiveWait;
  context->host.p2p = hostP2p;
  *out_context = context;
  return nullptr;
}

void tfc_context_retain(tfc_context_t* context) {
  if (context != nullptr) context->refs.fetch_add(1, std::memory_order_relaxed);
}

void tfc_context_release(tfc_context_t* context) {
  if (context != nullptr && context->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete context;
  }
}

tfc_loaded_artifact_t* tfc_context_artifact(const tfc_context_t* context) {
  return context->artifact;
}

tfc_params_t* tfc_context_params(const tfc_context_t* context) { return context->params; }

const char* tfc_context_device_name(const tfc_context_t* context) {
  return context != nullptr ? context->deviceName.c_str() : "";
}

uint64_t tfc_context_device_bytes(const tfc_context_t* context) {
  return context != nullptr ? context->device->deviceMemoryBytes() : 0;
}

tfc_status_t tfc_context_download(tfc_context_t* context) {
  if (context == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null context");
  return download(context).release();
}

tfc_status_t tfc_context_upload(tfc_context_t* context) {
  if (context == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null context");
  context->device->markHostChanged(true, true);
  return nullptr;
}

int32_t tfc_context_num_threads(const tfc_context_t* context) {
  return context->pool ? context->pool->numThreads() : 1;
}

tfc_status_t tfc_context_set_profiling(tfc_context_t* context, bool enabled) {
  if (context == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_set_profiling: null context");
  }
  tfc_context_s::Profile& profile = context->profile;
  profile.kernelSeconds.clear();
  profile.calls.clear();
  if (enabled) {
    const tfc_artifact_t& table = *context->artifact->table;
    for (int32_t i = 0; i < table.num_entries; ++i) {
      const tfc_entry_t& entry = table.entries[i];
      profile.kernelSeconds.emplace_back(entry.kernels ? entry.num_kernels : 0, 0.0);
    }
    profile.calls.assign(static_cast<size_t>(table.num_entries), 0);
  }
  context->host.kernel_begin = enabled ? hostKernelBegin : nullptr;
  context->host.kernel_end = enabled ? hostKernelEnd : nullptr;
  return nullptr;
}

tfc_status_t tfc_context_kernel_times(const tfc_context_t* context, int32_t entry_index,
                                      double* out_seconds, size_t count,
                                      uint64_t* out_calls) {
  if (context == nullptr || (out_seconds == nullptr && count > 0)) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_kernel_times: null argument");
  }
  const tfc_context_s::Profile& profile = context->profile;
  if (context->host.kernel_begin == nullptr) {
    return tfc_status_make(TFC_FAILED_PRECONDITION,
                           "tfc_context_kernel_times: profiling is off (call "
                           "tfc_context_set_profiling first)");
  }
  const tfc_artifact_t& table = *context->artifact->table;
  if (entry_index < 0 || entry_index >= table.num_entries) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_context_kernel_times: entry index %d is outside [0, %d)",
                           entry_index, table.num_entries);
  }
  const std::vector<double>& seconds = profile.kernelSeconds[static_cast<size_t>(entry_index)];
  if (count < seconds.size()) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_context_kernel_times: entry '%s' has %zu kernel launches, "
                           "room was given for %zu",
                           table.entries[entry_index].name, seconds.size(), count);
  }
  std::copy(seconds.begin(), seconds.end(), out_seconds);
  std::fill(out_seconds + seconds.size(), out_seconds + count, 0.0);
  if (out_calls != nullptr) *out_calls = profile.calls[static_cast<size_t>(entry_index)];
  return nullptr;
}

uint64_t tfc_context_arena_bytes_allocated(const tfc_context_t* context) {
  return context->device->hostArenaBytes();
}

tfc_status_t tfc_context_reset_state(tfc_context_t* context) {
  if (context == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null context");
  return resetState(context).release();
}

tfc_status_t tfc_context_state_tensor(tfc_context_t* context, int32_t index,
                                      tfc_tensor_ref_t* out_tensor) {
  if (context == nullptr || out_tensor == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_state_tensor: null argument");
  }
  const tfc_artifact_t& table = *context->artifact->table;
  if (index < 0 || index >= table.num_state) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "%s: state index %d is out of range [0, %d)",
                           context->artifact->path.c_str(), index, table.num_state);
  }
  Status downloaded = download(context);
  if (!downloaded.ok()) return downloaded.release();
  // The caller may write through the pointer: the next call uploads.
  context->device->markHostChanged(false, true);
  const tfc_tensor_desc_t& desc = table.state[index];
  out_tensor->dtype = static_cast<tfc_dtype_t>(desc.dtype);
  out_tensor->rank = desc.rank;
  out_tensor->shape = desc.shape;
  out_tensor->data = context->state[static_cast<size_t>(index)].data;
  out_tensor->byte_size = context->state[static_cast<size_t>(index)].byteSize;
  return nullptr;
}

tfc_status_t tfc_context_load_state_safetensors(tfc_context_t* context, const char* path) {
  if (context == nullptr || path == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_load_state_safetensors: null argument");
  }
  auto file = tfc::SafetensorsFile::open(path);
  if (!file.ok()) return std::move(file).takeStatus().release();
  const tfc_artifact_t& table = *context->artifact->table;
  // A failed load changes nothing, but the host copies must be current before it either
  // way: a partial download later would overwrite the loaded tensors.
  Status downloaded = download(context);
  if (!downloaded.ok()) return downloaded.release();
  Status loaded = tfc::internal::bindFromSafetensors(*file, table.state, table.num_state,
                                                     context->state, "state tensor", false,
                                                     false);
  if (loaded.ok()) context->device->markHostChanged(false, true);
  return loaded.release();
}

tfc_status_t tfc_context_save_state_safetensors(const tfc_context_t* context, const char* path) {
  if (context == nullptr || path == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_save_state_safetensors: null argument");
  }
  Status downloaded = download(context);
  if (!downloaded.ok()) return downloaded.release();
  const tfc_artifact_t& table = *context->artifact->table;
  return tfc::internal::saveToSafetensors(path, table.state, table.num_state, context->state,
                                          table.module_hash)
      .release();
}

tfc_status_t tfc_context_call(tfc_context_t* context, const char* entry_name,
                              const tfc_tensor_ref_t* inputs, size_t num_inputs,
                              const tfc_tensor_ref_t* outputs, size_t num_outputs) {
  if (context == nullptr || entry_name == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_context_call: null context or entry name");
  }
  int32_t index = -1;
  tfc_status_t status = tfc_artifact_find_entry(context->artifact, entry_name, &index);
  if (status != nullptr) return status;
  return callEntry(context, index, inputs, num_inputs, outputs, num_outputs).release();
}

tfc_status_t tfc_context_call_device(tfc_context_t* context, int32_t entry_index,
                                     const tfc_tensor_ref_t* inputs, size_t num_inputs,
                                     const tfc_tensor_ref_t* outputs, size_t num_outputs) {
  if (context == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null context");
  return callEntry(context, entry_index, inputs, num_inputs, outputs, num_outputs, true)
      .release();
}

tfc_status_t tfc_context_call_index(tfc_context_t* context, int32_t entry_index,
                                    const tfc_tensor_ref_t* inputs, size_t num_inputs,
                                    const tfc_tensor_ref_t* outputs, size_t num_outputs) {
  if (context == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null context");
  return callEntry(context, entry_index, inputs, num_inputs, outputs, num_outputs).release();
}

}  // extern "C"
