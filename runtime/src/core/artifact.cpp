// Loading and validating artifacts (tfc_artifact_open) and querying them.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.hpp"
#include "tfc/artifact_checksum.h"
#include "tfc/runtime/file.hpp"
#include "core/runtime_internal.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/metadata.hpp"

using tfc::Status;
using tfc::internal::quoteForMessage;

tfc_loaded_artifact_s::~tfc_loaded_artifact_s() {
  if (handle != nullptr) dlclose(handle);
}

namespace {

constexpr int32_t kMaxAbiRank = 8;

bool isAbiDtype(int32_t dtype) {
  return dtype == TFC_ABI_F32 || dtype == TFC_ABI_F16 || dtype == TFC_ABI_BF16 ||
         dtype == TFC_ABI_I32 || dtype == TFC_ABI_I64;
}

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr const char* kHostMachineName = "x86_64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr const char* kHostMachineName = "aarch64";
#else
constexpr uint16_t kHostMachine = EM_NONE;  // not checked
constexpr const char* kHostMachineName = "this machine";
#endif

// Checks the checksum trailer the compiler appended (tfc/artifact_checksum.h): the loader
// trusts every byte, so a file damaged after tfc wrote it would otherwise end in an ld.so
// assertion or a SIGSEGV in the loader or in the compiled code.
Status checkChecksum(const std::string& path, int fd, uint64_t fileSize) {
  unsigned char trailer[TFC_ARTIFACT_TRAILER_SIZE];
  if (fileSize < TFC_ARTIFACT_TRAILER_SIZE ||
      !tfc::internal::readAt(fd, trailer, sizeof(trailer),
                             static_cast<off_t>(fileSize - TFC_ARTIFACT_TRAILER_SIZE), path)
           .ok() ||
      std::memcmp(trailer, TFC_ARTIFACT_TRAILER_MAGIC, 8) != 0) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: the artifact has no tfc checksum: not written by this tfc, or "
                         "truncated; recompile it",
                         path.c_str());
  }
  const uint64_t covered = tfc_checksum_read64(trailer + 8);
  const uint64_t recorded = tfc_checksum_read64(trailer + 16);
  if (covered != fileSize - TFC_ARTIFACT_TRAILER_SIZE) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: the artifact is damaged: its checksum covers %llu bytes but the "
                         "file has %llu before it (the file was changed after tfc wrote it); "
                         "recompile it",
                         path.c_str(), static_cast<unsigned long long>(covered),
                         static_cast<unsigned long long>(fileSize - TFC_ARTIFACT_TRAILER_SIZE));
  }
  constexpr size_t kChunk = size_t{1} << 20;  // a multiple of the hash's 32-byte stripes
  std::vector<unsigned char> buffer(kChunk);
  tfc_checksum_state_t state;
  tfc_checksum_init(&state);
  uint64_t offset = 0;
  uint64_t hash = 0;
  for (;;) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(kChunk, covered - offset));
    TFC_RETURN_IF_ERROR(
        tfc::internal::readAt(fd, buffer.data(), size, static_cast<off_t>(offset), path));
    if (size < kChunk) {
      const size_t whole = size - size % 32;
      tfc_checksum_stripes(&state, buffer.data(), whole);
      hash = tfc_checksum_finish(&state, buffer.data() + whole, size - whole);
      break;
    }
    tfc_checksum_stripes(&state, buffer.data(), size);
    offset += size;
  }
  if (hash != recorded) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: the artifact is damaged: its checksum does not match (the file "
                         "was changed after tfc wrote it); recompile it",
                         path.c_str());
  }
  return Status();
}

// Checks the file before dlopen sees it, so that common mistakes get plain messages and a
// truncated file cannot crash the process: glibc maps segments that end past the end of the
// file and touches them, which raises SIGBUS.
Status checkElfFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return Status::error(TFC_NOT_FOUND, "%s: no such file", path.c_str());
    }
    return Status::error(TFC_IO_ERROR, "%s: cannot stat: %s", path.c_str(), std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    return Status::error(TFC_INVALID_ARGUMENT, "%s: not a regular file%s", path.c_str(),
                         S_ISDIR(info.st_mode) ? " (it is a directory)" : "");
  }
  // Without blocking: the path may have become a FIFO since the stat above.
  TFC_ASSIGN_OR_RETURN(int fd, tfc::openRegularFileForRead(path));
  auto readAt = [fd](void* buffer, size_t size, uint64_t offset) {
    ssize_t got = ::pread(fd, buffer, size, static_cast<off_t>(offset));
    return got == static_cast<ssize_t>(size);
  };
  const uint64_t fileSize = static_cast<uint64_t>(info.st_size);
  Elf64_Ehdr header;
  std::memset(&header, 0, sizeof(header));
  bool haveHeader = readAt(&header, sizeof(header), 0);
  Status status;
  if (fileSize < 4 || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    status = Status::error(TFC_DATA_LOSS, "%s: not a shared object (bad ELF magic)", path.c_str());
  } else if (!haveHeader || header.e_ident[EI_CLASS] != ELFCLASS64 ||
             header.e_ident[EI_DATA] != ELFDATA2LSB) {
    status = Status::error(TFC_DATA_LOSS,
                           "%s: not a 64-bit little-endian ELF file (truncated or built for "
                           "another machine)",
                           path.c_str());
  } else if (header.e_type != ET_DYN) {
    status = Status::error(TFC_INVALID_ARGUMENT,
                           "%s: ELF file of type %u is not a shared object (compile the model "
                           "with tfc: tfc model.mlir -o model.so)",
                           path.c_str(), header.e_type);
  } else if (kHostMachine != EM_NONE && header.e_machine != kHostMachine) {
    status = Status::error(TFC_FAILED_PRECONDITION,
                           "%s: built for ELF machine %u, but this is %s; compile the model for "
                           "this machine",
                           path.c_str(), header.e_machine, kHostMachineName);
  } else if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
             header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr) > fileSize) {
    status = Status::error(TFC_DATA_LOSS,
                           "%s: truncated or corrupt shared object (program headers lie outside "
                           "the file's %llu bytes)",
                           path.c_str(), static_cast<unsigned long long>(fileSize));
  } else if (header.e_shnum > 0 &&
             header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize > fileSize) {
    status = Status::error(TFC_DATA_LOSS,
                           "%s: truncated shared object (section headers end at byte %llu but "
                           "the file has %llu bytes)",
                           path.c_str(),
                           static_cast<unsigned long long>(
                               header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize),
                           static_cast<unsigned long long>(fileSize));
  } else {
    for (uint16_t i = 0; i < header.e_phnum && status.ok(); ++i) {
      Elf64_Phdr segment;
      if (!readAt(&segment, sizeof(segment), header.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr))) {
        status = Status::error(TFC_IO_ERROR, "%s: cannot read program header %u", path.c_str(), i);
      } else if ((segment.p_type == PT_LOAD || segment.p_type == PT_DYNAMIC) &&
                 (segment.p_offset > fileSize || segment.p_filesz > fileSize - segment.p_offset)) {
        status = Status::error(TFC_DATA_LOSS,
                               "%s: truncated shared object (segment %u ends at byte %llu but "
                               "the file has %llu bytes)",
                               path.c_str(), i,
                               static_cast<unsigned long long>(segment.p_offset + segment.p_filesz),
                               static_cast<unsigned long long>(fileSize));
      }
    }
  }
  if (status.ok()) status = checkChecksum(path, fd, fileSize);
  ::close(fd);
  return status;
}

Status checkDesc(const std::string& path, const char* what, int32_t index,
                 const tfc_tensor_desc_t& desc, bool needsInit) {
  if (desc.name == nullptr || desc.name[0] == '\0') {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s #%d has no name", path.c_str(),
                         what, index);
  }
  std::string name = quoteForMessage(desc.name);
  if (desc.rank < 0 || desc.rank > kMaxAbiRank) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s %s has rank %d (allowed 0..%d)",
                         path.c_str(), what, name.c_str(), desc.rank, kMaxAbiRank);
  }
  if (desc.rank > 0 && desc.shape == nullptr) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s %s has rank %d but no shape",
                         path.c_str(), what, name.c_str(), desc.rank);
  }
  for (int32_t d = 0; d < desc.rank; ++d) {
    if (desc.shape[d] < 1) {
      return Status::error(TFC_DATA_LOSS,
                           "%s: corrupt artifact: %s %s has dimension %d of size %lld (must be "
                           ">= 1)",
                           path.c_str(), what, name.c_str(), d,
                           static_cast<long long>(desc.shape[d]));
    }
  }
  if (!isAbiDtype(desc.dtype)) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: corrupt artifact: %s %s has unknown dtype %d (known: F32, F16, "
                         "BF16, I32, I64)",
                         path.c_str(), what, name.c_str(), desc.dtype);
  }
  uint64_t bytes = tfc_tensor_desc_byte_size(&desc);
  if (bytes == 0 || bytes > (uint64_t{1} << 48)) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s %s is impossibly large",
                         path.c_str(), what, name.c_str());
  }
  if (needsInit && desc.init == nullptr) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s %s has no initializer spec",
                         path.c_str(), what, name.c_str());
  }
  return Status();
}

Status checkDescList(const std::string& path, const char* what, const tfc_tensor_desc_t* descs,
                     int32_t count, bool needsInit, const std::string& owner) {
  if (count < 0) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s%s count is %d", path.c_str(),
                         owner.c_str(), what, count);
  }
  if (count > 0 && descs == nullptr) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s%d %ss but a null table",
                         path.c_str(), owner.c_str(), count, what);
  }
  std::set<std::string_view> names;
  for (int32_t i = 0; i < count; ++i) {
    TFC_RETURN_IF_ERROR(checkDesc(path, (owner + what).c_str(), i, descs[i], needsInit));
    if (!names.insert(descs[i].name).second) {
      return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: duplicate %s%s name %s",
                           path.c_str(), owner.c_str(), what,
                           quoteForMessage(descs[i].name).c_str());
    }
  }
  return Status();
}

Status checkTable(const std::string& path, const tfc_artifact_t& table) {
  if (table.target == nullptr || table.compiler_version == nullptr ||
      table.module_hash == nullptr) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: corrupt artifact: target, compiler_version or module_hash is null",
                         path.c_str());
  }
  TFC_RETURN_IF_ERROR(checkDescList(path, "parameter", table.params, table.num_params, true, ""));
  TFC_RETURN_IF_ERROR(checkDescList(path, "state tensor", table.state, table.num_state, true, ""));
  if (table.num_entries < 0 || (table.num_entries > 0 && table.entries == nullptr)) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: bad entry table (%d entries)",
                         path.c_str(), table.num_entries);
  }
  std::set<std::string_view> names;
  for (int32_t i = 0; i < table.num_entries; ++i) {
    const tfc_entry_t& entry = table.entries[i];
    if (entry.name == nullptr || entry.name[0] == '\0') {
      return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: entry #%d has no name",
                           path.c_str(), i);
    }
    std::string owner = "entry " + quoteForMessage(entry.name) + " ";
    if (!names.insert(entry.name).second) {
      return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: duplicate entry name %s",
                           path.c_str(), quoteForMessage(entry.name).c_str());
    }
    if (entry.call == nullptr) {
      return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %shas a null function",
                           path.c_str(), owner.c_str());
    }
    TFC_RETURN_IF_ERROR(
        checkDescList(path, "input", entry.inputs, entry.num_inputs, false, owner));
    TFC_RETURN_IF_ERROR(
        checkDescList(path, "output", entry.outputs, entry.num_outputs, false, owner));
    // The kernel table is optional (profiles only); when present, every launch is named.
    if (entry.kernels != nullptr) {
      constexpr uint64_t kMaxKernels = uint64_t(1) << 24;
      if (entry.num_kernels > kMaxKernels) {
        return Status::error(TFC_DATA_LOSS,
                             "%s: corrupt artifact: %sclaims %llu kernel launches", path.c_str(),
                             owner.c_str(), static_cast<unsigned long long>(entry.num_kernels));
      }
      for (uint64_t k = 0; k < entry.num_kernels; ++k) {
        if (entry.kernels[k].name == nullptr || entry.kernels[k].ops == nullptr) {
          return Status::error(TFC_DATA_LOSS,
                               "%s: corrupt artifact: %skernel launch #%llu has no name",
                               path.c_str(), owner.c_str(), static_cast<unsigned long long>(k));
        }
      }
    }
  }
  return Status();
}

Status openArtifact(const char* pathArg, const tfc_artifact_options_t& options,
                    tfc_loaded_artifact_t* artifact) {
  const std::string& path = artifact->path;
  (void)pathArg;
  if (path.empty()) {
    return Status::error(TFC_NOT_FOUND, "the artifact's path is empty (no such file '')");
  }
  TFC_RETURN_IF_ERROR(checkElfFile(path));
  // dlopen() searches the library path for names without a slash; a model is a file.
  std::string loadPath = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  artifact->handle = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (artifact->handle == nullptr) {
    const char* reason = dlerror();
    return Status::error(TFC_DATA_LOSS, "%s: cannot load the shared object: %s", path.c_str(),
                         reason ? reason : "unknown dlopen error");
  }
  auto get = reinterpret_cast<tfc_artifact_get_fn_t>(dlsym(artifact->handle, TFC_ARTIFACT_SYMBOL));
  if (get == nullptr) {
    // Another version's symbol says the file is an artifact of a different ABI.
    for (int version = 0; version < 64; ++version) {
      std::string symbol = "tfc_artifact_v" + std::to_string(version);
      if (dlsym(artifact->handle, symbol.c_str()) != nullptr) {
        return Status::error(TFC_FAILED_PRECONDITION,
                             "%s: artifact ABI version %d (it exports %s), but this runtime "
                             "reads version %u (%s); recompile the model with this tfc",
                             path.c_str(), version, symbol.c_str(), TFC_ARTIFACT_ABI_VERSION,
                             TFC_ARTIFACT_SYMBOL);
      }
    }
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: not a tfc artifact: the shared object does not export %s (compile "
                         "the model with tfc: tfc model.mlir -o model.so)",
                         path.c_str(), TFC_ARTIFACT_SYMBOL);
  }
  const tfc_artifact_t* table = get();
  TFC_RETURN_IF_ERROR(tfc::internal::validateArtifactTable(
      path, table, options.skip_init_spec_check ? nullptr : &artifact->paramInits,
      options.skip_init_spec_check ? nullptr : &artifact->stateInits));
  artifact->initsParsed = !options.skip_init_spec_check;
  artifact->table = table;
  return tfc::internal::findHeldTensors(artifact);
}

}  // namespace

namespace tfc::internal {

Status findHeldTensors(tfc_loaded_artifact_t* artifact) {
  const tfc_artifact_t& table = *artifact->table;
  artifact->paramHeld.assign(static_cast<size_t>(table.num_params), true);
  artifact->stateHeld.assign(static_cast<size_t>(table.num_state), true);
  const std::string json = table.metadata_json != nullptr ? table.metadata_json : "";
  auto pp = pipelineLayout(json);
  if (!pp.ok()) {
    return Status::error(pp.status().code(), "%s: %s", artifact->path.c_str(),
                         pp.status().message());
  }
  auto ep = expertLayout(json);
  if (!ep.ok()) {
    return Status::error(ep.status().code(), "%s: %s", artifact->path.c_str(),
                         ep.status().message());
  }
  if (pp->held.empty() && ep->held.empty()) return Status();
  TFC_ASSIGN_OR_RETURN(ProcessMesh mesh, processMesh(json));
  TFC_ASSIGN_OR_RETURN(Communicator * world, worldCommunicator());
  // A pipeline stage's ranks, or (expert parallel alone) each rank by itself.
  const PipelineLayout& layout = pp->held.empty() ? *ep : *pp;
  const int64_t index = pp->held.empty() ? world->rank() : mesh.stageOf(world->rank());
  for (int32_t i = 0; i < table.num_params; ++i) {
    artifact->paramHeld[static_cast<size_t>(i)] = layout.holds(table.params[i].name, index);
  }
  for (int32_t i = 0; i < table.num_state; ++i) {
    artifact->stateHeld[static_cast<size_t>(i)] = layout.holds(table.state[i].name, index);
  }
  return Status();
}

Status validateArtifactTable(const std::string& path, const tfc_artifact_t* table,
                             std::vector<InitSpec>* paramInits,
                             std::vector<InitSpec>* stateInits) {
  if (table == nullptr) {
    return Status::error(TFC_DATA_LOSS, "%s: corrupt artifact: %s() returned a null table",
                         path.c_str(), TFC_ARTIFACT_SYMBOL);
  }
  if (table->magic != TFC_ARTIFACT_MAGIC) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: corrupt artifact: bad magic 0x%08x (expected 0x%08x, \"TFC1\")",
                         path.c_str(), table->magic, TFC_ARTIFACT_MAGIC);
  }
  if (table->abi_version != TFC_ARTIFACT_ABI_VERSION) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "%s: artifact ABI version %u, but this runtime expects version %u; "
                         "recompile the model with this tfc",
                         path.c_str(), table->abi_version, TFC_ARTIFACT_ABI_VERSION);
  }
  if (table->struct_size < sizeof(tfc_artifact_t)) {
    return Status::error(TFC_DATA_LOSS,
                         "%s: corrupt artifact: struct_size %u is smaller than the %zu bytes of "
                         "tfc_artifact_t (ABI version %u); recompile the model with this tfc",
                         path.c_str(), table->struct_size, sizeof(tfc_artifact_t),
                         TFC_ARTIFACT_ABI_VERSION);
  }
  TFC_RETURN_IF_ERROR(checkTable(path, *table));
  if (paramInits != nullptr) {
    TFC_RETURN_IF_ERROR(parseInits(path, "parameter", table->params, table->num_params,
                                   paramInits));
  }
  if (stateInits != nullptr) {
    TFC_RETURN_IF_ERROR(parseInits(path, "state tensor", table->state, table->num_state,
                                   stateInits));
  }
  return Status();
}

}  // namespace tfc::internal

extern "C" {

void tfc_artifact_options_initialize(tfc_artifact_options_t* out_options) {
  if (out_options == nullptr) return;
  std::memset(out_options, 0, sizeof(*out_options));
  out_options->skip_init_spec_check = false;
}

tfc_status_t tfc_artifact_open(const char* path, const tfc_artifact_options_t* options,
                               tfc_loaded_artifact_t** out_artifact) {
  if (path == nullptr || out_artifact == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_artifact_open: null path or out_artifact");
  }
  tfc_artifact_options_t defaults;
  tfc_artifact_options_initialize(&defaults);
  auto* artifact = new (std::nothrow) tfc_loaded_artifact_s();
  if (artifact == nullptr) return tfc_status_make(TFC_OUT_OF_MEMORY, "%s: out of memory", path);
  artifact->path = path;
  Status status = openArtifact(path, options ? *options : defaults, artifact);
  if (!status.ok()) {
    delete artifact;
    return status.release();
  }
  *out_artifact = artifact;
  return nullptr;
}

void tfc_artifact_retain(tfc_loaded_artifact_t* artifact) {
  if (artifact != nullptr) artifact->refs.fetch_add(1, std::memory_order_relaxed);
}

void tfc_artifact_release(tfc_loaded_artifact_t* artifact) {
  if (artifact != nullptr && artifact->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete artifact;
  }
}

const char* tfc_artifact_path(const tfc_loaded_artifact_t* artifact) {
  return artifact->path.c_str();
}
const char* tfc_artifact_target(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->target;
}
const char* tfc_artifact_compiler_version(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->compiler_version;
}
const char* tfc_artifact_module_hash(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->module_hash;
}
const char* tfc_artifact_metadata_json(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->metadata_json ? artifact->table->metadata_json : "";
}
const tfc_artifact_t* tfc_artifact_table(const tfc_loaded_artifact_t* artifact) {
  return artifact->table;
}

int32_t tfc_artifact_param_count(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->num_params;
}
const tfc_tensor_desc_t* tfc_artifact_param(const tfc_loaded_artifact_t* artifact,
                                            int32_t index) {
  if (index < 0 || index >= artifact->table->num_params) return nullptr;
  return &artifact->table->params[index];
}
int32_t tfc_artifact_state_count(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->num_state;
}
const tfc_tensor_desc_t* tfc_artifact_state(const tfc_loaded_artifact_t* artifact,
                                            int32_t index) {
  if (index < 0 || index >= artifact->table->num_state) return nullptr;
  return &artifact->table->state[index];
}
int32_t tfc_artifact_entry_count(const tfc_loaded_artifact_t* artifact) {
  return artifact->table->num_entries;
}
const tfc_entry_t* tfc_artifact_entry(const tfc_loaded_artifact_t* artifact, int32_t index) {
  if (index < 0 || index >= artifact->table->num_entries) return nullptr;
  return &artifact->table->entries[index];
}

tfc_status_t tfc_artifact_find_param(const tfc_loaded_artifact_t* artifact, const char* name,
                                     int32_t* out_index) {
  if (name == nullptr || out_index == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_artifact_find_param: null argument");
  }
  const tfc_artifact_t& table = *artifact->table;
  std::vector<std::string_view> names;
  for (int32_t i = 0; i < table.num_params; ++i) {
    if (std::strcmp(table.params[i].name, name) == 0) {
      *out_index = i;
      return nullptr;
    }
    names.emplace_back(table.params[i].name);
  }
  std::string closest = tfc::internal::closestName(name, names);
  std::string hint = closest.empty() ? "" : "; did you mean '" + closest + "'?";
  return tfc_status_make(TFC_NOT_FOUND, "%s: no parameter %s%s", artifact->path.c_str(),
                         quoteForMessage(name).c_str(), hint.c_str());
}

tfc_status_t tfc_artifact_find_entry(const tfc_loaded_artifact_t* artifact, const char* name,
                                     int32_t* out_index) {
  if (name == nullptr || out_index == nullptr) {
    return tfc_status_make(TFC_INVALID_ARGUMENT, "tfc_artifact_find_entry: null argument");
  }
  const tfc_artifact_t& table = *artifact->table;
  std::vector<std::string_view> names;
  std::string list;
  for (int32_t i = 0; i < table.num_entries; ++i) {
    if (std::strcmp(table.entries[i].name, name) == 0) {
      *out_index = i;
      return nullptr;
    }
    names.emplace_back(table.entries[i].name);
    if (!list.empty()) list += ", ";
    list += table.entries[i].name;
  }
  std::string closest = tfc::internal::closestName(name, names);
  std::string hint = closest.empty() ? "" : "; did you mean '" + closest + "'?";
  return tfc_status_make(TFC_NOT_FOUND, "no entry %s in %s (entries: %s)%s",
                         quoteForMessage(name).c_str(), artifact->path.c_str(),
                         list.empty() ? "none" : list.c_str(), hint.c_str());
}

}  // extern "C"
