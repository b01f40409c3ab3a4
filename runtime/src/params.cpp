// Parameters: storage, initialization from specs, and safetensors load/save.
#include <cstring>
#include <string>

#include "file_util.hpp"
#include "runtime_internal.hpp"

using tfc::Status;
using tfc::internal::quoteForMessage;

tfc_params_s::~tfc_params_s() {
  for (auto& buffer : buffers) tfc::internal::freeBuffer(allocator, buffer);
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
  const tfc_artifact_t& table = *artifact->table;
  params->set.assign(static_cast<size_t>(table.num_params), false);
  params->buffers.reserve(static_cast<size_t>(table.num_params));
  for (int32_t i = 0; i < table.num_params; ++i) {
    std::string what = "parameter " + quoteForMessage(table.params[i].name);
    auto buffer = tfc::internal::allocateBuffer(
        params->allocator, tfc_tensor_desc_byte_size(&table.params[i]), true, what.c_str());
    if (!buffer.ok()) {
      Status status = std::move(buffer).takeStatus();
      tfc_params_release(params);
      return status.release();
    }
    params->buffers.push_back(*buffer);
  }
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
  const tfc_tensor_desc_t& desc = params->artifact->table->params[index];
  out_tensor->dtype = static_cast<tfc_dtype_t>(desc.dtype);
  out_tensor->rank = desc.rank;
  out_tensor->shape = desc.shape;
  out_tensor->data = params->buffers[static_cast<size_t>(index)].data;
  out_tensor->byte_size = params->buffers[static_cast<size_t>(index)].byteSize;
  return nullptr;
}

bool tfc_params_is_set(const tfc_params_t* params, int32_t index) {
  if (!checkIndex(params, index).ok()) return false;
  return params->set[static_cast<size_t>(index)];
}

tfc_status_t tfc_params_mark_set(tfc_params_t* params, int32_t index) {
  Status status = checkIndex(params, index);
  if (!status.ok()) return status.release();
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
  tfc::internal::Buffer& buffer = params->buffers[static_cast<size_t>(index)];
  if (value->byte_size > 0) std::memmove(buffer.data, value->data, value->byte_size);
  params->set[static_cast<size_t>(index)] = true;
  return nullptr;
}

tfc_status_t tfc_params_init(tfc_params_t* params, uint64_t seed) {
  if (params == nullptr) return tfc_status_make(TFC_INVALID_ARGUMENT, "null params");
  std::vector<tfc::internal::InitSpec> specs;
  Status status = tfc::internal::initSpecsFor(params->artifact, false, &specs);
  if (!status.ok()) return status.release();
  const tfc_artifact_t& table = *params->artifact->table;
  for (int32_t i = 0; i < table.num_params; ++i) {
    const tfc_tensor_desc_t& desc = table.params[i];
    status = tfc::internal::fillInit(specs[static_cast<size_t>(i)],
                                     static_cast<tfc_dtype_t>(desc.dtype),
                                     tfc::internal::descShape(desc),
                                     tfc::internal::initStreamSeed(seed, static_cast<uint64_t>(i)),
                                     params->buffers[static_cast<size_t>(i)].data);
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
  auto file = tfc::SafetensorsFile::open(path);
  if (!file.ok()) return std::move(file).takeStatus().release();
  const tfc_artifact_t& table = *params->artifact->table;
  Status status = tfc::internal::bindFromSafetensors(
      *file, table.params, table.num_params, params->buffers, "parameter", options->allow_missing,
      options->allow_unexpected, &params->set);
  return status.release();
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
