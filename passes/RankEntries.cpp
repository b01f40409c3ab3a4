//===- RankEntries.cpp - entries that each run on one rank ----------------===//
#include "passes/RankEntries.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace mlir;

namespace tfc {

RankEntryMetadata rankEntryMetadata(ModuleOp module,
                                    llvm::ArrayRef<func::FuncOp> entries,
                                    std::map<std::string, int64_t> owner) {
  std::map<std::string, std::set<int64_t>> touchedBy;
  for (auto [r, entry] : llvm::enumerate(entries)) {
    func::FuncOp f = entry;
    SmallVector<Operation *> body;
    f.walk([&](Operation *op) { body.push_back(op); });
    for (Operation *op : llvm::reverse(body))
      if (isOpTriviallyDead(op))
        op->erase();
    f.walk([&, r = static_cast<int64_t>(r)](Operation *op) {
      if (auto load = llvm::dyn_cast<LoadOp>(op))
        touchedBy[load.getName().str()].insert(r);
      else if (auto store = llvm::dyn_cast<StoreOp>(op))
        touchedBy[store.getName().str()].insert(r);
    });
  }
  RankEntryMetadata out;
  out.held = "{";
  for (Operation &op : module.getBody()->getOperations()) {
    StringRef name;
    if (auto param = llvm::dyn_cast<ParamOp>(op))
      name = param.getSymName();
    else if (auto state = llvm::dyn_cast<StateOp>(op))
      name = state.getSymName();
    else
      continue;
    std::set<int64_t> ranks = touchedBy[name.str()];
    if (ranks.empty())
      ranks.insert(0);
    if (ranks.size() == entries.size())
      continue;
    // A tensor that its ranks only read (never stored) is current on each
    // of them: checkpoints take it from the first.
    owner.try_emplace(name.str(), *ranks.begin());
    std::string list;
    for (int64_t r : ranks)
      list += (list.empty() ? "" : ", ") + std::to_string(r);
    out.held += (out.held.size() > 1 ? ", \"" : "\"") + name.str() + "\": [" +
                list + "]";
  }
  out.held += "}";
  out.owners = "{";
  for (auto [name, r] : owner)
    out.owners += (out.owners.size() > 1 ? ", \"" : "\"") + name +
                  "\": " + std::to_string(r);
  out.owners += "}";
  return out;
}

} // namespace tfc
