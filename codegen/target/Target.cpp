//===- Target.cpp - the registry of targets -------------------------------===//
#include "codegen/target/Target.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"
#include <algorithm>
#include <mutex>

namespace tfc {

Target::~Target() = default;

bool hasOperandLikeResult(mlir::Operation *op) {
  auto bytes = [](mlir::ShapedType t) {
    return (t.getElementTypeBitWidth() + 7) / 8;
  };
  for (mlir::Type r : op->getResultTypes())
    for (mlir::Type o : op->getOperandTypes()) {
      auto rs = llvm::dyn_cast<mlir::ShapedType>(r);
      auto os = llvm::dyn_cast<mlir::ShapedType>(o);
      if (rs && os && rs.getShape() == os.getShape() && bytes(rs) == bytes(os))
        return true;
    }
  return false;
}

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
