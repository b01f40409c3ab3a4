// Parameters: storage, initialization from specs, and safetensors load/save.
//
// Loading maps the file rather than copying it where it can (tfc_params_load_safetensors in
// runtime.h says when): a parameter's storage is then a piece of a private copy-on-write
// mapping of the file (MAP_PRIVATE, PROT_READ | PROT_WRITE). Reads share the page cache's
// pages, so a process that only runs inference holds the weights once; the first write to
// a page (train_step, tfc_params_set, a NumPy view) gives this process its own copy of that
// page and never reaches the file. Copy-on-write was chosen over copying on the first
// mutable access because nothing tells the runtime when compiled code or a caller holding
// tfc_params_tensor's pointer writes, and because it copies only the pages written.
#include <cstring>
#include <mutex>
#include <string>

#include "tfc/artifact_abi.h"

#include "base/file_util.hpp"
#include "core/runtime_internal.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"

using tfc::Status;
using tfc::internal::quoteForMessage;

tfc_params_s::~tfc_params_s() {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!mapped[i]) tfc::internal::freeBuffer(allocator, buffers[i]);
  }
  tfc_artifact_release(artifact);
}

namespace {

bool validAllocator(const tfc_allocator_t& allocator) {
  return allocator.allocate != nullptr && allocator.deallocate != nullptr;
}

Status checkIndex(const tfc_params_t* params, int32_t index) {
  if (params == nullptr) return Status(TFC_INVALID_ARGUMENT, "null params");
  if (index < 0 || index >= params->artifact->table->num_params) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: parameter index %d is out of range [0, %d)",
                         params->artifact->path.c_str(), index,
                         params->artifact->table->num_params);
  }
  return Status();
}

// See tfc_params_load_safetensors and the top of this file.
Status loadSafetensors(tfc_params_t* params, const std::string& path,
                       const tfc_params_load_options_t& options) {
  using tfc::internal::FileMapping;
  TFC_ASSIGN_OR_RETURN(tfc::internal::FileContents contents,
                       tfc::internal::readFile(path, options.copy ? FileMapping::kReadOnly
                                                                  : FileMapping::kCopyOnWrite));
  TFC_ASSIGN_OR_RETURN(tfc::SafetensorsFile file,
                       tfc::SafetensorsFile::parse(contents.data, contents.size, path));
  const tfc_artifact_t& table = *params->artifact->table;
  // A tensor-parallel artifact takes a file of whole tensors, whose split parameters each rank
  // slices (tfc::internal::WholeParams), or a file of this rank's slices.
  TFC_ASSIGN_OR_RETURN(tfc::internal::WholeParams all, tfc::internal::wholeParams(params));
  auto match = [&](const tfc_tensor_desc_t* descs) {
    return tfc::internal::matchSafetensors(file, descs, table.num_params, "parameter",
                                           options.allow_missing, options.allow_unexpected);
  };
  auto matched = match(all.descs.data());
  if (!matched.ok() && all.layout.size > 1) {
    if (auto slices = match(table.params); slices.ok()) {
      matched = std::move(slices);
      all.splits.assign(all.splits.size(), nullptr);
    }
  }
  TFC_ASSIGN_OR_RETURN(std::vector<const tfc::SafetensorsTensorInfo*> sources,
                       std::move(matched));
  // A tensor is used in place when the file is mapped copy-on-write, the parameter has no
  // storage yet (storage once handed out must not move) and the tensor starts as aligned
  // as an allocated buffer would. Reading past its end to the end of a 64-byte line, as
  // vector code may, stays inside the page of its last byte, so inside the mapping.
  const bool mappable = contents.mapped && contents.writable;
  std::vector<bool> map(sources.size(), false);
  const std::vector<bool>& held = params->artifact->paramHeld;
  for (size_t i = 0; i < sources.size(); ++i) {
    map[i] = mappable && held[i] && sources[i] != nullptr && all.splits[i] == nullptr &&
             params->buffers[i].data == nullptr &&
             reinterpret_cast<uintptr_t>(sources[i]->data) % TFC_ARENA_ALIGNMENT == 0;
  }
  // Storage for the copies first: an allocation failure then leaves the values as they
  // were (a parameter given storage stays unset and zero, as before).
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i] == nullptr || map[i] || !held[i]) continue;
    auto storage = tfc::internal::paramStorage(params, static_cast<int32_t>(i));
    if (!storage.ok()) return std::move(storage).takeStatus();
  }
  bool anyMapped = false;
  for (size_t i = 0; i < sources.size(); ++i) {
    const tfc::SafetensorsTensorInfo* info = sources[i];
    if (info == nullptr) continue;
    // Another pipeline stage's parameter: its ranks load it.
    if (!held[i]) {
      params->set[i] = true;
      continue;
    }
    tfc::internal::Buffer& buffer = params->buffers[i];
    if (map[i]) {
      // Writable: the mapping is private and copy-on-write (contents.writable).
      buffer.data = const_cast<uint8_t*>(info->data);
      buffer.byteSize = info->byteSize;
      params->mapped[i] = true;
      anyMapped = true;
    } else if (all.splits[i] != nullptr) {
      std::vector<uint8_t> whole(info->byteSize);
      TFC_RETURN_IF_ERROR(
          tfc::internal::readMapped(contents, info->data, whole.data(), info->byteSize, path));
      all.keepSlice(i, whole.data(), buffer.data);
    } else if (info->byteSize > 0) {
      // Read from the file, not through the mapping, or a copied load would hold its
      // weights twice at the peak: the copies and the mapping's pages.
      TFC_RETURN_IF_ERROR(
          tfc::internal::readMapped(contents, info->data, buffer.data, info->byteSize, path));
    }
    params->set[i] = true;
  }
  if (anyMapped) params->mappings.push_back(std::move(contents.owner));
  return Status();
}

}  // namespace

namespace tfc::internal {

// Parses (or takes the already parsed) init specs of |descs|.
Status initSpecsFor(const tfc_loaded_artifact_t* artifact, bool state,
                    std::vector<InitSpec>* out) {
  if (artifact->initsParsed) {
    *out = state ? artifact->stateInits : artifact->paramInits;
    return Status();
  }
  const tfc_artifact_t& table = *artifact->table;
  return state ? parseInits(artifact->path, "state tensor", table.state, table.num_state, out)
               : parseInits(artifact->path, "parameter", table.params, table.num_params, out);
}

void WholeParams::keepSlice(size_t index, void* whole, void* slice) const {
  tfc::copySlice(*splits[index], shapes[index], layout.size, rank,
                 tfc_dtype_size(static_cast<tfc_dtype_t>(descs[index].dtype)), whole, slice,
                 /*to_slice=*/true);
}

StatusOr<WholeParams> wholeParams(const tfc_params_t* params) {
  const tfc_artifact_t& table = *params->artifact->table;
  WholeParams all;
  TFC_ASSIGN_OR_RETURN(all.layout,
                       tfc::tensorParallelLayout(table.metadata_json ? table.metadata_json : ""));
  if (all.layout.size > 1) {
    TFC_ASSIGN_OR_RETURN(auto world, tfc::worldCommunicator());
    all.rank = world->rank() % all.layout.size;
  }
  const size_t count = static_cast<size_t>(table.num_params);
  all.descs.assign(table.params, table.params + count);
  all.shapes.resize(count);
  all.splits.assign(count, nullptr);
  for (size_t i = 0; i < count; ++i) {
    all.shapes[i] = descShape(table.params[i]);
    if (all.layout.size > 1) all.splits[i] = all.layout.find(table.params[i].name);
    if (all.splits[i] != nullptr) {
      all.shapes[i] = tfc::wholeShape(*all.splits[i], all.shapes[i], all.layout.size);
    }
    all.descs[i].shape = all.shapes[i].data();
  }
  return all;
}

StatusOr<void*> paramStorage(tfc_params_t* params, int32_t index) {
  std::lock_guard<std::mutex> lock(params->storageMutex);
  Buffer& buffer = params->buffers[static_cast<size_t>(index)];
  if (buffer.data != nullptr) return buffer.data;
  const tfc_tensor_desc_t& desc = params->artifact->table->params[index];
  std::string what = params->artifact->path + ": parameter " + quoteForMessage(desc.name);
  if (!params->artifact->paramHeld[static_cast<size_t>(index)]) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s lives on another pipeline stage's ranks (tfc --pp; metadata "
                         "\"pp_held\"): this rank holds no storage for it",
                         what.c_str());
  }
  TFC_ASSIGN_OR_RETURN(buffer, allocateBuffer(params->allocator, tfc_tensor_desc_byte_size(&desc),
                                              true, what.c_str()));
  return buffer.data;
}

}  // namespace tfc::internal

extern "C" {

void tfc_params_options_initialize(tfc_params_options_t* out_options) {
  if (out_options == nullptr) return;
  std::memset(out_options, 0, sizeof(*out_options));
  out_options->allocator = tfc_allocator_system();
}

void tfc_params_load_options_initialize(tfc_params_load_options_t* out_options) {
  if (out_options == nullptr) return;
  std::memset(out_options, 0, sizeof(*out_options));
}

tfc_status_t tfc_params_create(tfc_loaded_artifact_t* artifact,
                               const tfc_params_options_t* options, tfc_params_t** out_params) {
  if (artifact == nullptr || out_params == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_params_create: null artifact or out_params");
  }
  tfc_params_options_t defaults;
  tfc_params_options_initialize(&defaults);
  if (options == nullptr) options = &defaults;
  if (!validAllocator(options->allocator)) {
    return tfc_status_make(TFC_INVALID_ARGUMENT,
                           "tfc_params_create: the allocator has null functions (call "
                           "tfc_params_options_initialize)");
  }
  auto* params = new (std::nothrow) tfc_params_s();
  if (params == nullptr) return tfc_status_make(TFC_OUT_OF_MEMORY, "out of memory");
  tfc_artifact_retain(artifact);
  params->artifact = artifact;
  params->allocator = options->allocator;
  // Storage comes later (tfc::internal::paramStorage, or a load's mapping).
  const auto count = static_cast<size_t>(artifact->table->num_params);
  params->buffers.resize(count);
  params->mapped.assign(count, false);
  params->set.assign(count, false);
  *out_params = params;
  return nullptr;
}

void tfc_params_retain(tfc_params_t* params) {
  if (params != nullptr) params->refs.fetch_add(1, std::memory_order_relaxed);
}

void tfc_params_release(tfc_params_t* params) {
  if (params != nullptr && params->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete params;
  }
}

tfc_loaded_artifact_t* tfc_params_artifact(const tfc_params_t* params) {
  return params->artifact;
}

tfc_status_t tfc_params_tensor(tfc_params_t* params, int32_t index,
                               tfc_tensor_ref_t* out_tensor) {
  Status status = checkIndex(params, index);
  if (!status.ok()) return status.release();
  if (out_tensor == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null out_tensor");
  auto storage = tfc::internal::paramStorage(params, index);
  if (!storage.ok()) return std::move(storage).takeStatus().release();
  const tfc_tensor_desc_t& desc = params->artifact->table->params[index];
  out_tensor->dtype = static_cast<tfc_dtype_t>(desc.dtype);
  out_tensor->rank = desc.rank;
  out_tensor->shape = desc.shape;
  out_tensor->data = *storage;
  out_tensor->byte_size = tfc_tensor_desc_byte_size(&desc);
  return nullptr;
}

bool tfc_params_is_held(const tfc_params_t* params, int32_t index) {
  if (!checkIndex(params, index).ok()) return false;
  return params->artifact->paramHeld[static_cast<size_t>(index)];
}

bool tfc_params_is_set(const tfc_params_t* params, int32_t index) {
  if (!checkIndex(params, index).ok()) return false;
  return params->set[static_cast<size_t>(index)];
}

tfc_status_t tfc_params_mark_set(tfc_params_t* params, int32_t index) {
  Status status = checkIndex(params, index);
  if (!status.ok()) return status.release();
  // Marked without ever being filled, it is zeros: give it storage that says so (none for
  // another pipeline stage's parameter).
  if (!params->artifact->paramHeld[static_cast<size_t>(index)]) {
    params->set[static_cast<size_t>(index)] = true;
    return nullptr;
  }
  auto storage = tfc::internal::paramStorage(params, index);
  if (!storage.ok()) return std::move(storage).takeStatus().release();
  params->set[static_cast<size_t>(index)] = true;
  return nullptr;
}

tfc_status_t tfc_params_check_all_set(const tfc_params_t* params) {
  if (params == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null params");
  const tfc_artifact_t& table = *params->artifact->table;
  std::string unset;
  int count = 0;
  for (int32_t i = 0; i < table.num_params; ++i) {
    if (params->set[static_cast<size_t>(i)]) continue;
    if (!params->artifact->paramHeld[static_cast<size_t>(i)]) continue;
    if (++count <= 5) unset += (count > 1 ? ", " : "") + quoteForMessage(table.params[i].name);
  }
  if (count == 0) return nullptr;
  if (count > 5) unset += ", ... (" + std::to_string(count) + " in all)";
  return tfc_status_make(TFC_FAILED_PRECONDITION,
                         "%s: parameter%s %s %s never set: load weights "
                         "(tfc_params_load_safetensors) or initialize them (tfc_params_init)",
                         params->artifact->path.c_str(), count > 1 ? "s" : "", unset.c_str(),
                         count > 1 ? "were" : "was");
}

tfc_status_t tfc_params_set(tfc_params_t* params, int32_t index, const tfc_tensor_ref_t* value) {
  Status status = checkIndex(params, index);
  if (!status.ok()) return status.release();
  if (value == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null value");
  const tfc_tensor_desc_t& desc = params->artifact->table->params[index];
  status = tfc::internal::checkTensorRef(*value, desc, "parameter " + quoteForMessage(desc.name));
  if (!status.ok()) return status.release();
  // Another pipeline stage's parameter: its ranks take the value (a loader sets every one).
  if (!params->artifact->paramHeld[static_cast<size_t>(index)]) {
    params->set[static_cast<size_t>(index)] = true;
    return nullptr;
  }
  auto storage = tfc::internal::paramStorage(params, index);
  if (!storage.ok()) return std::move(storage).takeStatus().release();
  if (value->byte_size > 0) std::memmove(*storage, value->data, value->byte_size);
  params->set[static_cast<size_t>(index)] = true;
  return nullptr;
}

tfc_status_t tfc_params_init(tfc_params_t* params, uint64_t seed) {
  if (params == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null params");
  std::vector<tfc::internal::InitSpec> specs;
  Status status = tfc::internal::initSpecsFor(params->artifact, false, &specs);
  if (!status.ok()) return status.release();
  const tfc_artifact_t& table = *params->artifact->table;
  // Tensor parallel (tfc --tp=M): a split parameter is drawn whole, as one process draws it,
  // and this rank keeps its slice.
  auto all = tfc::internal::wholeParams(params);
  if (!all.ok()) return std::move(all).takeStatus().release();
  for (int32_t i = 0; i < table.num_params; ++i) {
    // Another pipeline stage's parameter: its ranks draw it (each its own stream, by index).
    if (!params->artifact->paramHeld[static_cast<size_t>(i)]) {
      params->set[static_cast<size_t>(i)] = true;
      continue;
    }
    auto storage = tfc::internal::paramStorage(params, i);
    if (!storage.ok()) return std::move(storage).takeStatus().release();
    const tfc_tensor_desc_t& desc = table.params[i];
    const bool split = all->splits[static_cast<size_t>(i)] != nullptr;
    std::vector<uint8_t> whole(split ? tfc_tensor_desc_byte_size(&all->descs[i]) : 0);
    status = tfc::internal::fillInit(specs[static_cast<size_t>(i)],
                                     static_cast<tfc_dtype_t>(desc.dtype),
                                     all->shapes[static_cast<size_t>(i)],
                                     tfc::internal::initStreamSeed(seed, static_cast<uint64_t>(i)),
                                     split ? whole.data() : *storage);
    if (split && status.ok()) all->keepSlice(static_cast<size_t>(i), whole.data(), *storage);
    if (!status.ok()) {
      return tfc_status_make(status.code(), "%s: parameter %s: %s", params->artifact->path.c_str(),
                             quoteForMessage(desc.name).c_str(), status.message());
    }
    params->set[static_cast<size_t>(i)] = true;
  }
  return nullptr;
}

tfc_status_t tfc_params_load_safetensors(tfc_params_t* params, const char* path,
                                         const tfc_params_load_options_t* options) {
  if (params == nullptr || path == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_params_load_safetensors: null argument");
  }
  tfc_params_load_options_t defaults;
  tfc_params_load_options_initialize(&defaults);
  if (options == nullptr) options = &defaults;
  return loadSafetensors(params, path, *options).release();
}

tfc_status_t tfc_params_save_safetensors(const tfc_params_t* params, const char* path) {
  if (params == nullptr || path == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_params_save_safetensors: null argument");
  }
  tfc_status_t unset = tfc_params_check_all_set(params);
  if (unset != nullptr) return unset;
  const tfc_artifact_t& table = *params->artifact->table;
  return tfc::internal::saveToSafetensors(path, table.params, table.num_params, params->buffers,
                                          table.module_hash)
      .release();
}

}  // extern "C"
