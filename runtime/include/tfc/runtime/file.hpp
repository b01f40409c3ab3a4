// Atomic file writes, as the runtime's own writers (writeSafetensors, writeNpy) do them,
// for embedders and tools that write other files (a plot, a report); the check that a
// command's outputs are not its inputs; and opening a user's file for reading without
// blocking on a FIFO or a device.
#ifndef TFC_RUNTIME_FILE_HPP_
#define TFC_RUNTIME_FILE_HPP_

#include <cstddef>
#include <string>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc {

// Replaces |path| with |size| bytes at |data| so that readers see the old file or the new
// one, never a part: a temporary file beside the target, fsync, rename. A symbolic link is
// written through (its target is replaced, the link kept); a target that exists and is not
// a regular file (a device such as /dev/full, a directory) is refused; temporaries of the
// same target left by killed writers are removed. On failure the old file is unchanged and
// the status names |path|, the failing step and the system's reason.
Status writeFileAtomically(const std::string& path, const void* data, size_t size);

// A file a command reads or writes, with the role that names it in messages: an option
// ("--log") or a description ("the model"). (Not "NamedPath": the compiler's support
// library has a tfc::NamedPath of its own, and one program may link both.)
struct NamedFile {
  std::string role;
  std::string path;
  // Outputs only: the role of the one input this output may be, for a documented update in
  // place (--state-out onto --state-in, a checkpoint saved over the one resumed); "" none.
  std::string replaces;
};

// Refuses (INVALID_ARGUMENT, naming both roles and paths) an output that is the same file
// as an input or as another output, before any work: a log written over the model being
// run, or a plot over the checkpoint, destroys the user's file. Files are compared by
// device and inode after following symbolic links, so hard links, symbolic links and other
// spellings of one path are caught; an output that does not exist yet is compared by its
// parent folder's canonical path and its name (two outputs to one new file). Skipped:
// empty paths and "-" (standard input or output), inputs that do not exist (their readers
// report them), and outputs that exist and are not regular files (/dev/null twice is fine;
// the writer refuses the others).
Status checkDistinctFiles(const std::vector<NamedFile>& inputs,
                          const std::vector<NamedFile>& outputs);

// Opens the user's file |path| for reading: O_RDONLY | O_NONBLOCK | O_CLOEXEC, so that a
// FIFO or a device does not block the open for ever, then fstat, refusing anything but a
// regular file (INVALID_ARGUMENT: "PATH: is a named pipe (FIFO), not a regular file"),
// then clears O_NONBLOCK. Returns the descriptor, which the caller closes. A missing file
// is NOT_FOUND; other failures IO_ERROR; every message names |path|.
StatusOr<int> openRegularFileForRead(const std::string& path);

}  // namespace tfc

#endif  // TFC_RUNTIME_FILE_HPP_
