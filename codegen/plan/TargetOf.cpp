//===- TargetOf.cpp - the target a planned module is for ------------------===//
#include "codegen/plan/Passes.h"

#include "codegen/target/Target.h"
#include "dialects/tfc/AttrNames.h"

namespace tfc::plan {

const Target *targetOf(mlir::ModuleOp module, llvm::StringRef fallback) {
  llvm::StringRef name = fallback;
  if (auto attr = module->getAttrOfType<mlir::StringAttr>(attr::kTarget))
    name = attr.getValue();
  const Target *target = lookupTarget(name);
  if (!target)
    module.emitError("unknown target '")
        << name << "' (this build knows " << listTargets() << ")";
  return target;
}

} // namespace tfc::plan
