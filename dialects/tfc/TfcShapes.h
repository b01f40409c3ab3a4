//===- TfcShapes.h - shape helpers shared by verifiers and tools -*- C++ -*-===//
//
// Small, dependency-light helpers: validity of a tensor type, NumPy
// broadcasting, dimension normalization, and printing a shape as "[2, 3]" for
// diagnostics. Kept free of op classes so that the frontend can use them too.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_DIALECTS_TFC_TFCSHAPES_H
#define TFC_DIALECTS_TFC_TFCSHAPES_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace tfc {

/// True for a ranked tensor whose every dimension is static and >= 1.
bool isValidTensorShape(mlir::Type type);

/// "[2, 3, 4]" (or "[]" for a scalar).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The NumPy broadcast of two shapes, or nullopt when a pair of dimensions
/// differs and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// True when `from` broadcasts to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// Maps a possibly negative dimension index into [0, rank); nullopt when out
/// of range.
std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank);

/// Product of the dimensions.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

} // namespace tfc

#endif // TFC_DIALECTS_TFC_TFCSHAPES_H
