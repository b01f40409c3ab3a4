#include "cli.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>
#include <stdexcept>
#include <system_error>

#include "print.hpp"
#include "tfc/runtime/file.hpp"

namespace tfc::run {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = options.find(name);
  return it == options.end() ? kEmpty : it->second;
}

namespace {
const char* gProgramName = "tfc-run";
const Command* gOnlyCommand = nullptr;
}  // namespace

bool wantsHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return true;
    if (arg == "--") break;
  }
  return false;
}

void setProgram(const char* name, const Command* only) {
  gProgramName = name;
  gOnlyCommand = only;
}

const char* programName() { return gProgramName; }

std::string commandLine(const Command& command) {
  return &command == gOnlyCommand ? std::string(gProgramName)
                                  : std::string(gProgramName) + " " + command.name;
}

int fail(const std::string& message, int code) {
  print(stderr, "{}: error: {}\n", gProgramName, message);
  return code;
}

int fail(const Status& status) { return fail(status.message()); }

int usageError(const Command* command, const std::string& message) {
  std::string hint = (command ? commandLine(*command) : std::string(gProgramName)) + " --help";
  print(stderr, "{}: error: {}\n(see {})\n", gProgramName, message, hint);
  return kExitUsage;
}

int runCommand(const Command& command, const std::string& model,
               const std::vector<std::string>& rest) {
  if (wantsHelp(rest)) {
    std::fputs(command.help, stdout);
    return 0;
  }
  Invocation invocation{&command, model, {}};
  if (!parseArgs(command, rest, &invocation.args)) return kExitUsage;
  // Here, for every command, so that none can forget them: empty paths, and outputs that
  // would overwrite an input or each other.
  if (int code = checkPaths(invocation); code != 0) return code;
  // The runtime reports errors as statuses, but an allocation the system refuses (an input
  // larger than memory, a ulimit -v) or a thread it cannot start throws from the standard
  // library: an error and exit 1, never an abort.
  try {
    return command.run(invocation);
  } catch (const std::bad_alloc&) {
    print(stderr, "{}: error: out of memory while running '{}' (input too large for "
                  "this machine's memory or its limit, ulimit -v)\n", gProgramName, command.name);
  } catch (const std::length_error& error) {
    print(stderr, "{}: error: out of memory while running '{}': {} is too large\n",
          gProgramName, command.name, error.what());
  } catch (const std::system_error& error) {
    print(stderr, "{}: error: the system refused a resource while running '{}': {}\n",
          gProgramName, command.name, error.what());
  }
  return kExitFailure;
}

int finishMain(int code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int error = errno;
    print(stderr, "{}: error: cannot write standard output: {}\n", gProgramName,
          error != 0 ? std::strerror(error) : "write error");
    if (code == 0) code = kExitFailure;
  }
  return code;
}

bool parseArgs(const Command& command, const std::vector<std::string>& argv, Args* out) {
  bool onlyPositional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (onlyPositional || arg.size() < 2 || arg[0] != '-' ||
        (arg[1] != '-' && std::isdigit(static_cast<unsigned char>(arg[1])))) {
      out->positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositional = true;
      continue;
    }
    std::string name = arg, value;
    bool hasInlineValue = false;
    size_t equals = arg.find('=');
    if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      hasInlineValue = true;
    }
    const OptionSpec* spec = nullptr;
    std::vector<std::string> known;
    for (const OptionSpec& option : command.options) {
      known.push_back(option.name);
      if (name == option.name || (option.alias && name == option.alias)) spec = &option;
    }
    if (spec == nullptr) {
      std::string suggestion = closest(name, known);
      usageError(&command, "unknown option '" + name + "' for '" + commandLine(command) + "'" +
                               (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
      return false;
    }
    if (spec->takesValue && !hasInlineValue) {
      if (i + 1 >= argv.size()) {
        usageError(&command, std::string("option ") + spec->name + " needs a value");
        return false;
      }
      value = argv[++i];
    } else if (!spec->takesValue && hasInlineValue) {
      usageError(&command, std::string("option ") + spec->name + " takes no value");
      return false;
    }
    auto& values = out->options[spec->name];
    if (!values.empty() && !spec->repeatable) {
      usageError(&command, std::string("option ") + spec->name + " given twice");
      return false;
    }
    values.push_back(value);
  }
  return true;
}

int checkPaths(const Invocation& invocation) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  std::vector<NamedFile> inputs, outputs;
  if (command->needsModel) {
    if (invocation.model.empty()) {
      return usageError(command, "the model needs a path, got an empty string");
    }
    inputs.push_back({"the model", invocation.model, ""});
  }
  for (const OptionSpec& spec : command->options) {
    if (spec.kind == ValueKind::kOther) continue;
    for (const std::string& value : args.all(spec.name)) {
      if (spec.kind == ValueKind::kNamedInput) {
        // NAME=FILE or NAME=VALUE: the command parses it; a file, when it names one, is an
        // input (a value names none and is not compared).
        size_t equals = value.find('=');
        if (equals != std::string::npos && equals + 1 < value.size()) {
          inputs.push_back({std::string(spec.name) + " " + value.substr(0, equals),
                            value.substr(equals + 1), ""});
        }
        continue;
      }
      // Named as users mostly spell them: -o rather than --output.
      const std::string role = spec.alias ? spec.alias : spec.name;
      // "" would otherwise surface far away: ": cannot open", "/vocab.json", files written
      // at the root of the file system, or another option blamed.
      if (value.empty()) return usageError(command, role + " needs a path, got an empty string");
      if (spec.kind == ValueKind::kInput) inputs.push_back({role, value, ""});
      if (spec.kind == ValueKind::kOutput) {
        outputs.push_back({role, value, spec.replaces ? spec.replaces : ""});
      }
    }
  }
  if (command->positionalKind != ValueKind::kOther) {
    const std::string role = command->positionalRole ? command->positionalRole : "the input";
    for (const std::string& value : args.positional) {
      if (value.empty()) return usageError(command, role + " needs a path, got an empty string");
      if (command->positionalKind == ValueKind::kInput) inputs.push_back({role, value, ""});
      if (command->positionalKind == ValueKind::kOutput) outputs.push_back({role, value, ""});
    }
  }
  Status distinct = checkDistinctFiles(inputs, outputs);
  if (!distinct.ok()) return fail(distinct);
  return 0;
}

std::string parseDevice(const Args& args, int32_t* out) {
  *out = -1;  // the runtime's default: GPU 0, or the node-local rank's under mpirun
  if (!args.has("--device")) return "";
  int64_t device = 0;
  if (!parseInt64(args.get("--device"), &device) || device < 0 || device > 1023) {
    return "--device '" + args.get("--device") + "' is not a GPU number (0 is the first)";
  }
  *out = static_cast<int32_t>(device);
  return "";
}

bool parseInt64(const std::string& text, int64_t* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = value;
  return true;
}

bool parseUint64(const std::string& text, uint64_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = value;
  return true;
}

bool parseDouble(const std::string& text, double* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || end != text.c_str() + text.size() || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, units[unit]);
}

int writeParameters(const Artifact& artifact, const Params& params, const std::string& path,
                    const std::string& suffix) {
  Status status = params.saveSafetensors(path);
  if (!status.ok()) return fail(status);
  uint64_t bytes = 0;
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    bytes += tfc_tensor_desc_byte_size(&artifact.param(i));
  }
  print("wrote {}: {} parameters, {}{}\n", path, artifact.paramCount(), formatBytes(bytes),
        suffix);
  return 0;
}

std::string closest(const std::string& name, const std::vector<std::string>& candidates) {
  size_t best = SIZE_MAX;
  std::string bestName;
  for (const std::string& candidate : candidates) {
    std::vector<size_t> row(candidate.size() + 1);
    for (size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= candidate.size(); ++j) {
        size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                           diagonal + (name[i - 1] == candidate[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[candidate.size()] < best) {
      best = row[candidate.size()];
      bestName = candidate;
    }
  }
  if (best > std::max<size_t>(2, name.size() / 3) || best >= name.size()) return "";
  return bestName;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += separator;
    text += items[i];
  }
  return text;
}

void printTable(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    print("{}\n", line);
  }
}

namespace {
float halfToFloat(uint16_t bits) {
  uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  float value = exponent == 0    ? std::ldexp(static_cast<float>(mantissa), -24)
                : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                 : std::ldexp(static_cast<float>(mantissa | 0x400u),
                                              static_cast<int>(exponent) - 25);
  return (bits & 0x8000u) ? -value : value;
}

// The |T| at |p|, which need not be aligned.
template <typename T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}
}  // namespace

std::string formatValues(const TensorView& tensor, int64_t count) {
  size_t size = tfc_dtype_size(tensor.dtype);
  if (size == 0) return "";
  int64_t total = static_cast<int64_t>(tensor.byteSize / size);
  std::string text;
  const auto* bytes = static_cast<const uint8_t*>(tensor.data);
  auto out = std::back_inserter(text);
  for (int64_t i = 0; i < std::min(count, total); ++i) {
    if (i > 0) text += ", ";
    const uint8_t* p = bytes + static_cast<size_t>(i) * size;
    // Floats as printf's %.Ng of the value widened to double (what these printed before fmt);
    // 8-bit integers cast to int, which fmt would otherwise print as characters.
    switch (tensor.dtype) {
      case TFC_DTYPE_F32: fmt::format_to(out, "{:.7g}", double{load<float>(p)}); break;
      case TFC_DTYPE_F64: fmt::format_to(out, "{:.15g}", load<double>(p)); break;
      case TFC_DTYPE_F16:
        fmt::format_to(out, "{:.5g}", double{halfToFloat(load<uint16_t>(p))});
        break;
      case TFC_DTYPE_BF16: {
        uint32_t bits = static_cast<uint32_t>(load<uint16_t>(p)) << 16;
        float value;
        std::memcpy(&value, &bits, 4);
        fmt::format_to(out, "{:.4g}", double{value});
        break;
      }
      case TFC_DTYPE_I32: fmt::format_to(out, "{}", load<int32_t>(p)); break;
      case TFC_DTYPE_I64: fmt::format_to(out, "{}", load<int64_t>(p)); break;
      case TFC_DTYPE_I16: fmt::format_to(out, "{}", load<int16_t>(p)); break;
      case TFC_DTYPE_I8: fmt::format_to(out, "{}", int{load<int8_t>(p)}); break;
      case TFC_DTYPE_U8: fmt::format_to(out, "{}", unsigned{*p}); break;
      case TFC_DTYPE_BOOL: text += *p ? "true" : "false"; break;
      case TFC_DTYPE_U16: fmt::format_to(out, "{}", load<uint16_t>(p)); break;
      case TFC_DTYPE_U32: fmt::format_to(out, "{}", load<uint32_t>(p)); break;
      case TFC_DTYPE_U64: fmt::format_to(out, "{}", load<uint64_t>(p)); break;
      default: text += "?"; break;
    }
  }
  if (total > count) text += ", ...";
  return text;
}

}  // namespace tfc::run
