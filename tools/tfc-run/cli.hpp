// tfc-run's command-line plumbing: the command table, option parsing, error reporting and
// formatting helpers shared by the subcommands.
#ifndef TFC_TOOLS_TFC_RUN_CLI_HPP_
#define TFC_TOOLS_TFC_RUN_CLI_HPP_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tensor.hpp"
#include "tfc/runtime/text_output_file.hpp"

namespace tfc::run {

// Exit codes: 0 success, 1 a failure while doing the work, 2 a usage error.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// What an option's value (or a command's positional arguments) is, for the checks the
// dispatcher makes before every command runs (checkPaths): a path must not be empty, and
// no output may be the same file as an input or another output.
enum class ValueKind {
  kOther,       // a number, a name, an entry
  kInput,       // a file (or folder) the command reads
  kNamedInput,  // NAME=FILE (call's --in): the file after '=', when it names one
  kOutput,      // a file the command writes
  kOutputDir,   // a folder the command writes into (not compared; must not be empty)
};

struct OptionSpec {
  const char* name;   // "--weights"
  const char* alias;  // "-o" or nullptr
  bool takesValue;
  bool repeatable;
  ValueKind kind = ValueKind::kOther;
  // kOutput only: the input option this output may be the same file as, for an update in
  // place the help documents (--state-out onto --state-in); nullptr for none.
  const char* replaces = nullptr;
};

// Shorthands for the command tables.
inline OptionSpec inputOption(const char* name, const char* alias = nullptr) {
  return {name, alias, true, false, ValueKind::kInput};
}
inline OptionSpec outputOption(const char* name, const char* alias = nullptr,
                               const char* replaces = nullptr) {
  return {name, alias, true, false, ValueKind::kOutput, replaces};
}

// Parsed arguments of one subcommand.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> options;  // by OptionSpec::name
  bool has(const std::string& name) const { return options.count(name) != 0; }
  // The last value of |name|, or |fallback|.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
};

struct Command;

// One run of a subcommand: the model path (empty for commands that take none) and the
// parsed arguments.
struct Invocation {
  const Command* command;
  std::string model;
  Args args;
};

struct Command {
  const char* name;
  const char* summary;  // one line for the overview
  const char* help;     // the full --help text (usage, options, examples)
  bool needsModel;      // invoked as `tfc-run MODEL.so NAME`, else `tfc-run NAME`
  std::vector<OptionSpec> options;
  int (*run)(const Invocation& invocation);
  // What the positional arguments after the command are (tokenize's and inspect's files,
  // export's checkpoint), and their role in messages ("the input"). The model itself is
  // always an input, "the model".
  ValueKind positionalKind = ValueKind::kOther;
  const char* positionalRole = nullptr;
};

// The subcommands, in the order the overview lists them. Adding one (generate is next):
// write cmd_<name>.cpp defining its Command, declare it here and list it in commands().
extern const Command kInfoCommand;
extern const Command kInitCommand;
extern const Command kCallCommand;
extern const Command kGenerateCommand;
extern const Command kServeCommand;
extern const Command kTrainCommand;
extern const Command kExportCommand;
extern const Command kInspectCommand;
extern const Command kTokenizeCommand;
extern const Command kProfileCommand;
extern const Command kMachineCommand;

// The program whose messages these are: tfc-run (the default), or a program that is one
// command (examples/seed-experiment's tfc-seed-experiment), whose usage hints then say
// "NAME --help" rather than "tfc-run COMMAND --help".
void setProgram(const char* name, const Command* only = nullptr);
const char* programName();
// "tfc-run train" or, for a one-command program, its name.
std::string commandLine(const Command& command);

// Whether |args| ask for help (--help or -h before any "--").
bool wantsHelp(const std::vector<std::string>& args);
// Runs |command| on |model| ("" for none) with the arguments after it: --help, parsing,
// checkPaths, and errors for what the standard library throws (no memory, no threads).
int runCommand(const Command& command, const std::string& model,
               const std::vector<std::string>& rest);
// The exit code of a main returning |code|: a failure when standard output could not be
// written (a full disk, a closed pipe), so that cut-short results never end in success.
int finishMain(int code);

// Parses |argv| for |command|. On a usage error prints it and returns false.
bool parseArgs(const Command& command, const std::vector<std::string>& argv, Args* out);

// The checks every command gets before it runs, from the kinds in its table: a path option
// given as "" is a usage error naming it (returns kExitUsage), and an output that is the
// same file as an input (the model included) or as another output is refused naming both
// (returns kExitFailure), before anything is read or written. 0 when all is well.
int checkPaths(const Invocation& invocation);

// Prints "PROGRAM: error: <message>" to stderr and returns kExitFailure (or |code|).
int fail(const std::string& message, int code = kExitFailure);
int fail(const Status& status);
// A usage error: the message and a pointer to --help; returns kExitUsage.
int usageError(const Command* command, const std::string& message);

// Parsing helpers; false when |text| is not entirely a number in range.
bool parseInt64(const std::string& text, int64_t* out);
// --device N (which GPU runs a CUDA artifact; default -1: the runtime's
// choice, GPU 0 or the node-local rank's under mpirun) into *out; the usage error's text
// when N is not a GPU number, else "".
std::string parseDevice(const Args& args, int32_t* out);
bool parseUint64(const std::string& text, uint64_t* out);
bool parseDouble(const std::string& text, double* out);

// "224 B", "1.50 KiB", "3.20 GiB".
std::string formatBytes(uint64_t bytes);

// Writes |params| to |path| (atomically) and prints "wrote PATH: N parameters, SIZE" plus
// |suffix|; returns the exit status (1 after printing the error).
int writeParameters(const Artifact& artifact, const Params& params, const std::string& path,
                    const std::string& suffix = "");
// The closest of |candidates| to |name|, or "".
std::string closest(const std::string& name, const std::vector<std::string>& candidates);
// "a, b, c".
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");
// |text| as a JSON string literal (quotes, backslashes and control bytes escaped).
std::string jsonString(const std::string& text);
// Prints rows as aligned columns, each line prefixed with |indent|.
void printTable(const std::vector<std::vector<std::string>>& rows, const std::string& indent);
// The first |count| values of |tensor| as text ("1, 2.5, ...").
std::string formatValues(const TensorView& tensor, int64_t count);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_CLI_HPP_
