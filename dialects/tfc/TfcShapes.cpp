//===- TfcShapes.cpp - shape helpers ---------------------------------------===//
#include "dialects/tfc/TfcShapes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc {

bool isValidTensorShape(mlir::Type type) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!tensor)
    return false;
  for (int64_t d : tensor.getShape())
    if (mlir::ShapedType::isDynamic(d) || d < 1)
      return false;
  return true;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  auto b = broadcastShapes(from, to);
  return b && llvm::ArrayRef<int64_t>(*b) == to;
}

std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= rank)
    return std::nullopt;
  return dim < 0 ? dim + rank : dim;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace tfc
