//===- Target.cpp - the registry of targets -------------------------------===//
#include "codegen/target/Target.h"

#include "llvm/ADT/StringMap.h"
#include <algorithm>
#include <mutex>

namespace tfc {

Target::~Target() = default;

namespace {
struct Registry {
  std::mutex mutex;
  llvm::StringMap<std::unique_ptr<Target>> targets;
};
Registry &registry() {
  static Registry instance;
  return instance;
}
} // namespace

void registerTarget(std::unique_ptr<Target> target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = target->name().str();
  r.targets.try_emplace(name, std::move(target));
}

const Target *lookupTarget(llvm::StringRef name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.targets.find(name);
  return it == r.targets.end() ? nullptr : it->second.get();
}

std::vector<std::string> registeredTargetNames() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (auto &entry : r.targets)
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

std::string listTargets() {
  std::string list;
  for (const std::string &name : registeredTargetNames())
    list += (list.empty() ? "" : ", ") + name;
  return list.empty() ? "none" : list;
}

} // namespace tfc
