//===- TfcOps.h - tfc dialect operations ------------------------*- C++ -*-===//
#ifndef TFC_DIALECTS_TFC_TFCOPS_H
#define TFC_DIALECTS_TFC_TFCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/tfc/TfcDialect.h"
#include "dialects/tfc/TfcShapes.h"

#include "dialects/tfc/TfcEnums.h.inc"
#include "dialects/tfc/TfcInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tfc/TfcAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/tfc/TfcOps.h.inc"

namespace tfc {
/// Ops whose result element i depends only on element i of each operand
/// (broadcast): the arithmetic, math and activation ops and tfc.cast. Fusion
/// chains them into one loop; a kernel of one may write over an operand.
bool isElementwise(mlir::Operation *op);
} // namespace tfc

#endif // TFC_DIALECTS_TFC_TFCOPS_H
