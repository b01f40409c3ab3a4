// tfc-run inspect FILE: list the tensors of a .safetensors or .npy file.
#include <unistd.h>

#include <cstring>

#include "cli.hpp"
#include "print.hpp"
#include "tfc/runtime/file.hpp"
#include "tfc/runtime/npy.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace tfc::run {
namespace {

bool looksLikeNpy(const std::string& path) {
  // Without blocking on a FIFO: the reader below then says what the file is.
  auto fd = openRegularFileForRead(path);
  if (!fd.ok()) return false;
  char magic[6] = {0};
  ssize_t got = ::pread(*fd, magic, sizeof(magic), 0);
  ::close(*fd);
  return got == 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0;
}

int runInspect(const Invocation& invocation) {
  const Args& args = invocation.args;
  if (args.positional.empty()) {
    return usageError(invocation.command, "missing FILE (a .safetensors or .npy file)");
  }
  int64_t values = 0;
  if (args.has("--values") && (!parseInt64(args.get("--values"), &values) || values < 0)) {
    return usageError(invocation.command,
                      "--values '" + args.get("--values") + "' is not a non-negative integer");
  }
  int result = 0;
  for (size_t f = 0; f < args.positional.size(); ++f) {
    const std::string& path = args.positional[f];
    if (f > 0) print("\n");
    if (looksLikeNpy(path) || (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0)) {
      auto tensor = readNpy(path);
      if (!tensor.ok()) {
        result = fail(tensor.status());
        continue;
      }
      print("{}: npy, {} {}, {}\n", path, tfc_dtype_name(tensor->dtype()),
            formatShape(tensor->shape()), formatBytes(tensor->byteSize()));
      if (values > 0) print("  values: {}\n", formatValues(tensor->view(), values));
      continue;
    }
    auto file = SafetensorsFile::open(path);
    if (!file.ok()) {
      result = fail(file.status());
      continue;
    }
    uint64_t total = 0;
    for (const auto& tensor : file->tensors()) total += tensor.byteSize;
    print("{}: safetensors, {} tensors, {}\n", path, file->tensors().size(), formatBytes(total));
    std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "bytes"}};
    if (values > 0) rows[0].push_back("values");
    for (const auto& tensor : file->tensors()) {
      rows.push_back({tensor.name, tfc_dtype_name(tensor.dtype), formatShape(tensor.shape),
                      std::to_string(tensor.byteSize)});
      if (values > 0) rows.back().push_back(formatValues(tensor.view(), values));
    }
    printTable(rows, "  ");
    if (!file->metadata().empty()) {
      print("metadata:\n");
      for (const auto& [key, value] : file->metadata()) {
        print("  {}: {}\n", key, value);
      }
    }
  }
  return result;
}

}  // namespace

const Command kInspectCommand = {
    "inspect",
    "list the tensors of .safetensors or .npy files (no model needed)",
    R"(usage: tfc-run inspect FILE... [--values N]

Lists each tensor of a .safetensors file (name, dtype, shape, bytes, and the file's
metadata) or describes a .npy file (dtype, shape, bytes). The format is recognized from the
file's contents. Every file is checked as strictly as when a model loads it, so inspect
also tells why a weights file is refused.

options:
  --values N   also print the first N values of each tensor

examples:
  tfc-run inspect model.safetensors
  tfc-run inspect out/logits.npy --values 8
  tfc-run inspect weights.safetensors | grep wte
)",
    false,
    {{"--values", nullptr, true, false}},
    runInspect,
    ValueKind::kInput,
    "the file",
};

}  // namespace tfc::run
