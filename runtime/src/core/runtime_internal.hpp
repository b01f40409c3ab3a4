// Internal: the structs behind the C API's opaque handles, shared by artifact.cpp,
// params.cpp and context.cpp.
#ifndef TFC_RUNTIME_SRC_RUNTIME_INTERNAL_HPP_
#define TFC_RUNTIME_SRC_RUNTIME_INTERNAL_HPP_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/init.hpp"
#include "core/tensor_match.hpp"
#include "base/thread_pool.hpp"
#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/runtime.h"
#include "tfc/runtime/safetensors.hpp"
#include "tfc/runtime/status.hpp"

struct tfc_loaded_artifact_s {
  std::atomic<int> refs{1};
  std::string path;
  void* handle = nullptr;  // from dlopen
  const tfc_artifact_t* table = nullptr;
  // Parsed init specs of params and state (empty when the check was skipped).
  std::vector<tfc::internal::InitSpec> paramInits;
  std::vector<tfc::internal::InitSpec> stateInits;
  bool initsParsed = false;
  // Whether this process holds each parameter and state tensor: every one, except under
  // pipeline parallelism (metadata pp_held) those its stage never touches, which get no
  // storage, no initialization and no load.
  std::vector<bool> paramHeld, stateHeld;
  ~tfc_loaded_artifact_s();
};

namespace tfc {
struct GenerationOptions;
}

namespace tfc::internal {

// The C API's generation options (tfc_generate_options_t) as the C++ classes take them.
tfc::GenerationOptions generationOptionsFromC(const tfc_generate_options_t& c);

// One tensor's storage, from an allocator.
struct Buffer {
  void* data = nullptr;
  size_t byteSize = 0;
};

// Allocates |bytes| (at least 1) aligned to TFC_ARENA_ALIGNMENT and zero-filled when |zero|.
StatusOr<Buffer> allocateBuffer(const tfc_allocator_t& allocator, size_t bytes, bool zero,
                                const char* what);
void freeBuffer(const tfc_allocator_t& allocator, Buffer& buffer);

// A tensor description's shape as a vector.
std::vector<int64_t> descShape(const tfc_tensor_desc_t& desc);

// The closest of |candidates| to |name| by edit distance when close enough, else "".
std::string closestName(std::string_view name, const std::vector<std::string_view>& candidates);

// Parses the init spec of every description (params or state), prefixing errors with
// "<path>: <what> '<name>': ".
Status parseInits(const std::string& path, const char* what, const tfc_tensor_desc_t* descs,
                  int32_t count, std::vector<InitSpec>* out);

// Validates the table an artifact's tfc_artifact_v<N>() returned, as tfc_artifact_open does
// after dlopen: null, magic, ABI version, struct size, every tensor description and entry,
// and the init specs into |paramInits| and |stateInits| unless they are null. Errors name
// |path|. Separate from the loading so that it can be tested and fuzzed (runtime/fuzz).
Status validateArtifactTable(const std::string& path, const tfc_artifact_t* table,
                             std::vector<InitSpec>* paramInits, std::vector<InitSpec>* stateInits);

// The parameters of an artifact as whole tensors, for the loads and the init of a
// tensor-parallel one (tfc --tp=M), where each rank holds a slice of some of them: the
// descriptions to match files against (a split parameter with its whole shape; the others as
// they are), and this rank's place in its group. One process draws or reads every tensor
// whole, and each rank keeps its slice, so that M ranks start from one process's weights.
struct WholeParams {
  std::vector<tfc_tensor_desc_t> descs;        // the artifact's, whole shapes
  std::vector<std::vector<int64_t>> shapes;    // what descs[i].shape points to
  std::vector<const tfc::TensorSplit*> splits;  // per parameter; null: held whole
  tfc::TensorParallelLayout layout;
  int64_t rank = 0;  // in the tensor-parallel group

  // Writes this rank's slice of parameter |index|'s whole tensor |whole| (in its dtype) into
  // |slice|.
  void keepSlice(size_t index, void* whole, void* slice) const;
};
// Of |params|'s artifact; this rank's place from the world communicator when it is
// tensor-parallel (under mpirun: the world's rank modulo M).
StatusOr<WholeParams> wholeParams(const tfc_params_t* params);

// Copies |count| tensors described by |descs| from |file| by name into |buffers|: all checks
// first (matchSafetensors), then the copies, so nothing changes on failure.
Status bindFromSafetensors(const SafetensorsFile& file, const tfc_tensor_desc_t* descs,
                           int32_t count, std::vector<Buffer>& buffers, const char* what,
                           bool allowMissing, bool allowUnexpected);

// Writes |count| tensors to |path| atomically.
Status saveToSafetensors(const std::string& path, const tfc_tensor_desc_t* descs, int32_t count,
                         const std::vector<Buffer>& buffers, const std::string& modelPath);

// Checks |ref| against |desc|; messages start with |subject| ("entry 'forward' input 'x'").
Status checkTensorRef(const tfc_tensor_ref_t& ref, const tfc_tensor_desc_t& desc,
                      const std::string& subject);

}  // namespace tfc::internal

struct tfc_params_s {
  std::atomic<int> refs{1};
  tfc_loaded_artifact_t* artifact = nullptr;  // retained
  tfc_allocator_t allocator{};
  // Per parameter, its storage: null until first needed (tfc::internal::paramStorage
  // allocates it zero-filled) or until a load points it into a mapping of its file. Once
  // set it never moves: tfc_params_tensor's callers and contexts keep the pointer.
  std::vector<tfc::internal::Buffer> buffers;
  // Per parameter: its buffer lies in one of |mappings| rather than coming from |allocator|.
  std::vector<bool> mapped;
  // The copy-on-write mappings (tfc::internal::FileMapping::kCopyOnWrite) of the files that
  // mapped parameters live in.
  std::vector<std::shared_ptr<const void>> mappings;
  std::vector<bool> set;
  // Guards the first allocation of a buffer, which readers (tfc_params_tensor, context
  // creation) may trigger concurrently.
  std::mutex storageMutex;
  ~tfc_params_s();
};

namespace tfc::internal {
// Parameter |index|'s storage (index in range), allocated zero-filled from the params'
// allocator when it has none yet. Errors name the artifact and the parameter, and a parameter
// that this rank's pipeline stage does not hold (tfc_loaded_artifact_s::paramHeld).
StatusOr<void*> paramStorage(tfc_params_t* params, int32_t index);
// Fills |artifact|'s paramHeld and stateHeld (at load).
Status findHeldTensors(tfc_loaded_artifact_t* artifact);
}  // namespace tfc::internal

namespace tfc::internal {
class Device;
namespace cuda {
class Executor;
}  // namespace cuda
}  // namespace tfc::internal

struct tfc_context_s {
  std::atomic<int> refs{1};
  tfc_loaded_artifact_t* artifact = nullptr;  // retained
  tfc_params_t* params = nullptr;             // retained
  tfc_allocator_t allocator{};
  uint64_t stateSeed = 0;
  std::vector<tfc::internal::Buffer> state;
  std::unique_ptr<tfc::internal::ThreadPool> pool;
  // Where the entries run: the host (a CPU artifact) or a GPU (a CUDA artifact); set once the
  // context is created, never null after.
  std::unique_ptr<tfc::internal::Device> device;
  // The same device as a GPU executor, for the compiled code's device callbacks (launches,
  // copies, products, constants: tfc_host_api_t's device_*); null for the host.
  tfc::internal::cuda::Executor* cudaExecutor = nullptr;
  std::string deviceName;  // device->name(), kept for tfc_context_device_name's pointer
  tfc_host_api_t host{};
  // The mesh the artifact was compiled for (its metadata): the collectives of a group ("dp",
  // "pp", "tp") go to this rank's communicator of it (groupCommunicator).
  tfc::ProcessMesh mesh;
  // The model's context length (metadata n_ctx; 0 without), which bounds the KV-cache
  // positions prefill and decode take (checked in the library, for every caller).
  int64_t nCtx = 0;
  // Set by report_error during a call (possibly from pool threads).
  std::mutex errorMutex;
  std::string error;
  bool hasError = false;
  std::vector<void*> paramPointers, statePointers;
  // Per-kernel timing (tfc_context_set_profiling): while host.kernel_begin/end are set
  // (profiling is on), they add each launch's time of the running entry to
  // kernelSeconds[entry][launch].
  struct Profile {
    int32_t entry = -1;  // the entry being called
    std::chrono::steady_clock::time_point launchStart;
    std::vector<std::vector<double>> kernelSeconds;  // per entry, per launch
    std::vector<uint64_t> calls;                     // per entry
  } profile;
  ~tfc_context_s();
};


namespace tfc::internal {
// The parsed init specs of the artifact's params (|state| false) or state (true).
Status initSpecsFor(const tfc_loaded_artifact_t* artifact, bool state, std::vector<InitSpec>* out);
}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_RUNTIME_INTERNAL_HPP_
