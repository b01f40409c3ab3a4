// Internal: reading whole files (memory-mapped where possible), atomic writes
// (temporary file + fsync + rename), and message formatting helpers shared by the
// safetensors and .npy code. Not installed; not part of the public API.
#ifndef TFC_RUNTIME_SRC_FILE_UTIL_HPP_
#define TFC_RUNTIME_SRC_FILE_UTIL_HPP_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc::internal {

// The bytes of a whole file. |owner| keeps them alive (an mmap or a heap buffer); copies
// share it.
struct FileContents {
  std::shared_ptr<const void> owner;
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool mapped = false;
  // The bytes may be written through |data| (a copy-on-write mapping or a buffer of our
  // own); the file never sees such writes.
  bool writable = false;
  // A mapped file stays open (shared with |owner|'s copies): readMapped reads its bytes
  // without faulting the mapping's pages in.
  std::shared_ptr<const int> fd;
};

// How readFile holds a file's bytes.
enum class FileMapping {
  kNone,         // read into a heap buffer
  kReadOnly,     // mmap PROT_READ, MAP_PRIVATE
  // mmap PROT_READ | PROT_WRITE, MAP_PRIVATE: pages are shared with the page cache until
  // written, then copied for this process alone (the file is opened read-only and never
  // changes). Lets a caller use the bytes in place as storage it may update later. Falls
  // back to kReadOnly when the kernel refuses (FileContents::writable says which).
  kCopyOnWrite,
};

// Reads the regular file at |path|: mmaps it as |mapping| says when the kernel agrees,
// otherwise (or with kNone) reads it into memory. Errors name |path|: NOT_FOUND for a
// missing file, INVALID_ARGUMENT for a directory or other non-regular file, IO_ERROR
// otherwise.
//
// A mapped file that another process truncates while it is mapped raises SIGBUS on access,
// and one rewritten in place changes the pages not yet written through a copy-on-write
// mapping: races with a concurrent writer, not properties of the file's contents. Writers
// in this library replace files by rename, which leaves a mapped file as it was.
StatusOr<FileContents> readFile(const std::string& path, FileMapping mapping);

// Drops from the process the pages of |contents|'s mapping wholly inside [data, data +
// size), for bytes that were copied elsewhere and will not be read soon: they stop counting
// in its resident set, and reading them again reads the file. Pages written through a
// copy-on-write mapping would lose the writes, so only for pages never written. Does
// nothing when |contents| is not mapped.
void releaseMappedPages(const FileContents& contents, const void* data, size_t size);

// Copies [data, data + size) of |contents| (a range of its bytes) to |out|: with pread from
// the file when it is mapped, so that the copy neither faults the mapping's pages into the
// process (a page-cache copy per 4 KiB page) nor leaves them resident. |path| names the
// file in errors.
Status readMapped(const FileContents& contents, const void* data, void* out, size_t size,
                  const std::string& path);

// Calls fn(offset, length) over [0, size) in pieces of kLoadChunkBytes (a multiple of every
// element size), for a copy out of a mapping that releases each piece's pages right after
// it: a load then holds its copies plus one piece of the file, not plus a whole tensor
// (gpt2's embedding alone is 147 MiB).
constexpr size_t kLoadChunkBytes = size_t{8} << 20;
template <typename Fn>
void forEachLoadChunk(size_t size, Fn fn) {
  for (size_t offset = 0; offset < size; offset += kLoadChunkBytes) {
    fn(offset, size - offset < kLoadChunkBytes ? size - offset : kLoadChunkBytes);
  }
}

// A piece of a file to write.
struct ByteSpan {
  const void* data;
  size_t size;
};

// Writes the concatenation of |chunks| to |path| atomically: into a new temporary file
// "<target>.tmp.<pid>.<random>" in the target's folder, fsync'ed, then renamed over the
// target. The target is |path|, or what it names when it is a symbolic link (the link
// stays, its file is replaced). An existing target that is not a regular file (a device,
// a directory, a pipe) is refused with INVALID_ARGUMENT. Before writing, temporaries of
// the same target left by writers that no longer run (killed during a save) are removed.
// On any error the temporary file is removed and an existing target is left as it was.
// Errors name |path| and the failing step; ENOENT maps to NOT_FOUND, others to IO_ERROR.
Status writeFileAtomically(const std::string& path, const std::vector<ByteSpan>& chunks);

// Reads exactly |size| bytes of |fd| at |offset| (pread, retried on EINTR and short reads);
// IO_ERROR naming |path| on a failure or when the file ends first (a file whose size came
// from fstat and is now shorter was truncated under us).
Status readAt(int fd, uint8_t* out, size_t size, off_t offset, const std::string& path);

// Returns |text| in single quotes for an error message, with non-printable bytes, quotes
// and backslashes escaped and anything past |maxLength| bytes elided, so that hostile
// names cannot flood or corrupt a log.
std::string quoteForMessage(std::string_view text, size_t maxLength = 200);

// Returns true if |text| is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF).
bool isValidUtf8(std::string_view text);

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_FILE_UTIL_HPP_
