//===- FileIdentity.cpp - outputs that must not be the tool's inputs ------===//
#include "support/FileIdentity.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <vector>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace tfc {
namespace {

/// `dir` as an absolute path: its real path where it exists (links and dots
/// resolved), else made absolute with dots removed.
std::string canonicalFolder(llvm::StringRef dir) {
  if (dir.empty())
    dir = ".";
  llvm::SmallString<256> real;
  if (!fs::real_path(dir, real))
    return real.str().str();
  llvm::SmallString<256> absolute(dir);
  fs::make_absolute(absolute);
  path::remove_dots(absolute, /*remove_dot_dot=*/true);
  return absolute.str().str();
}

/// What a path is on the file system, for comparisons.
struct Identity {
  enum Kind { Skip, Existing, New } kind = Skip;
  fs::UniqueID id;  ///< Existing: device and inode, links followed
  std::string name; ///< New: the real path of its folder, "/", its name

  bool sameAs(const Identity &other) const {
    if (kind == Skip || kind != other.kind)
      return false;
    return kind == Existing ? id == other.id : name == other.name;
  }
};

Identity identify(llvm::StringRef p) {
  Identity identity;
  if (p.empty() || p == "-")
    return identity;
  fs::file_status status;
  if (!fs::status(p, status, /*Follow=*/true)) {
    // A device, FIFO or socket is read or written in place, never replaced:
    // `-o /dev/null --report /dev/null` destroys nothing.
    if (status.type() != fs::file_type::regular_file &&
        status.type() != fs::file_type::directory_file)
      return identity;
    identity.kind = Identity::Existing;
    identity.id = status.getUniqueID();
    return identity;
  }
  // Not there yet (or a dangling link, which the writer replaces): the file
  // it will be is its folder's and its name's.
  identity.kind = Identity::New;
  identity.name =
      canonicalFolder(path::parent_path(p)) + "/" + path::filename(p).str();
  return identity;
}

/// The real path of the folder that holds `p` (of its target, for a link).
std::string folderOf(llvm::StringRef p) {
  llvm::SmallString<256> real;
  if (!fs::real_path(p, real))
    return path::parent_path(real).str();
  return canonicalFolder(path::parent_path(p));
}

} // namespace

llvm::Error checkDistinctFiles(llvm::ArrayRef<NamedPath> inputs,
                               llvm::ArrayRef<NamedPath> outputs) {
  struct Seen {
    const NamedPath *path;
    Identity identity;
    bool input;
  };
  std::vector<Seen> seen;
  for (const NamedPath &input : inputs)
    seen.push_back({&input, identify(input.path), true});
  // Each output against every input and every earlier output; inputs may
  // well be one file (reading twice destroys nothing).
  for (const NamedPath &output : outputs) {
    Identity identity = identify(output.path);
    for (const Seen &other : seen)
      if (identity.sameAs(other.identity))
        return llvm::createStringError(
            std::make_error_code(std::errc::invalid_argument),
            "%s '%s' is the same file as %s '%s': writing it would destroy "
            "the %s; give another path",
            output.what.c_str(), output.path.c_str(), other.path->what.c_str(),
            other.path->path.c_str(), other.input ? "input" : "other output");
    seen.push_back({&output, std::move(identity), false});
  }
  return llvm::Error::success();
}

bool isDirectlyInside(llvm::StringRef p, llvm::StringRef dir) {
  if (p.empty() || p == "-" || dir.empty())
    return false;
  return folderOf(p) == canonicalFolder(dir);
}

bool isSameFile(llvm::StringRef p, llvm::StringRef other) {
  return identify(p).sameAs(identify(other));
}

} // namespace tfc
