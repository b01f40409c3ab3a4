// A thin C++ wrapper over the C API in runtime.h: reference-counted handles (copies share
// the object), Status/StatusOr results, and HostTensor/TensorView in place of
// tfc_tensor_ref_t.
//
//   TFC_ASSIGN_OR_RETURN(tfc::Artifact artifact, tfc::Artifact::open("model.so"));
//   TFC_ASSIGN_OR_RETURN(tfc::Params params, tfc::Params::create(artifact));
//   TFC_RETURN_IF_ERROR(params.loadSafetensors("model.safetensors"));
//   TFC_ASSIGN_OR_RETURN(tfc::Context context, tfc::Context::create(artifact, params));
//   TFC_ASSIGN_OR_RETURN(std::vector<tfc::HostTensor> outputs,
//                        context.call("forward", {tokens.view()}));
//
// Thread-safety: as for the C objects (runtime.h): an Artifact from any thread, a Context
// from one thread at a time, Params written only while nothing else uses them.
#ifndef TFC_RUNTIME_RUNTIME_HPP_
#define TFC_RUNTIME_RUNTIME_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tfc/runtime/runtime.h"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {

namespace internal {
// Shares one reference of a C handle; copies retain, destruction releases.
template <typename T, void (*Retain)(T*), void (*Release)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* adopted) : ptr_(adopted) {}
  Handle(const Handle& other) : ptr_(other.ptr_) { if (ptr_) Retain(ptr_); }
  Handle(Handle&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  Handle& operator=(Handle other) noexcept { std::swap(ptr_, other.ptr_); return *this; }
  ~Handle() { if (ptr_) Release(ptr_); }
  T* get() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  T* ptr_ = nullptr;
};
}  // namespace internal

// A dimension list of a tensor description as a vector.
inline std::vector<int64_t> shapeOf(const tfc_tensor_desc_t& desc) {
  return desc.rank > 0 ? std::vector<int64_t>(desc.shape, desc.shape + desc.rank)
                       : std::vector<int64_t>();
}

// A tfc_tensor_ref_t over |view|; the view (its shape and data) must outlive the ref. The
// data is passed as writable: use it for inputs (read only) or for buffers you own.
// Not for temporaries: `tensorRef(tensor.view())` would point into a destroyed shape.
inline tfc_tensor_ref_t tensorRef(const TensorView&& view) = delete;
inline tfc_tensor_ref_t tensorRef(const TensorView& view) {
  tfc_tensor_ref_t ref;
  ref.dtype = view.dtype;
  ref.rank = static_cast<int32_t>(view.shape.size());
  ref.shape = view.shape.data();
  ref.data = const_cast<void*>(view.data);
  ref.byte_size = view.byteSize;
  return ref;
}

// A TensorView over |ref|.
inline TensorView tensorView(const tfc_tensor_ref_t& ref) {
  return TensorView{ref.dtype,
                    ref.rank > 0 ? std::vector<int64_t>(ref.shape, ref.shape + ref.rank)
                                 : std::vector<int64_t>(),
                    ref.data, ref.byte_size};
}

// A loaded model (model.so).
class Artifact {
 public:
  Artifact() = default;

  // An Artifact sharing |borrowed| (adds a reference), e.g. tfc_context_artifact's.
  static Artifact share(tfc_loaded_artifact_t* borrowed) {
    if (borrowed) tfc_artifact_retain(borrowed);
    return Artifact(borrowed);
  }

  static StatusOr<Artifact> open(const std::string& path,
                                 const tfc_artifact_options_t* options = nullptr) {
    tfc_loaded_artifact_t* raw = nullptr;
    Status status(tfc_artifact_open(path.c_str(), options, &raw));
    if (!status.ok()) return status;
    return Artifact(raw);
  }

  tfc_loaded_artifact_t* get() const { return handle_.get(); }
  std::string_view path() const { return tfc_artifact_path(get()); }
  std::string_view target() const { return tfc_artifact_target(get()); }
  std::string_view compilerVersion() const { return tfc_artifact_compiler_version(get()); }
  std::string_view moduleHash() const { return tfc_artifact_module_hash(get()); }
  std::string_view metadataJson() const { return tfc_artifact_metadata_json(get()); }
  const tfc_artifact_t& table() const { return *tfc_artifact_table(get()); }

  int32_t paramCount() const { return tfc_artifact_param_count(get()); }
  const tfc_tensor_desc_t& param(int32_t i) const { return *tfc_artifact_param(get(), i); }
  int32_t stateCount() const { return tfc_artifact_state_count(get()); }
  const tfc_tensor_desc_t& state(int32_t i) const { return *tfc_artifact_state(get(), i); }
  int32_t entryCount() const { return tfc_artifact_entry_count(get()); }
  const tfc_entry_t& entry(int32_t i) const { return *tfc_artifact_entry(get(), i); }

  StatusOr<int32_t> findEntry(const std::string& name) const {
    int32_t index = -1;
    Status status(tfc_artifact_find_entry(get(), name.c_str(), &index));
    if (!status.ok()) return status;
    return index;
  }
  StatusOr<int32_t> findParam(const std::string& name) const {
    int32_t index = -1;
    Status status(tfc_artifact_find_param(get(), name.c_str(), &index));
    if (!status.ok()) return status;
    return index;
  }

 private:
  explicit Artifact(tfc_loaded_artifact_t* adopted) : handle_(adopted) {}
  internal::Handle<tfc_loaded_artifact_t, tfc_artifact_retain, tfc_artifact_release> handle_;
};

// One tensor of a Hugging Face checkpoint as Params::loadPretrained found it
// (tfc_pretrained_tensor_t, with owned strings).
struct PretrainedTensor {
  std::string name;
  std::string file;
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  int32_t paramIndex = -1;  // -1: not a parameter, skipped
};

// The parameter values of a model.
class Params {
 public:
  Params() = default;

  // A Params sharing |borrowed| (adds a reference), e.g. tfc_context_params's.
  static Params share(tfc_params_t* borrowed) {
    if (borrowed) tfc_params_retain(borrowed);
    return Params(borrowed);
  }

  static StatusOr<Params> create(const Artifact& artifact,
                                 const tfc_params_options_t* options = nullptr) {
    tfc_params_t* raw = nullptr;
    Status status(tfc_params_create(artifact.get(), options, &raw));
    if (!status.ok()) return status;
    return Params(raw);
  }

  tfc_params_t* get() const { return handle_.get(); }

  Status init(uint64_t seed) { return Status(tfc_params_init(get(), seed)); }
  Status loadSafetensors(const std::string& path,
                         const tfc_params_load_options_t* options = nullptr) {
    return Status(tfc_params_load_safetensors(get(), path.c_str(), options));
  }
  // Loads a Hugging Face checkpoint (a directory, an index or one file; see
  // tfc_params_load_pretrained) and returns every tensor of it, loaded or skipped.
  StatusOr<std::vector<PretrainedTensor>> loadPretrained(const std::string& path,
                                                         bool copy = false) {
    std::vector<PretrainedTensor> tensors;
    tfc_pretrained_load_options_t options;
    tfc_pretrained_load_options_initialize(&options);
    options.copy = copy;
    options.user_data = &tensors;
    options.on_tensor = [](void* userData, const tfc_pretrained_tensor_t* tensor) {
      static_cast<std::vector<PretrainedTensor>*>(userData)->push_back(
          PretrainedTensor{tensor->name, tensor->file, tensor->dtype, tensor->param_index});
    };
    Status status(tfc_params_load_pretrained(get(), path.c_str(), &options));
    if (!status.ok()) return status;
    return tensors;
  }
  Status saveSafetensors(const std::string& path) const {
    return Status(tfc_params_save_safetensors(get(), path.c_str()));
  }
  Status checkAllSet() const { return Status(tfc_params_check_all_set(get())); }
  bool isSet(int32_t index) const { return tfc_params_is_set(get(), index); }
  // False for another pipeline stage's parameter (tfc --pp), which has no storage here.
  bool isHeld(int32_t index) const { return tfc_params_is_held(get(), index); }
  Status set(int32_t index, const TensorView& value) {
    tfc_tensor_ref_t ref = tensorRef(value);
    return Status(tfc_params_set(get(), index, &ref));
  }
  // A writable view of parameter |index| (call markSet after filling it).
  StatusOr<tfc_tensor_ref_t> tensor(int32_t index) const {
    tfc_tensor_ref_t ref{};
    Status status(tfc_params_tensor(get(), index, &ref));
    if (!status.ok()) return status;
    return ref;
  }
  Status markSet(int32_t index) { return Status(tfc_params_mark_set(get(), index)); }

 private:
  explicit Params(tfc_params_t* adopted) : handle_(adopted) {}
  internal::Handle<tfc_params_t, tfc_params_retain, tfc_params_release> handle_;
};

// A session: state, arenas and threads for calling entry points.
class Context {
 public:
  Context() = default;

  // A Context owning the reference |adopted| (for wrapping a handle of the C API).
  static Context adopt(tfc_context_t* adopted) { return Context(adopted); }

  static StatusOr<Context> create(const Artifact& artifact, const Params& params,
                                  const tfc_context_options_t* options = nullptr) {
    tfc_context_t* raw = nullptr;
    Status status(tfc_context_create(artifact.get(), params.get(), options, &raw));
    if (!status.ok()) return status;
    return Context(raw);
  }

  tfc_context_t* get() const { return handle_.get(); }
  int32_t numThreads() const { return tfc_context_num_threads(get()); }
  // "cpu", or "GPU 0: NVIDIA H200 (sm_90)" for a CUDA artifact.
  std::string_view deviceName() const { return tfc_context_device_name(get()); }
  uint64_t deviceBytes() const { return tfc_context_device_bytes(get()); }
  // A GPU context's host copies of parameters and state made current (tfc_context_download),
  // or marked newer than the GPU's (tfc_context_upload); nothing for a CPU artifact.
  Status download() const { return Status(tfc_context_download(get())); }
  Status upload() const { return Status(tfc_context_upload(get())); }

  // Calls |entry| with caller-provided output buffers.
  Status call(const std::string& entry, const std::vector<tfc_tensor_ref_t>& inputs,
              const std::vector<tfc_tensor_ref_t>& outputs) {
    return Status(tfc_context_call(get(), entry.c_str(), inputs.data(), inputs.size(),
                                   outputs.data(), outputs.size()));
  }

  // Calls |entry|, allocating its outputs (inputs in the entry's order). For repeated
  // calls bind the entry once instead (tfc::BoundEntry, bound_entry.hpp).
  StatusOr<std::vector<HostTensor>> call(const std::string& entry,
                                         const std::vector<TensorView>& inputs);

  // The artifact this context runs and the params it reads.
  Artifact artifact() const { return Artifact::share(tfc_context_artifact(get())); }
  Params params() const { return Params::share(tfc_context_params(get())); }

  Status resetState() { return Status(tfc_context_reset_state(get())); }
  StatusOr<tfc_tensor_ref_t> state(int32_t index) const {
    tfc_tensor_ref_t ref{};
    Status status(tfc_context_state_tensor(get(), index, &ref));
    if (!status.ok()) return status;
    return ref;
  }
  Status loadStateSafetensors(const std::string& path) {
    return Status(tfc_context_load_state_safetensors(get(), path.c_str()));
  }
  Status saveStateSafetensors(const std::string& path) const {
    return Status(tfc_context_save_state_safetensors(get(), path.c_str()));
  }
  uint64_t arenaBytesAllocated() const { return tfc_context_arena_bytes_allocated(get()); }

 private:
  explicit Context(tfc_context_t* adopted) : handle_(adopted) {}
  internal::Handle<tfc_context_t, tfc_context_retain, tfc_context_release> handle_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_RUNTIME_HPP_
