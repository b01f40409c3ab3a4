//===- TfcDialect.cpp - the tfc dialect -----------------------------------===//
#include "dialects/tfc/TfcDialect.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tfc;

#include "dialects/tfc/TfcDialect.cpp.inc"
#include "dialects/tfc/TfcEnums.cpp.inc"
#include "dialects/tfc/TfcInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tfc/TfcAttrs.cpp.inc"

void TFCDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/tfc/TfcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/tfc/TfcOps.cpp.inc"
      >();
}

Operation *TFCDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}
