// Atomic file writes, as the runtime's own writers (writeSafetensors, writeNpy) do them,
// for embedders and tools that write other files (a plot, a report).
#ifndef TFC_RUNTIME_FILE_HPP_
#define TFC_RUNTIME_FILE_HPP_

#include <cstddef>
#include <string>

#include "tfc/runtime/status.hpp"

namespace tfc {

// Replaces |path| with |size| bytes at |data| so that readers see the old file or the new
// one, never a part: a temporary file beside the target, fsync, rename. A symbolic link is
// written through (its target is replaced, the link kept); a target that exists and is not
// a regular file (a device such as /dev/full, a directory) is refused; temporaries of the
// same target left by killed writers are removed. On failure the old file is unchanged and
// the status names |path|, the failing step and the system's reason.
Status writeFileAtomically(const std::string& path, const void* data, size_t size);

}  // namespace tfc

#endif  // TFC_RUNTIME_FILE_HPP_
