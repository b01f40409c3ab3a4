//===- TfcDialect.h - the tfc dialect ---------------------------*- C++ -*-===//
#ifndef TFC_DIALECTS_TFC_TFCDIALECT_H
#define TFC_DIALECTS_TFC_TFCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/tfc/TfcDialect.h.inc"

#endif // TFC_DIALECTS_TFC_TFCDIALECT_H
