// The inputs of one entry point from the command line, as `call` and `profile` take them:
// --in NAME=FILE.npy (dtype and shape must match the entry's) or --in NAME=VALUE for 0-d
// inputs; and the checks of the KV-cache positions that compiled code can only make late.
#ifndef TFC_TOOLS_TFC_RUN_ENTRY_INPUTS_HPP_
#define TFC_TOOLS_TFC_RUN_ENTRY_INPUTS_HPP_

#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc::run {

struct EntryInputs {
  std::vector<HostTensor> tensors;  // in the entry's order; empty where not given
  std::vector<bool> given;
  // "tokens (I32 [2, 16]), pos (I32 [])": the inputs not given, for messages.
  std::vector<std::string> missing(const tfc_entry_t& entry) const;
};

// Reads every --in of |args| for |entry|. On an error prints it (a usage error of |command|
// or a failure naming the file and the input), sets *exitCode and returns nullopt.
std::optional<EntryInputs> readEntryInputs(const Command* command, const Args& args,
                                           const tfc_entry_t& entry, int* exitCode);

// The tokens of one call of a KV-cache entry: prefill's chunk P, decode's 1 (the second
// dimension of its tokens input, [B, P] or [B, 1]); 1 for entries without one.
int64_t tokensPerCall(const tfc_entry_t& entry);

// prefill's `n` and the `pos` of prefill and decode are checked by the library when an
// entry is called (tfc_context_call), for every caller.

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_ENTRY_INPUTS_HPP_
