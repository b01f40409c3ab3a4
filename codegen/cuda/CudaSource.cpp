//===- CudaSource.cpp - CUDA C++ for the kernels of the planned program ---===//
//
// Families so far (data movement and the KV cache further down):
//   pointwise  elementwise ops, casts, broadcast_to and tfc.fused "pointwise"
//              groups: one thread per output element, operands read through
//              NumPy broadcasting, the body printed from codegen/scalar;
//   reduction  reduce_sum, reduce_mean, reduce_max: one thread per output
//              element, accumulating in f32 (integers in their own type);
//   row        softmax, log_softmax (any dimension), layer_norm, rms_norm
//              (the last dimension), the formulas of the CPU's RowKernels.cpp:
//              along the last dimension one warp a row (kernels/row.cuh),
//              along another one thread a line;
//   products   matmul and linear: on tensor cores for 16-bit operands
//              (kernels/gemm.cuh), one thread an output otherwise.
// The rest is correct-first (one thread an element, line or output); its
// tiled, warp-cooperative versions come with measurements on a GPU.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaSource.h"

#include "codegen/artifact/AbiTypes.h"
#include "codegen/scalar/ScalarOps.h"
#include "dialects/tfc/TfcOps.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

using namespace mlir;

namespace tfc::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Types and buffers
//===----------------------------------------------------------------------===//

/// The C type a buffer element is stored as, or "" when the CUDA target has
/// no support for it yet.
std::string storageType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isBF16())
    return "unsigned short"; // the 16 bits; tfc_bf16_to_f32 on load
  if (t.isF16())
    return "tfc_f16"; // the 16 bits, a type of its own; tfc_f16_to_f32 on load
  if (t.isInteger(32))
    return "int";
  if (t.isInteger(64))
    return "long long";
  return "";
}

/// The C type a scalar of MLIR type `t` is computed in: every float is a
/// float (a bf16 value is a float that bf16 represents exactly).
std::string computeCType(Type t) {
  if (llvm::isa<FloatType>(t))
    return "float";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(32))
    return "int";
  if (t.isInteger(64) || t.isIndex())
    return "long long";
  return "";
}

/// `expr` (a value of element type `t` as stored) as a computed scalar.
std::string load(Type t, const std::string &expr) {
  if (t.isBF16())
    return "tfc_bf16_to_f32(" + expr + ")";
  if (t.isF16())
    return "tfc_f16_to_f32(" + expr + ")";
  return expr;
}

/// A computed scalar `expr` as element type `t` is stored.
std::string store(Type t, const std::string &expr) {
  if (t.isBF16())
    return "tfc_f32_to_bf16(" + expr + ")";
  if (t.isF16())
    return "tfc_f32_to_f16(" + expr + ")";
  return expr;
}

LogicalResult checkTypes(Operation *op, ArrayRef<MemRefType> types) {
  for (MemRefType t : types)
    if (storageType(t.getElementType()).empty())
      return op->emitError("CUDA codegen: element type ")
             << t.getElementType() << " of '" << op->getName()
             << "' is not supported yet (f32, bf16, f16, i32 and i64 are)";
  return success();
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Scalar arith/math -> C
//===----------------------------------------------------------------------===//

std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "__int_as_float(0x7fc00000)";
  if (std::isinf(v))
    return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = llvm::formatv("{0:e9}", v).str();
  return s + "f";
}

/// Prints the ops of a block of scalar arith/math (what codegen/scalar
/// builds) as C statements, one variable per value.
class ScalarPrinter {
public:
  ScalarPrinter(llvm::raw_ostream &os, std::string indent)
      : os(os), indent(std::move(indent)) {}

  void bind(Value v, std::string name) { names[v] = std::move(name); }
  std::string nameOf(Value v) const { return names.lookup(v); }

  /// Prints every op of `block`; fails on an op without a C form, reported
  /// at `anchor` (the tfc op the kernel computes).
  LogicalResult print(Block &block, Operation *anchor);

private:
  std::string binary(Operation *op, StringRef infix) {
    return "(" + nameOf(op->getOperand(0)) + " " + infix.str() + " " +
           nameOf(op->getOperand(1)) + ")";
  }
  std::string call(StringRef fn, Operation *op) {
    std::string s = fn.str() + "(";
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      s += (i ? ", " : "") + nameOf(v);
    return s + ")";
  }
  std::optional<std::string> expression(Operation *op);

  llvm::raw_ostream &os;
  std::string indent;
  DenseMap<Value, std::string> names;
  int next = 0;
};

std::optional<std::string> ScalarPrinter::expression(Operation *op) {
  using arith::CmpFPredicate;
  using arith::CmpIPredicate;
  auto cmpf = [&](arith::CmpFOp c) -> std::optional<std::string> {
    std::string a = nameOf(c.getLhs()), b = nameOf(c.getRhs());
    switch (c.getPredicate()) {
    case CmpFPredicate::OEQ: return "(" + a + " == " + b + ")";
    case CmpFPredicate::OGT: return "(" + a + " > " + b + ")";
    case CmpFPredicate::OGE: return "(" + a + " >= " + b + ")";
    case CmpFPredicate::OLT: return "(" + a + " < " + b + ")";
    case CmpFPredicate::OLE: return "(" + a + " <= " + b + ")";
    case CmpFPredicate::ONE: return "(" + a + " < " + b + " || " + a + " > " + b + ")";
    case CmpFPredicate::UNE: return "(" + a + " != " + b + ")";
    case CmpFPredicate::UGT: return "!(" + a + " <= " + b + ")";
    case CmpFPredicate::UGE: return "!(" + a + " < " + b + ")";
    case CmpFPredicate::ULT: return "!(" + a + " >= " + b + ")";
    case CmpFPredicate::ULE: return "!(" + a + " > " + b + ")";
    case CmpFPredicate::UEQ: return "!(" + a + " < " + b + " || " + a + " > " + b + ")";
    case CmpFPredicate::ORD: return "(" + a + " == " + a + " && " + b + " == " + b + ")";
    case CmpFPredicate::UNO: return "(" + a + " != " + a + " || " + b + " != " + b + ")";
    case CmpFPredicate::AlwaysTrue: return std::string("true");
    case CmpFPredicate::AlwaysFalse: return std::string("false");
    }
    return std::nullopt;
  };
  auto cmpi = [&](arith::CmpIOp c) -> std::optional<std::string> {
    std::string a = nameOf(c.getLhs()), b = nameOf(c.getRhs());
    switch (c.getPredicate()) {
    case CmpIPredicate::eq: return "(" + a + " == " + b + ")";
    case CmpIPredicate::ne: return "(" + a + " != " + b + ")";
    case CmpIPredicate::slt: return "(" + a + " < " + b + ")";
    case CmpIPredicate::sle: return "(" + a + " <= " + b + ")";
    case CmpIPredicate::sgt: return "(" + a + " > " + b + ")";
    case CmpIPredicate::sge: return "(" + a + " >= " + b + ")";
    default: return std::nullopt; // unsigned comparisons: not produced
    }
  };
  Type resultType = op->getNumResults() ? op->getResult(0).getType() : Type();
  return llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case([&](arith::ConstantOp c) -> std::optional<std::string> {
        if (auto f = llvm::dyn_cast<FloatAttr>(c.getValue()))
          return floatLiteral(f.getValueAsDouble());
        if (auto i = llvm::dyn_cast<IntegerAttr>(c.getValue())) {
          if (resultType.isInteger(1))
            return std::string(i.getValue().isZero() ? "false" : "true");
          std::string v = std::to_string(i.getValue().getSExtValue());
          return resultType.isInteger(32) ? v : v + "LL";
        }
        return std::nullopt;
      })
      .Case([&](arith::AddFOp) { return binary(op, "+"); })
      .Case([&](arith::SubFOp) { return binary(op, "-"); })
      .Case([&](arith::MulFOp) { return binary(op, "*"); })
      .Case([&](arith::DivFOp) { return binary(op, "/"); })
      .Case([&](arith::NegFOp n) { return "(-" + nameOf(n.getOperand()) + ")"; })
      .Case([&](arith::MaximumFOp) { return call("tfc_maximumf", op); })
      .Case([&](arith::MinimumFOp) { return call("tfc_minimumf", op); })
      .Case([&](arith::AddIOp) { return binary(op, "+"); })
      .Case([&](arith::SubIOp) { return binary(op, "-"); })
      .Case([&](arith::MulIOp) { return binary(op, "*"); })
      .Case([&](arith::DivSIOp) { return binary(op, "/"); })
      .Case([&](arith::RemSIOp) { return binary(op, "%"); })
      .Case([&](arith::MaxSIOp) { return call("max", op); })
      .Case([&](arith::MinSIOp) { return call("min", op); })
      .Case([&](arith::CmpFOp c) { return cmpf(c); })
      .Case([&](arith::CmpIOp c) { return cmpi(c); })
      .Case([&](arith::SelectOp s) {
        return "(" + nameOf(s.getCondition()) + " ? " +
               nameOf(s.getTrueValue()) + " : " + nameOf(s.getFalseValue()) +
               ")";
      })
      .Case([&](arith::ExtFOp e) -> std::optional<std::string> {
        // Every float is computed as a float: widening is exact.
        return nameOf(e.getIn());
      })
      .Case([&](arith::TruncFOp t) -> std::optional<std::string> {
        if (resultType.isBF16())
          return "tfc_round_bf16(" + nameOf(t.getIn()) + ")";
        if (resultType.isF16())
          return "tfc_round_f16(" + nameOf(t.getIn()) + ")";
        if (resultType.isF32())
          return nameOf(t.getIn());
        return std::nullopt;
      })
      .Case([&](arith::SIToFPOp s) { return "((float)" + nameOf(s.getIn()) + ")"; })
      .Case([&](arith::FPToSIOp f) -> std::optional<std::string> {
        std::string c = computeCType(resultType);
        if (c.empty())
          return std::nullopt;
        return "((" + c + ")" + nameOf(f.getIn()) + ")";
      })
      .Case([&](arith::ExtSIOp e) { return "((long long)" + nameOf(e.getIn()) + ")"; })
      .Case([&](arith::TruncIOp t) -> std::optional<std::string> {
        std::string c = computeCType(resultType);
        if (c.empty())
          return std::nullopt;
        return "((" + c + ")" + nameOf(t.getIn()) + ")";
      })
      .Case([&](math::ExpOp) { return call("expf", op); })
      .Case([&](math::LogOp) { return call("logf", op); })
      .Case([&](math::SqrtOp) { return call("sqrtf", op); })
      .Case([&](math::TanhOp) { return call("tanhf", op); })
      .Case([&](math::SinOp) { return call("sinf", op); })
      .Case([&](math::CosOp) { return call("cosf", op); })
      .Case([&](math::ErfOp) { return call("erff", op); })
      .Case([&](math::AbsFOp) { return call("fabsf", op); })
      .Case([&](math::PowFOp) { return call("powf", op); })
      .Case([&](math::FmaOp) { return call("fmaf", op); })
      .Case([&](math::IPowIOp) {
        return resultType.isInteger(32) ? call("tfc_ipow_i32", op)
                                        : call("tfc_ipow_i64", op);
      })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult ScalarPrinter::print(Block &block, Operation *anchor) {
  for (Operation &op : block) {
    std::optional<std::string> expr = expression(&op);
    std::string type =
        op.getNumResults() == 1 ? computeCType(op.getResult(0).getType()) : "";
    if (!expr || type.empty())
      return anchor->emitError("CUDA codegen: no CUDA C for '")
             << op.getName() << "' (in the scalar body of '"
             << anchor->getName() << "')";
    std::string name = "v" + std::to_string(next++);
    os << indent << "const " << type << " " << name << " = " << *expr
       << ";\n";
    names[op.getResult(0)] = name;
  }
  return success();
}

/// A scratch block for scalar code, erased with everything in it.
struct ScratchBlock {
  ScratchBlock() : block(std::make_unique<Block>()) {}
  ~ScratchBlock() {
    for (Operation &op : llvm::reverse(*block))
      op.dropAllUses();
    while (!block->empty())
      block->back().erase();
  }
  std::unique_ptr<Block> block;
};

//===----------------------------------------------------------------------===//
// Kernel text
//===----------------------------------------------------------------------===//

/// The signature: const inputs, then outputs. No __restrict__: a pointwise
/// result may be written over an operand (tfc.in_place_ok).
std::string signature(StringRef name, ArrayRef<MemRefType> operands,
                      ArrayRef<MemRefType> results) {
  std::string s = "extern \"C\" __global__ void " + name.str() + "(";
  for (auto [i, t] : llvm::enumerate(operands))
    s += (i ? ", " : "") + ("const " + storageType(t.getElementType()) +
                            "* in" + std::to_string(i));
  for (auto [i, t] : llvm::enumerate(results))
    s += (operands.empty() && i == 0 ? "" : ", ") +
         (storageType(t.getElementType()) + "* out" + std::to_string(i));
  return s + ")";
}

constexpr llvm::StringLiteral kGridStride =
    "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
    "i < n; i += (long long)gridDim.x * blockDim.x) {\n";

/// Declares c0..c{rank-1}: the coordinates of flat index `i` in `shape`.
void declareCoords(llvm::raw_ostream &os, ArrayRef<int64_t> shape) {
  os << "    long long rest = i;\n";
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d)
    os << "    const long long c" << d << " = rest % " << shape[d]
       << "LL; rest /= " << shape[d] << "LL;\n";
}

/// sum_d coords[d] * strides[d], of C expressions.
std::string offsetOf(ArrayRef<std::string> coords, ArrayRef<int64_t> strides) {
  std::string expr;
  for (auto [c, stride] : llvm::zip(coords, strides))
    expr += (expr.empty() ? "" : " + ") + ("(" + c + ") * " +
                                            std::to_string(stride) + "LL");
  return expr.empty() ? "0" : expr;
}

/// Declares c0..c{rank-1} of the output index when some operand needs them; returns for each operand the expression of its
/// flat offset under NumPy broadcasting.
SmallVector<std::string> broadcastOffsets(llvm::raw_ostream &os,
                                          ArrayRef<int64_t> space,
                                          ArrayRef<MemRefType> operands) {
  SmallVector<std::string> offsets;
  bool needCoords = false;
  for (MemRefType t : operands)
    needCoords |= t.getShape() != space && t.getNumElements() != 1;
  if (needCoords)
    declareCoords(os, space);
  for (MemRefType t : operands) {
    if (t.getShape() == space) {
      offsets.push_back("i");
      continue;
    }
    if (t.getNumElements() == 1) {
      offsets.push_back("0");
      continue;
    }
    ArrayRef<int64_t> shape = t.getShape();
    SmallVector<int64_t> strides = stridesOf(shape);
    size_t lead = space.size() - shape.size();
    std::string expr;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1)
        continue;
      expr += (expr.empty() ? "" : " + ") + ("c" + std::to_string(lead + d)) +
              " * " + std::to_string(strides[d]) + "LL";
    }
    offsets.push_back(expr.empty() ? "0" : expr);
  }
  return offsets;
}

/// Pointwise kernels: `body` computes the results' scalars from the
/// operands' scalars (loaded broadcast, in the compute type unless `raw`).
using ScalarBody = llvm::function_ref<FailureOr<SmallVector<Value>>(
    OpBuilder &, Location, ValueRange)>;

FailureOr<KernelSource> emitPointwise(StringRef name, Operation *op,
                                      ArrayRef<MemRefType> operands,
                                      ArrayRef<MemRefType> results, bool raw,
                                      ScalarBody body) {
  ArrayRef<int64_t> space = results.front().getShape();
  int64_t n = numElements(space);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  os << "  const long long n = " << n << "LL;\n" << kGridStride;
  SmallVector<std::string> offsets = broadcastOffsets(os, space, operands);

  ScratchBlock scratch;
  // A detached block has no context of its own: the builder takes the op's.
  OpBuilder b(op->getContext());
  b.setInsertionPointToStart(scratch.block.get());
  Location loc = op->getLoc();
  ScalarPrinter printer(os, "    ");
  SmallVector<Value> args;
  for (auto [i, t] : llvm::enumerate(operands)) {
    Type elem = t.getElementType();
    Value arg = scratch.block->addArgument(
        raw ? elem : scalar::computeType(elem), loc);
    std::string var = "a" + std::to_string(i);
    os << "    const " << computeCType(elem) << " " << var << " = "
       << load(elem, "in" + std::to_string(i) + "[" + offsets[i] + "]")
       << ";\n";
    printer.bind(arg, var);
    args.push_back(arg);
  }
  FailureOr<SmallVector<Value>> values = body(b, loc, args);
  if (failed(values))
    return failure();
  if (failed(printer.print(*scratch.block, op)))
    return failure();
  for (auto [i, v] : llvm::enumerate(*values))
    os << "    out" << i << "[i] = "
       << store(results[i].getElementType(), printer.nameOf(v)) << ";\n";
  os << "  }\n}\n";
  return KernelSource{text, n};
}

//===----------------------------------------------------------------------===//
// Reductions and rows
//===----------------------------------------------------------------------===//

/// A row kernel of kernels/row.cuh: one warp a row, 8 rows a block.
KernelSource warpRowKernel(std::string text, int64_t rows) {
  KernelSource source{std::move(text), rows};
  source.launch = KernelSource::Shape{{(rows + 7) / 8, 1, 1}, {32, 8, 1}, 0};
  return source;
}

FailureOr<KernelSource> emitReduce(StringRef name, Operation *op,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results,
                                   StringRef kind, ArrayRef<int64_t> dims) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t rank = shape.size();
  SmallVector<bool> reduced(rank, false);
  for (int64_t d : dims)
    reduced[d < 0 ? d + rank : d] = true;
  SmallVector<int64_t> strides = stridesOf(shape);
  int64_t outN = results[0].getNumElements(), count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      count *= shape[d];
  Type elem = operands[0].getElementType();
  bool isFloat = llvm::isa<FloatType>(elem);
  std::string acc = isFloat ? "float" : computeCType(elem);

  // Float reductions over one contiguous block of dimensions, [O, R, I] ->
  // [O, I]: kernels/reduce.cuh, a warp an output or a block per 32 columns.
  int64_t first = rank, last = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      first = std::min(first, d);
      last = d;
    }
  bool contiguous =
      last >= 0 && last - first + 1 == llvm::count(reduced, true);
  if (isFloat && llvm::isa<FloatType>(results[0].getElementType()) &&
      contiguous && count > 0) {
    int64_t inner = numElements(shape.drop_front(last + 1));
    std::string kindName = kind == "sum"    ? "kTfcReduceSum"
                           : kind == "mean" ? "kTfcReduceMean"
                                            : "kTfcReduceMax";
    std::string text;
    llvm::raw_string_ostream os(text);
    os << signature(name, operands, results) << " {\n";
    if (inner == 1) {
      os << "  tfc_reduce_rows<" << kindName << ">(in0, out0, " << outN
         << "LL, " << count << "LL);\n}\n";
      return warpRowKernel(text, outN);
    }
    int64_t blocks = (outN / inner) * ((inner + 31) / 32);
    os << "  tfc_reduce_columns<" << kindName << ">(in0, out0, " << count
       << "LL, " << inner << "LL);\n}\n";
    KernelSource source{text, outN};
    // block.y: reduce.cuh's kTfcReduceWarps.
    source.launch = KernelSource::Shape{{blocks, 1, 1}, {32, 32, 1}, 0};
    return source;
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  os << "  const long long n = " << outN << "LL;\n" << kGridStride;
  // The kept coordinates, from the output index (kept dims in order).
  os << "    long long rest = i;\n    long long base = 0;\n";
  for (int64_t d = rank - 1; d >= 0; --d)
    if (!reduced[d])
      os << "    base += (rest % " << shape[d] << "LL) * " << strides[d]
         << "LL; rest /= " << shape[d] << "LL;\n";
  std::string init = kind == "max" ? (isFloat ? "-__int_as_float(0x7f800000)"
                                              : "(" + acc + ")(-1LL << 62)")
                                   : "0";
  os << "    " << acc << " acc = " << init << ";\n";
  os << "    for (long long r = 0; r < " << count << "LL; ++r) {\n";
  os << "      long long rr = r, off = base;\n";
  for (int64_t d = rank - 1; d >= 0; --d)
    if (reduced[d])
      os << "      off += (rr % " << shape[d] << "LL) * " << strides[d]
         << "LL; rr /= " << shape[d] << "LL;\n";
  std::string x = load(elem, "in0[off]");
  if (kind == "max")
    os << "      acc = " << (isFloat ? "tfc_maximumf(acc, " + x + ")"
                                     : "max(acc, " + x + ")")
       << ";\n";
  else
    os << "      acc += " << x << ";\n";
  os << "    }\n";
  if (kind == "mean")
    os << "    acc = acc / (" << acc << ")" << count << ";\n";
  os << "    out0[i] = " << store(results[0].getElementType(), "acc")
     << ";\n  }\n}\n";
  KernelSource source{text, outN};
  source.fallback = !isFloat ? "integer elements (kernels/reduce.cuh sums floats)"
                    : count == 0 ? "nothing to reduce"
                                 : "the reduced dimensions are not one contiguous block";
  return source;
}

/// softmax / log_softmax along `dim`: lines of `size` elements `inner` apart.
/// Along the last dimension (rows), one warp a row (tfc_softmax_rows);
/// otherwise one thread a line.
FailureOr<KernelSource> emitSoftmax(StringRef name, Operation *op,
                                    ArrayRef<MemRefType> operands,
                                    ArrayRef<MemRefType> results, int64_t dim,
                                    bool log) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t rank = shape.size();
  if (dim < 0)
    dim += rank;
  int64_t size = shape[dim], inner = 1, outer = 1;
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= shape[d];
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  Type in = operands[0].getElementType(), out = results[0].getElementType();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  if (inner == 1) {
    os << "  tfc_softmax_rows<" << (log ? "true" : "false") << ">(in0, out0, "
       << outer << "LL, " << size << "LL);\n}\n";
    return warpRowKernel(text, outer);
  }
  os << "  const long long n = " << outer * inner << "LL;\n" << kGridStride;
  os << "    const long long base = (i / " << inner << "LL) * " << size * inner
     << "LL + i % " << inner << "LL;\n";
  auto x = [&](StringRef j) {
    return load(in, ("in0[base + " + j + " * " + std::to_string(inner) +
                     "LL]").str());
  };
  os << "    float m = -__int_as_float(0x7f800000);\n"
     << "    for (long long j = 0; j < " << size << "LL; ++j) m = "
     << "tfc_maximumf(m, " << x("j") << ");\n"
     << "    float s = 0.0f;\n"
     << "    for (long long j = 0; j < " << size << "LL; ++j) s += expf("
     << x("j") << " - m);\n";
  std::string value = log ? "(" + x("j") + " - m) - logf(s)"
                          : "expf(" + x("j") + " - m) / s";
  os << "    for (long long j = 0; j < " << size << "LL; ++j) out0[base + j * "
     << inner << "LL] = " << store(out, value) << ";\n  }\n}\n";
  KernelSource source{text, outer * inner};
  source.fallback = "along dimension " + std::to_string(dim) +
                    ", not the last (a warp a row takes contiguous rows)";
  return source;
}

/// layer_norm (center) and rms_norm over the last dimension; operands x,
/// then the optional weight and bias. One warp a row (tfc_norm_rows).
FailureOr<KernelSource> emitNorm(StringRef name, Operation *op,
                                 ArrayRef<MemRefType> operands,
                                 ArrayRef<MemRefType> results, bool center,
                                 double eps, bool hasWeight, bool hasBias) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t size = shape.back(), rows = operands[0].getNumElements() / size;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  unsigned next = 1;
  std::string weight = hasWeight ? "in" + std::to_string(next++) : "(const float*)0";
  std::string bias = hasBias ? "in" + std::to_string(next++) : "(const float*)0";
  os << "  tfc_norm_rows<" << (center ? "true" : "false") << ">(in0, out0, "
     << weight << ", " << bias << ", " << rows << "LL, " << size << "LL, "
     << floatLiteral(eps) << ");\n}\n";
  return warpRowKernel(text, rows);
}


//===----------------------------------------------------------------------===//
// Data movement: every output element is one input element (or a value of
// its index); one thread per output element.
//===----------------------------------------------------------------------===//

/// The kernel's opening: the grid-stride loop over `n` output elements with
/// the coordinates c0.. of `i` in `shape`.
void openGather(llvm::raw_ostream &os, StringRef name,
                ArrayRef<MemRefType> operands, ArrayRef<MemRefType> results,
                ArrayRef<int64_t> shape) {
  os << signature(name, operands, results) << " {\n";
  os << "  const long long n = " << numElements(shape) << "LL;\n"
     << kGridStride;
  declareCoords(os, shape);
}

SmallVector<std::string> coordNames(int64_t rank) {
  SmallVector<std::string> names;
  for (int64_t d = 0; d < rank; ++d)
    names.push_back("c" + std::to_string(d));
  return names;
}

/// out[i] = in0[offset]: the same element type, copied as stored.
FailureOr<KernelSource> emitGather(StringRef name,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results,
                                   llvm::function_ref<std::string()> offset,
                                   StringRef prologue = "") {
  ArrayRef<int64_t> shape = results[0].getShape();
  std::string text;
  llvm::raw_string_ostream os(text);
  openGather(os, name, operands, results, shape);
  os << prologue;
  os << "    out0[i] = in0[" << offset() << "];\n  }\n}\n";
  return KernelSource{text, numElements(shape)};
}

FailureOr<KernelSource> emitDataMovement(StringRef name, Operation *op,
                                         ArrayRef<MemRefType> operands,
                                         ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> outShape = results[0].getShape();
  int64_t rank = outShape.size();
  SmallVector<std::string> c = coordNames(rank);
  if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
    // Output dim k is input dim perm[k].
    SmallVector<int64_t> inStrides = stridesOf(operands[0].getShape()), s;
    for (int64_t p : t.getPerm())
      s.push_back(inStrides[p]);
    return emitGather(name, operands, results,
                      [&] { return offsetOf(c, s); });
  }
  if (auto sl = llvm::dyn_cast<SliceOp>(op)) {
    SmallVector<std::string> in;
    for (int64_t d = 0; d < rank; ++d)
      in.push_back(std::to_string(sl.getStart()[d]) + "LL + c" +
                   std::to_string(d) + " * " +
                   std::to_string(sl.getStride()[d]) + "LL");
    return emitGather(name, operands, results, [&] {
      return offsetOf(in, stridesOf(operands[0].getShape()));
    });
  }
  if (auto ds = llvm::dyn_cast<DynamicSliceOp>(op)) {
    // The start is clamped to [0, size - length], as XLA does.
    int64_t dim = ds.getDim() < 0 ? ds.getDim() + rank : ds.getDim();
    int64_t size = operands[0].getShape()[dim], length = outShape[dim];
    std::string prologue =
        "    long long start = in1[0];\n"
        "    start = start < 0 ? 0 : (start > " + std::to_string(size - length) +
        "LL ? " + std::to_string(size - length) + "LL : start);\n";
    SmallVector<std::string> in(c);
    in[dim] = "start + c" + std::to_string(dim);
    return emitGather(name, operands, results,
                      [&] { return offsetOf(in, stridesOf(operands[0].getShape())); },
                      prologue);
  }
  if (auto iota = llvm::dyn_cast<IotaOp>(op)) {
    int64_t dim = iota.getDim() < 0 ? iota.getDim() + rank : iota.getDim();
    Type elem = results[0].getElementType();
    std::string text;
    llvm::raw_string_ostream os(text);
    openGather(os, name, operands, results, outShape);
    std::string value = llvm::isa<FloatType>(elem)
                            ? "(float)c" + std::to_string(dim)
                            : "(" + storageType(elem) + ")c" +
                                  std::to_string(dim);
    os << "    out0[i] = " << store(elem, value) << ";\n  }\n}\n";
    return KernelSource{text, numElements(outShape)};
  }
  if (auto concat = llvm::dyn_cast<ConcatOp>(op)) {
    int64_t dim = concat.getDim() < 0 ? concat.getDim() + rank : concat.getDim();
    std::string text;
    llvm::raw_string_ostream os(text);
    openGather(os, name, operands, results, outShape);
    int64_t begin = 0;
    for (auto [k, t] : llvm::enumerate(operands)) {
      int64_t end = begin + t.getShape()[dim];
      SmallVector<std::string> in(c);
      in[dim] = "c" + std::to_string(dim) + " - " + std::to_string(begin) + "LL";
      os << "    " << (k ? "else " : "") << "if (c" << dim << " < " << end
         << "LL) out0[i] = in" << k << "["
         << offsetOf(in, stridesOf(t.getShape())) << "];\n";
      begin = end;
    }
    os << "  }\n}\n";
    return KernelSource{text, numElements(outShape)};
  }
  if (llvm::isa<EmbeddingOp>(op)) {
    // Rows of the table by id; an id outside [0, V) reads nothing, writes 0
    // and reports (what the CPU's kernel reports as a run-time error).
    int64_t rows = operands[0].getShape()[0], width = outShape.back();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << signature(name, operands, results) << " {\n";
    os << "  const long long n = " << numElements(outShape) << "LL;\n"
       << kGridStride;
    os << "    const long long id = in1[i / " << width << "LL];\n"
       << "    if (id < 0 || id >= " << rows << "LL) {\n"
       << "      tfc_report(TFC_KERNEL_ERROR_EMBEDDING_ID);\n"
       << "      out0[i] = " << store(results[0].getElementType(), "0.0f")
       << ";\n"
       << "    } else {\n"
       << "      out0[i] = in0[id * " << width << "LL + i % " << width
       << "LL];\n    }\n  }\n}\n";
    return KernelSource{text, numElements(outShape)};
  }
  return failure();
}

//===----------------------------------------------------------------------===//
// Matrix products, a block per 64x64 tile of the result and per batch (on
// grid.z), the bias and the result's type in the epilogue. Operands of one
// 16-bit type (bf16 or f16) run on tensor cores (kernels/gemm.cuh's
// tfc_gemm_tc_64x64, f32 accumulation); any other types on the CUDA cores in
// exact f32 (tfc_gemm_simt_64x64: each output fmaf over k in order, the same
// bits as one thread per output). More batches than grid.z takes fall back to
// one thread per output element.
//===----------------------------------------------------------------------===//

/// The largest grid.y or grid.z a launch may have (CUDA's limit; grid.x goes
/// to 2^31 - 1): a tiled kernel that would need more takes the SIMT one.
constexpr int64_t kMaxGridYZ = 65535;

/// Why a product takes the one-thread-an-output kernel.
constexpr llvm::StringLiteral kTooManyTiles =
    "more 64x64 tiles or batches than grid.y and grid.z hold (65535)";

/// Products of at most this many rows (a decode step's tokens) run as a GEMV
/// (kernels/gemm.cuh's tfc_gemv).
constexpr int64_t kMaxGemvRows = 8;

/// Whether a product of these operand types runs on tensor cores.
bool onTensorCores(Type a, Type b) {
  return a == b && (a.isBF16() || a.isF16());
}

/// The artifact ABI's code of a float element type a library product takes
/// (TFC_ABI_*), or 0.
int32_t libraryType(Type t) {
  return llvm::isa<FloatType>(t) ? abiElementType(t) : 0;
}

/// The library product of a product kernel (KernelSource::product): `batch`
/// products of M x K by K x N whose operands start `strideA` and `strideB`
/// elements apart (0: one for every batch), or none where the kernel is a
/// GEMV (a decode step: tfc_gemv reads the weights at the bandwidth a
/// library's GEMM does not reach on so few rows) or a type has no code.
std::optional<KernelSource::LibraryProduct>
libraryProduct(ArrayRef<MemRefType> operands, MemRefType result,
               MemRefType bias, int64_t batch, int64_t m, int64_t n, int64_t k,
               bool ta, bool tb, int64_t strideA, int64_t strideB,
               const EmitOptions &options) {
  if (m <= kMaxGemvRows && !ta)
    return std::nullopt;
  KernelSource::LibraryProduct p;
  p.aType = libraryType(operands[0].getElementType());
  p.bType = libraryType(operands[1].getElementType());
  p.cType = libraryType(result.getElementType());
  p.biasType = bias ? libraryType(bias.getElementType()) : 0;
  if (!p.aType || !p.bType || !p.cType || (bias && !p.biasType))
    return std::nullopt;
  // One operand's batches broadcast over row-major rows of the other: one
  // product of batch x M rows (the common activations-times-weights case).
  if (batch > 1 && strideB == 0 && !ta && strideA == m * k) {
    m *= batch;
    batch = 1;
    strideA = 0;
  }
  p.transA = ta;
  p.transB = tb;
  p.tf32 = options.tf32;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.strideA = strideA;
  p.strideB = strideB;
  return p;
}

/// A tiled product kernel: `batch` products of M x K by K x N. `coords` are
/// C++ statements of the batch index z (e.g. its broadcast coordinates), and
/// `aOffset`, `bOffset` the offsets of the batch's operands in in0 and in1;
/// the batch's result starts at out0 + z * M * N. The epilogue is the
/// expression of the f32 sum `v` at (m, n) that is stored there.
KernelSource tiledProductKernel(StringRef name, ArrayRef<MemRefType> operands,
                                ArrayRef<MemRefType> results, int64_t batch,
                                int64_t m, int64_t n, int64_t k, bool ta,
                                bool tb, const std::string &coords,
                                const std::string &aOffset,
                                const std::string &bOffset,
                                const std::string &epilogue,
                                const EmitOptions &options) {
  Type ae = operands[0].getElementType();
  // A few rows (a decode step): a GEMV over many blocks, for any types.
  bool gemv = m <= kMaxGemvRows && !ta;
  bool tc = !gemv && onTensorCores(ae, operands[1].getElementType());
  // f32 on tensor cores when the user allows TF32's rounding of the operands.
  bool tf32 = !gemv && options.tf32 && ae.isF32() &&
              operands[1].getElementType().isF32();
  // The tensor-core tile takes the 16 bits of either 16-bit type.
  auto pointer = [&](StringRef in, StringRef offset) {
    std::string at = "(" + in.str() + " + " + offset.str() + ")";
    return tc ? "(const unsigned short*)" + at : at;
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long z = blockIdx.z;\n"
     << coords << "  const auto* a = " << pointer("in0", aOffset) << ";\n"
     << "  const auto* b = " << pointer("in1", bOffset) << ";\n"
     << "  auto* c = out0 + z * " << m * n << "LL;\n";
  if (gemv)
    os << "  tfc_gemv<" << m << ", " << (tb ? "true" : "false") << ">(\n"
       << "      a, b, " << n << "LL, " << k << "LL, " << k << "LL, "
       << (tb ? k : n) << "LL,\n";
  else
    os << "  "
       << (tc     ? std::string("tfc_gemm_tc_64x64<") +
                    (ae.isBF16() ? "true, " : "false, ")
           : tf32 ? std::string("tfc_gemm_tf32_64x64<")
                  : std::string("tfc_gemm_simt_64x64<"))
       << (ta ? "true" : "false") << ", " << (tb ? "true" : "false") << ">(\n"
       << "      a, b, " << m << "LL, " << n << "LL, " << k << "LL, "
       << (ta ? m : k) << "LL, " << (tb ? k : n) << "LL,\n";
  os << "      [&](long long m, long long n, float v) { c[m * " << n
     << "LL + n] = " << store(results[0].getElementType(), epilogue)
     << "; });\n"
     << "}\n";
  KernelSource source{text, batch * m * n};
  if (gemv)
    source.launch = tb ? KernelSource::Shape{{(n + 7) / 8, 1, batch}, {32, 8, 1}, 0}
                       : KernelSource::Shape{{(n + 31) / 32, 1, batch}, {32, 32, 1}, 0};
  else
    source.launch = KernelSource::Shape{
        {(n + 63) / 64, (m + 63) / 64, batch}, {tc || tf32 ? 128 : 256, 1, 1}, 0};
  return source;
}

/// matmul with NumPy-broadcast batch dimensions and optional transposes.
FailureOr<KernelSource> emitMatmul(StringRef name, MatmulOp mm,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results,
                                   const EmitOptions &options) {
  ArrayRef<int64_t> out = results[0].getShape();
  ArrayRef<int64_t> a = operands[0].getShape(), b = operands[1].getShape();
  int64_t rank = out.size();
  int64_t m = out[rank - 2], n = out[rank - 1];
  bool ta = mm.getTransposeLhs(), tb = mm.getTransposeRhs();
  int64_t k = ta ? a[a.size() - 2] : a.back();
  int64_t batch = numElements(out.drop_back(2));
  // The offset of an operand's batch from the batch coordinates c0.. of the
  // result (broadcast: a dimension of size 1 reads index 0).
  auto batchOffset = [&](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> strides = stridesOf(shape);
    size_t batchRank = shape.size() - 2, lead = (rank - 2) - batchRank;
    std::string expr = "0";
    for (size_t d = 0; d < batchRank; ++d)
      if (shape[d] != 1)
        expr += " + c" + std::to_string(lead + d) + " * " +
                std::to_string(strides[d]) + "LL";
    return expr;
  };
  if (batch <= kMaxGridYZ && (m + 63) / 64 <= kMaxGridYZ) {
    // Batch coordinates c0.. of z.
    std::string coords = "  long long rest = z;\n";
    for (int64_t d = rank - 3; d >= 0; --d)
      coords += "  const long long c" + std::to_string(d) + " = rest % " +
                std::to_string(out[d]) + "LL; rest /= " +
                std::to_string(out[d]) + "LL;\n";
    coords += "  (void)rest;\n";
    KernelSource source = tiledProductKernel(
        name, operands, results, batch, m, n, k, ta, tb, coords,
        batchOffset(a), batchOffset(b), "v", options);
    // A library takes batches a fixed stride apart: an operand with every
    // batch dimension of the result, or with none.
    auto batchStride = [&](ArrayRef<int64_t> shape) -> std::optional<int64_t> {
      int64_t batches = numElements(shape.drop_back(2));
      int64_t matrix = shape[shape.size() - 2] * shape.back();
      if (batches == 1)
        return 0;
      if (batches == batch)
        return matrix;
      return std::nullopt;
    };
    std::optional<int64_t> strideA = batchStride(a), strideB = batchStride(b);
    if (strideA && strideB)
      source.product =
          libraryProduct(operands, results[0], nullptr, batch, m, n, k, ta, tb,
                         *strideA, *strideB, options);
    return source;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  openGather(os, name, operands, results, out);
  std::string row = "c" + std::to_string(rank - 2),
              col = "c" + std::to_string(rank - 1);
  // Element (row, kk) of lhs and (kk, col) of rhs, transposes applied.
  std::string aAt = ta ? "kk * " + std::to_string(m) + "LL + " + row
                       : row + " * " + std::to_string(k) + "LL + kk";
  std::string bAt = tb ? col + " * " + std::to_string(k) + "LL + kk"
                       : "kk * " + std::to_string(n) + "LL + " + col;
  os << "    const long long ab = " << batchOffset(a) << ";\n"
     << "    const long long bb = " << batchOffset(b) << ";\n"
     << "    float acc = 0.0f;\n"
     << "    for (long long kk = 0; kk < " << k << "LL; ++kk)\n"
     << "      acc = fmaf(" << load(operands[0].getElementType(),
                                 "in0[ab + " + aAt + "]")
     << ", " << load(operands[1].getElementType(), "in1[bb + " + bAt + "]")
     << ", acc);\n"
     << "    out0[i] = " << store(results[0].getElementType(), "acc")
     << ";\n  }\n}\n";
  KernelSource source{text, numElements(out)};
  source.fallback = kTooManyTiles;
  return source;
}

/// linear: [..., K] x [K, N] (or [N, K] with transpose_weight) + bias [N].
FailureOr<KernelSource> emitLinear(StringRef name, LinearOp lin,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results,
                                   const EmitOptions &options) {
  ArrayRef<int64_t> out = results[0].getShape();
  int64_t n = out.back(), k = operands[0].getShape().back();
  bool tw = lin.getTransposeWeight();
  int64_t rows = numElements(out) / n;
  if ((rows + 63) / 64 <= kMaxGridYZ) {
    std::string epilogue =
        lin.getBias() ? "v + " + load(operands[2].getElementType(), "in2[n]")
                      : std::string("v");
    KernelSource source = tiledProductKernel(
        name, operands, results, /*batch=*/1, rows, n, k, /*ta=*/false, tw,
        "  (void)z;\n", "0", "0", epilogue, options);
    // A bias of another type than the result stays in this kernel's epilogue
    // (a library adds one of the result's type).
    if (!lin.getBias() ||
        operands[2].getElementType() == results[0].getElementType())
      source.product = libraryProduct(
          operands, results[0], lin.getBias() ? operands[2] : MemRefType(),
          /*batch=*/1, rows, n, k, /*ta=*/false, tw, 0, 0, options);
    return source;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  os << "  const long long n = " << numElements(out) << "LL;\n" << kGridStride;
  os << "    const long long r = i / " << n << "LL, col = i % " << n
     << "LL;\n";
  std::string wAt = tw ? "col * " + std::to_string(k) + "LL + kk"
                       : "kk * " + std::to_string(n) + "LL + col";
  os << "    float acc = "
     << (lin.getBias() ? load(operands[2].getElementType(), "in2[col]")
                       : std::string("0.0f"))
     << ";\n"
     << "    for (long long kk = 0; kk < " << k << "LL; ++kk)\n"
     << "      acc = fmaf(" << load(operands[0].getElementType(),
                                 "in0[r * " + std::to_string(k) + "LL + kk]")
     << ", " << load(operands[1].getElementType(), "in1[" + wAt + "]")
     << ", acc);\n"
     << "    out0[i] = " << store(results[0].getElementType(), "acc")
     << ";\n  }\n}\n";
  KernelSource source{text, numElements(out)};
  source.fallback = kTooManyTiles;
  return source;
}

//===----------------------------------------------------------------------===//
// Losses, embedding gradient, rotary. cross_entropy and its gradient are
// kernels/row.cuh's, a warp a row reading each logit once: the loss's sum
// goes through per-block partials summed by the last block (fixed orders:
// deterministic). embedding_grad is one thread per column of a block of rows
// (each owns its elements: no atomics, the sum in position order as the op
// requires).
//===----------------------------------------------------------------------===//

/// The blocks of a cross_entropy launch: enough warps to keep a GPU's memory
/// busy, few enough partial sums for one thread to add.
constexpr int64_t kCrossEntropyBlocks = 512;

FailureOr<KernelSource> emitCrossEntropy(StringRef name, CrossEntropyOp ce,
                                         ArrayRef<MemRefType> operands,
                                         ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t width = shape.back(), rows = operands[0].getNumElements() / width;
  int64_t blocks = std::clamp<int64_t>((rows + 7) / 8, 1, kCrossEntropyBlocks);
  std::string text;
  llvm::raw_string_ostream os(text);
  // The block partials and the ticket counter: this kernel's own globals.
  os << "__device__ float " << name << "_partials[" << 2 * blocks << "];\n"
     << "__device__ unsigned " << name << "_done;\n"
     << signature(name, operands, results) << " {\n"
     << "  tfc_cross_entropy_rows(in0, in1, out0, " << rows << "LL, " << width
     << "LL, " << static_cast<int64_t>(ce.getIgnoreIndex()) << "LL, " << name
     << "_partials, &" << name << "_done);\n}\n";
  KernelSource source{text, rows};
  source.launch = KernelSource::Shape{{blocks, 1, 1}, {32, 8, 1}, 0};
  return source;
}

FailureOr<KernelSource> emitCrossEntropyGrad(StringRef name,
                                             CrossEntropyGradOp ce,
                                             ArrayRef<MemRefType> operands,
                                             ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t width = shape.back(), rows = operands[0].getNumElements() / width;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  tfc_cross_entropy_grad_rows(in0, in1, in2, out0, " << rows << "LL, "
     << width << "LL, " << static_cast<int64_t>(ce.getIgnoreIndex())
     << "LL);\n}\n";
  return warpRowKernel(text, rows);
}

/// Work items of embedding_grad that a GPU keeps busy: the table's columns
/// times blocks of its rows.
constexpr int64_t kEmbeddingGradItems = 65536;

FailureOr<KernelSource> emitEmbeddingGrad(StringRef name,
                                          ArrayRef<MemRefType> operands,
                                          ArrayRef<MemRefType> results) {
  // operands: grad [..., D], ids [...], [init [V, D]]; result [V, D] = init
  // (or 0) + the scattered rows. A work item owns one column of a block of
  // rows: it writes their init (or 0), then adds every position whose id
  // falls in its block, in position order (no atomics: the same bits as one
  // thread a column). Consecutive items take consecutive columns.
  ArrayRef<int64_t> table = results[0].getShape();
  int64_t rows = table[0], width = table[1];
  int64_t positions = operands[1].getNumElements();
  int64_t blocks = std::clamp<int64_t>(
      (kEmbeddingGradItems + width - 1) / width, 1, rows);
  int64_t perBlock = (rows + blocks - 1) / blocks;
  blocks = (rows + perBlock - 1) / perBlock;
  Type g = operands[0].getElementType(), out = results[0].getElementType();
  std::string text;
  llvm::raw_string_ostream os(text);
  auto gradAt = [&](const char *position) {
    return load(g, std::string("in0[") + position + " * " +
                       std::to_string(width) + "LL + col]");
  };
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << blocks * width << "LL;\n" << kGridStride
     << "    const long long col = i % " << width << "LL, lo = (i / " << width
     << "LL) * " << perBlock << "LL;\n"
     << "    const long long hi = lo + " << perBlock << "LL < " << rows
     << "LL ? lo + " << perBlock << "LL : " << rows << "LL;\n"
     << "    for (long long v = lo; v < hi; ++v) out0[v * " << width
     << "LL + col] = "
     << (operands.size() > 2
             ? std::string("in2[v * ") + std::to_string(width) + "LL + col]"
             : store(out, "0.0f"))
     << ";\n"
     << "    for (long long p = 0; p < " << positions << "LL; ++p) {\n"
     << "      const long long id = in1[p];\n"
     << "      if (id < 0 || id >= " << rows << "LL) {\n"
     << "        if (i == 0) tfc_report(TFC_KERNEL_ERROR_EMBEDDING_ID);\n"
     << "        continue;\n      }\n"
     << "      if (id < lo || id >= hi) continue;\n"
     << "      const long long at = id * " << width << "LL + col;\n";
  if (out.isF32()) {
    os << "      out0[at] = out0[at] + " << gradAt("p") << ";\n";
  } else {
    // A 16-bit table summed in place would round at every repeated id: at
    // an id's first position, sum all of its positions in f32 (in order, as
    // above) and round once. O(positions^2) per column, correct first.
    os << "      bool first = true;\n"
       << "      for (long long q = 0; q < p && first; ++q)\n"
       << "        first = in1[q] != id;\n"
       << "      if (!first) continue;\n"
       << "      float acc = " << load(out, "out0[at]") << ";\n"
       << "      for (long long q = p; q < " << positions << "LL; ++q) {\n"
       << "        if (in1[q] == id) acc += " << gradAt("q") << ";\n"
       << "      }\n"
       << "      out0[at] = " << store(out, "acc") << ";\n";
  }
  os << "    }\n  }\n}\n";
  return KernelSource{text, blocks * width};
}

FailureOr<KernelSource> emitRotary(StringRef name, RotaryOp rot,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results) {
  // x [B, H, T, D]; p = offset + t; f_i = exp(i * c), c = -2 ln(theta) / D,
  // or the `frequencies` operand's entry i; the angle and its cosine and
  // sine in f64, rounded to f32, as on the CPU.
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t d = shape.back(), half = d / 2, t = shape[shape.size() - 2];
  double c = -2.0 * std::log(rot.getTheta().convertToDouble()) / double(d);
  Type in = operands[0].getElementType(), out = results[0].getElementType();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << operands[0].getNumElements() / 2
     << "LL;\n" << kGridStride
     << "    const long long row = i / " << half << "LL, k = i % " << half
     << "LL;\n"
     << "    const long long pos = "
     << (!rot.getOffset() ? std::string()
         : operands[1].getRank() == 1
             // One offset per batch row.
             ? "(long long)in1[row / " +
                   std::to_string(operands[0].getNumElements() / d /
                                  shape[0]) +
                   "LL] + "
             : std::string("(long long)in1[0] + "))
     << "row % " << t << "LL;\n"
     << "    const double angle = (double)pos * "
     << (rot.getFrequencies()
             ? std::string("(double)in") + (rot.getOffset() ? "2" : "1") +
                   "[k]"
             : "exp((double)k * " + llvm::formatv("{0:e17}", c).str() + ")")
     << ";\n"
     << "    const float co = (float)cos(angle);\n"
     << "    const float si = " << (rot.getInverse() ? "-" : "")
     << "(float)sin(angle);\n"
     << "    const long long i1 = row * " << d << "LL + k, i2 = i1 + " << half
     << "LL;\n"
     << "    const float x1 = " << load(in, "in0[i1]") << ", x2 = "
     << load(in, "in0[i2]") << ";\n"
     << "    out0[i1] = " << store(out, "x1 * co - x2 * si") << ";\n"
     << "    out0[i2] = " << store(out, "x2 * co + x1 * si") << ";\n"
     << "  }\n}\n";
  return KernelSource{text, operands[0].getNumElements() / 2};
}

//===----------------------------------------------------------------------===//
// Attention. A decode step's few query rows split their keys over blocks
// (kernels/attention.cuh, flash-decoding). In bf16 and f16 the forward and the
// backward run on tensor cores (flash attention) where the head dims allow;
// otherwise the forward is one thread per query row with an online softmax
// over the visible keys (the T x T scores never exist in memory), and the
// backward (tfc_attention_bwd_simt) first writes each row's log-sum-exp and
// dO.O, then a thread a chunk of a row of dQ, dK or dV (summed over the query
// heads that share it, in a fixed order: deterministic) reads them back.
// Semantics as the CPU's kernel library: key j is visible to query i iff
// j < clamp(i + offset + 1, 0, Tk) when causal; a row that sees no key is 0.
//===----------------------------------------------------------------------===//

struct AttentionShape {
  int64_t b, h, hkv, tq, tk, d, dv;
  bool causal;
  double scale;
  bool hasOffset;
  bool rowOffsets; // a 1-d offset: one per batch row
};

template <typename Op>
AttentionShape attentionShape(Op op) {
  auto q = op.getQuery().getType(), k = op.getKey().getType(),
       v = op.getValue().getType();
  return {q.getDimSize(0), q.getDimSize(1), k.getDimSize(1), q.getDimSize(2),
          k.getDimSize(2), q.getDimSize(3), v.getDimSize(3), op.getCausal(),
          static_cast<double>(op.getEffectiveScale()), bool(op.getOffset()),
          op.getOffset() && op.getOffset().getType().getRank() == 1};
}

/// The trailing argument of the kernel library's attention calls: the
/// per-row offsets operand, or none.
std::string rowOffsetsArgument(const AttentionShape &a, StringRef operand) {
  return a.rowOffsets ? ", (const int*)" + operand.str() : "";
}

/// The position of the first query: the offset operand, or Tk - Tq.
std::string queryOffset(const AttentionShape &a, StringRef operand) {
  // Per-row offsets are passed on (rowOffsetsArgument); this is then unused.
  return a.hasOffset && !a.rowOffsets ? "(long long)" + operand.str() + "[0]"
         : a.hasOffset                ? std::string("0LL")
                       : std::to_string(a.tk - a.tq) + "LL";
}

/// Declares, for the query row of flat index `row` (b, h, qi), its key head
/// `hk`, its number of visible keys `lim` and the offsets of its Q/O rows
/// and of the head's K/V blocks. `offsetOperand` reads the position operand.
void attentionRow(llvm::raw_ostream &os, const AttentionShape &a,
                  StringRef row, StringRef offsetOperand, StringRef indent) {
  std::string in = indent.str();
  os << in << "const long long qi = " << row << " % " << a.tq << "LL, hh = ("
     << row << " / " << a.tq << "LL) % " << a.h << "LL, bb = " << row << " / "
     << a.tq * a.h << "LL;\n"
     << in << "const long long hk = hh / " << a.h / a.hkv << "LL;\n"
     << in << "const long long off = "
     << (a.rowOffsets  ? "(long long)" + offsetOperand.str() + "[bb]"
         : a.hasOffset ? "(long long)" + offsetOperand.str() + "[0]"
                       : std::to_string(a.tk - a.tq) + "LL")
     << ";\n";
  if (a.causal)
    os << in << "long long lim = qi + off + 1; lim = lim < 0 ? 0 : (lim > "
       << a.tk << "LL ? " << a.tk << "LL : lim);\n";
  else
    os << in << "const long long lim = " << a.tk << "LL;\n";
  os << in << "const long long qrow = ((bb * " << a.h << "LL + hh) * " << a.tq
     << "LL + qi) * " << a.d << "LL;\n"
     << in << "const long long orow = ((bb * " << a.h << "LL + hh) * " << a.tq
     << "LL + qi) * " << a.dv << "LL;\n"
     << in << "const long long kb = (bb * " << a.hkv << "LL + hk) * " << a.tk
     << "LL * " << a.d << "LL;\n"
     << in << "const long long vb = (bb * " << a.hkv << "LL + hk) * " << a.tk
     << "LL * " << a.dv << "LL;\n";
}

/// The scaled score of key `j` for the row (after attentionRow): the dot
/// product of the query row and key row `j` (the prelude's tfc_dot), times
/// the scale.
std::string score(const AttentionShape &a, StringRef j) {
  return "tfc_dot<" + std::to_string(a.d) + "LL>(in0 + qrow, in1 + kb + " +
         j.str() + " * " + std::to_string(a.d) + "LL) * " +
         floatLiteral(a.scale);
}

/// Why attention of this shape and these operand types cannot run on tensor
/// cores (kernels/attention.cuh), or "" when it can: q, k and v of one 16-bit
/// type, head dims that are multiples of 16 up to 128, a grid within CUDA's
/// limits.
std::string flashAttentionFallback(const AttentionShape &a,
                                   ArrayRef<MemRefType> operands) {
  Type q = operands[0].getElementType();
  if (!onTensorCores(q, operands[1].getElementType()) ||
      q != operands[2].getElementType())
    return "q, k and v are not all bf16 or all f16 (flash attention runs on "
           "tensor cores)";
  if (a.d % 16 != 0 || a.dv % 16 != 0 || a.d > 128 || a.dv > 128)
    return "head dims " + std::to_string(a.d) + " and " +
           std::to_string(a.dv) +
           " (flash attention takes multiples of 16 up to 128)";
  if (a.b * a.h > std::numeric_limits<int32_t>::max() ||
      (a.tq + 63) / 64 > kMaxGridYZ)
    return "more blocks than a CUDA grid holds";
  return "";
}

/// Query rows per head up to which attention is a decode step's
/// (tfc_attention_decode: the keys split over blocks) rather than a flash
/// attention block's 64 rows.
constexpr int64_t kMaxDecodeQueries = 4;
/// The most floats of chunk partials a decode kernel keeps in its own global
/// (64 MiB, allocated when the artifact loads); past it, the one-thread-a-row
/// kernel, which needs none.
constexpr int64_t kMaxDecodePartials = int64_t{1} << 24;

/// A decode attention kernel (kernels/attention.cuh's tfc_attention_decode,
/// for contiguous and paged keys): a block per query row and chunk of 128 of
/// the `tk` keys, the chunks' partial results and each row's ticket in this
/// kernel's own globals. `arguments` are the call's up to the scale, `trailing`
/// those after the globals (per-row offsets, pages), each with its comma.
KernelSource decodeAttentionKernel(StringRef name, ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results, int64_t rows,
                                   int64_t tk, int64_t d, int64_t dv, bool causal,
                                   StringRef arguments, StringRef trailing) {
  int64_t chunks = (tk + 127) / 128;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "__device__ float " << name << "_partial[" << rows * chunks * (dv + 2)
     << "];\n"
     << "__device__ unsigned " << name << "_tickets[" << rows << "];\n"
     << signature(name, operands, results) << " {\n"
     << "  tfc_attention_decode<" << d << ", " << dv << ", "
     << (causal ? "true" : "false") << ">(" << arguments << ", " << name
     << "_partial, " << name << "_tickets" << trailing << ");\n}\n";
  KernelSource source{text, rows};
  source.launch = KernelSource::Shape{{rows * chunks, 1, 1}, {128, 1, 1}, 0};
  return source;
}

/// Decode attention over contiguous keys (decodeAttentionKernel).
KernelSource decodeAttention(StringRef name, const AttentionShape &a,
                             ArrayRef<MemRefType> operands,
                             ArrayRef<MemRefType> results) {
  std::string arguments =
      "in0, in1, in2, out0, " + std::to_string(a.h) + "LL, " +
      std::to_string(a.hkv) + "LL, " + std::to_string(a.tq) + "LL, " +
      std::to_string(a.tk) + "LL, " + queryOffset(a, "in3") + ", " +
      floatLiteral(a.scale);
  return decodeAttentionKernel(name, operands, results, a.b * a.h * a.tq, a.tk,
                               a.d, a.dv, a.causal, arguments,
                               rowOffsetsArgument(a, "in3"));
}

FailureOr<KernelSource> emitAttention(StringRef name, AttentionOp op,
                                      ArrayRef<MemRefType> operands,
                                      ArrayRef<MemRefType> results) {
  AttentionShape a = attentionShape(op);
  Type ve = operands[2].getElementType(), oe = results[0].getElementType();
  int64_t decodeBlocks = a.b * a.h * a.tq * ((a.tk + 127) / 128);
  if (a.tq <= kMaxDecodeQueries && decodeBlocks * (a.dv + 2) <= kMaxDecodePartials)
    return decodeAttention(name, a, operands, results);
  std::string fallback = flashAttentionFallback(a, operands);
  if (fallback.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << signature(name, operands, results) << " {\n"
       << "  tfc_flash_attention_fwd<"
       << (operands[0].getElementType().isBF16() ? "true" : "false") << ", "
       << a.d << ", " << a.dv << ", " << (a.causal ? "true" : "false") << ">(\n"
       << "      (const unsigned short*)in0, (const unsigned short*)in1, "
          "(const unsigned short*)in2, out0,\n"
       << "      " << a.h << "LL, " << a.hkv << "LL, " << a.tq << "LL, " << a.tk
       << "LL, "
       << queryOffset(a, "in3")
       << ", " << floatLiteral(a.scale) << rowOffsetsArgument(a, "in3")
       << ");\n}\n";
    KernelSource source{text, a.b * a.h * a.tq};
    source.launch =
        KernelSource::Shape{{a.b * a.h, (a.tq + 63) / 64, 1}, {128, 1, 1}, 0};
    return source;
  }
  int64_t rows = a.b * a.h * a.tq;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << rows << "LL;\n" << kGridStride;
  attentionRow(os, a, "i", "in3", "    ");
  // Online softmax: acc holds sum_j exp(s_j - m) v_j for the running m.
  os << "    float acc[" << a.dv << "];\n"
     << "    for (long long t = 0; t < " << a.dv << "LL; ++t) acc[t] = 0.0f;\n"
     << "    float m = -__int_as_float(0x7f800000), l = 0.0f;\n"
     << "    for (long long j = 0; j < lim; ++j) {\n"
     << "      const float sj = " << score(a, "j") << ";\n"
     << "      const float mn = sj > m ? sj : m;\n"
     << "      const float corr = expf(m - mn), p = expf(sj - mn);\n"
     << "      l = l * corr + p;\n"
     << "      for (long long t = 0; t < " << a.dv << "LL; ++t)\n"
     << "        acc[t] = acc[t] * corr + p * "
     << load(ve, "in2[vb + j * " + std::to_string(a.dv) + "LL + t]") << ";\n"
     << "      m = mn;\n    }\n"
     << "    const float inv = l > 0.0f ? 1.0f / l : 0.0f;\n"
     << "    for (long long t = 0; t < " << a.dv << "LL; ++t) out0[orow + t] = "
     << store(oe, "acc[t] * inv") << ";\n  }\n}\n";
  KernelSource source{text, rows};
  source.fallback = fallback;
  return source;
}

/// The pages argument of the paged kernels (kernels/attention.cuh's tfc_kv_pages): the
/// block table operand `table` [B, M] over a pool [NB, Hkv, S, D].
std::string kvPages(StringRef table, MemRefType tableType, MemRefType poolType) {
  return "tfc_kv_pages{(const int*)" + table.str() + ", " +
         std::to_string(poolType.getDimSize(2)) + "LL, " +
         std::to_string(tableType.getDimSize(1)) + "LL, " +
         std::to_string(poolType.getDimSize(0)) + "LL}";
}

/// paged_attention (q, key pool, value pool, table, positions): the decode kernel over the
/// pools, a block per query row and chunk of 128 of the M * S keys a row may have (a
/// prefill chunk's rows too: its queries are few next to the keys), or a thread a query row
/// where its partials would pass kMaxDecodePartials.
FailureOr<KernelSource> emitPagedAttention(StringRef name, PagedAttentionOp op,
                                           ArrayRef<MemRefType> operands,
                                           ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> q = operands[0].getShape();
  int64_t b = q[0], h = q[1], tq = q[2], d = q[3];
  int64_t hkv = operands[1].getDimSize(1), dv = operands[2].getDimSize(3);
  int64_t tk = operands[1].getDimSize(2) * operands[3].getDimSize(1);
  int64_t rows = b * h * tq, chunks = (tk + 127) / 128;
  std::string pages = kvPages("in3", operands[3], operands[1]);
  std::string scale = floatLiteral(op.getEffectiveScale());
  if (rows * chunks * (dv + 2) <= kMaxDecodePartials) {
    std::string arguments = "in0, in1, in2, out0, " + std::to_string(h) + "LL, " +
                            std::to_string(hkv) + "LL, " + std::to_string(tq) + "LL, " +
                            std::to_string(tk) + "LL, 0LL, " + scale;
    return decodeAttentionKernel(name, operands, results, rows, tk, d, dv, true, arguments,
                                 ", (const int*)in4, " + pages);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  tfc_paged_attention_rows<" << d << ", " << dv << ">(in0, in1, in2, out0, " << b
     << "LL, " << h << "LL, " << hkv << "LL, " << tq << "LL, (const int*)in4, " << scale
     << ", " << pages << ");\n}\n";
  KernelSource source{text, rows};
  source.fallback = std::to_string(rows) + " query rows x " + std::to_string(chunks) +
                    " key chunks pass the decode kernel's partials";
  return source;
}

/// Why attention_grad of this shape and these types cannot run on tensor
/// cores (tfc_flash_attention_bwd), or "": the forward's conditions, with
/// `out` and `grad_out` of the operands' type too.
std::string flashAttentionGradFallback(const AttentionShape &a,
                                       ArrayRef<MemRefType> operands) {
  std::string why = flashAttentionFallback(a, operands);
  if (!why.empty())
    return why;
  Type q = operands[0].getElementType();
  if (operands[3].getElementType() != q || operands[4].getElementType() != q)
    return "out and grad_out are not of q's type (flash attention's backward "
           "takes five operands of one 16-bit type)";
  if (2 * a.b * a.h * ((a.tq + 63) / 64) + a.b * a.hkv * ((a.tk + 63) / 64) >
      std::numeric_limits<int32_t>::max())
    return "more blocks than a CUDA grid holds";
  return "";
}

/// An attention_grad kernel calling `call` (a kernel-library template with
/// its arguments) on `inputs` (q, k, v, out, grad_out), the results, the
/// shape, and this kernel's own globals for the rows' statistics and the
/// launch's block counters (the blocks of one launch share them; launches of
/// a kernel follow one another on the stream).
KernelSource attentionGradKernel(StringRef name, const AttentionShape &a,
                                 ArrayRef<MemRefType> operands,
                                 ArrayRef<MemRefType> results, StringRef call,
                                 StringRef inputs, int64_t threads,
                                 int64_t blocks) {
  int64_t rows = a.b * a.h * a.tq;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "__device__ float " << name << "_lse[" << rows << "];\n"
     << "__device__ float " << name << "_delta[" << rows << "];\n"
     << "__device__ unsigned " << name << "_counters[3];\n"
     << signature(name, operands, results) << " {\n"
     << "  " << call << "(\n      " << inputs << ", out0, out1, out2, " << a.b
     << "LL, " << a.h << "LL, " << a.hkv << "LL, " << a.tq << "LL, " << a.tk
     << "LL, " << queryOffset(a, "in5") << ", " << floatLiteral(a.scale)
     << ",\n      " << name << "_lse, " << name << "_delta, " << name
     << "_counters);\n}\n";
  KernelSource source{text, threads};
  source.launch = KernelSource::Shape{{blocks, 1, 1}, {128, 1, 1}, 0};
  return source;
}

/// attention_grad on tensor cores: one launch of tfc_flash_attention_bwd.
KernelSource flashAttentionGrad(StringRef name, const AttentionShape &a,
                                ArrayRef<MemRefType> operands,
                                ArrayRef<MemRefType> results) {
  int64_t blocks =
      2 * a.b * a.h * ((a.tq + 63) / 64) + a.b * a.hkv * ((a.tk + 63) / 64);
  std::string head = std::string("tfc_flash_attention_bwd<") +
                     (operands[0].getElementType().isBF16() ? "true" : "false") +
                     ", " + std::to_string(a.d) + ", " + std::to_string(a.dv) +
                     ", " + (a.causal ? "true" : "false") + ">";
  return attentionGradKernel(
      name, a, operands, results, head,
      "(const unsigned short*)in0, (const unsigned short*)in1, "
      "(const unsigned short*)in2, (const unsigned short*)in3,\n"
      "      (const unsigned short*)in4",
      a.b * a.h * a.tq, blocks);
}

FailureOr<KernelSource> emitAttentionGrad(StringRef name, AttentionGradOp op,
                                          ArrayRef<MemRefType> operands,
                                          ArrayRef<MemRefType> results) {
  // operands: q, k, v, out, grad_out[, offset]; results: dq, dk, dv.
  AttentionShape a = attentionShape(op);
  std::string fallback = flashAttentionGradFallback(a, operands);
  if (fallback.empty())
    return flashAttentionGrad(name, a, operands, results);
  // On the CUDA cores: a thread a row's statistics, then a thread a chunk of
  // at most 32 columns of a row of dQ, dK or dV (tfc_attention_chunks).
  auto chunks = [](int64_t width) {
    int64_t n = (width + 31) / 32;
    return width % n == 0 ? n : 1;
  };
  int64_t rows = a.b * a.h * a.tq, keys = a.b * a.hkv * a.tk;
  int64_t items = rows * chunks(a.d) + keys * (chunks(a.d) + chunks(a.dv));
  int64_t blocks = (rows + 127) / 128 + (items + 127) / 128;
  if (blocks > std::numeric_limits<int32_t>::max())
    return op.emitError("attention_grad of ")
           << items << " work items: more blocks than a CUDA grid holds";
  KernelSource source = attentionGradKernel(
      name, a, operands, results,
      "tfc_attention_bwd_simt<" + std::to_string(a.d) + ", " +
          std::to_string(a.dv) + ", " + (a.causal ? "true" : "false") + ">",
      "in0, in1, in2, in3, in4", items, blocks);
  source.fallback = fallback;
  return source;
}

//===----------------------------------------------------------------------===//
// Sampling: one thread per row, the CPU kernel library's algorithm and its
// random draw (Philox-4x32-10 keyed by the seed, counter = row, stream
// "SAMP"), so that a seed picks the same token on both targets (the weights
// agree to float rounding: only a draw within rounding of a boundary can
// differ). Candidates are visited in (logit descending, index ascending)
// order by repeated scans, which needs no scratch memory: O(k V) per row.
//===----------------------------------------------------------------------===//

FailureOr<KernelSource> emitSample(StringRef name, SampleOp op,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t batch = shape[0], vocab = shape[1];
  Type e = operands[0].getElementType();
  std::string x = load(e, "x[j]");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << batch << "LL;\n" << kGridStride
     << "    const long long V = " << vocab << "LL;\n"
     << "    const " << storageType(e) << "* x = in0 + i * V;\n"
     << "    const float temperature = in1[0];\n"
     << "    const int top_k = in2[0];\n"
     << "    const float top_p = in3[0];\n"
     << "    bool nan = false;\n"
     << "    float xmax = -__int_as_float(0x7f800000);\n"
     << "    long long best = 0;\n"
     << "    for (long long j = 0; j < V; ++j) {\n"
     << "      const float v = " << x << ";\n"
     << "      nan |= v != v;\n"
     << "      if (v > xmax) { xmax = v; best = j; }\n"
     << "    }\n"
     << "    if (nan) { tfc_report(TFC_KERNEL_ERROR_SAMPLE_NAN); out0[i] = 0; continue; }\n"
     << "    if (!(temperature > 0.0f) || xmax == __int_as_float(0x7f800000) ||\n"
     << "        xmax == -__int_as_float(0x7f800000)) { out0[i] = (int)best; continue; }\n"
     << "    const float inv_t = 1.0f / temperature;\n"
     << "    const double u = tfc_uniform_double(in4[0], i, 0x53414D50u);\n"
     << "    const long long k = (top_k <= 0 || top_k >= V) ? V : top_k;\n"
     << "    const bool use_p = top_p < 1.0f;\n"
     // All kept, no nucleus: in index order over every token.
     << "    if (k == V && !use_p) {\n"
     << "      double total = 0.0;\n"
     << "      for (long long j = 0; j < V; ++j) total += (double)expf((" << x
     << " - xmax) * inv_t);\n"
     << "      const double target = u * total;\n"
     << "      double cum = 0.0; long long last = 0, pick = -1;\n"
     << "      for (long long j = 0; j < V && pick < 0; ++j) {\n"
     << "        const float w = expf((" << x << " - xmax) * inv_t);\n"
     << "        if (w > 0.0f) { cum += (double)w; last = j; if (cum > target) pick = j; }\n"
     << "      }\n"
     << "      out0[i] = (int)(pick >= 0 ? pick : last);\n"
     << "      continue;\n    }\n"
     // The candidates in order: the c-th is the best one worse than the
     // (c-1)-th. Their weights: exp in double for top-k (as the CPU), the
     // float weight of the whole-vocabulary sum for top-p alone.
     << "    double mass = 0.0;\n"
     << "    if (k == V) for (long long j = 0; j < V; ++j) mass += (double)expf(("
     << x << " - xmax) * inv_t);\n"
     << "    float px = __int_as_float(0x7f800000); long long pj = -1;\n"
     << "#define TFC_NEXT_CANDIDATE(cx, cj) { cj = -1; \\\n"
     << "      for (long long j = 0; j < V; ++j) { const float v = " << x << "; \\\n"
     << "        const bool after = v < px || (v == px && j > pj); \\\n"
     << "        if (after && (cj < 0 || v > cx || (v == cx && j < cj))) { cx = v; cj = j; } } }\n"
     << "    if (k < V) {\n"
     << "      for (long long c = 0; c < k; ++c) {\n"
     << "        float cx = 0.0f; long long cj; TFC_NEXT_CANDIDATE(cx, cj);\n"
     << "        mass += exp(((double)cx - (double)xmax) * (double)inv_t);\n"
     << "        px = cx; pj = cj;\n      }\n    }\n"
     << "    double kept_mass = mass;\n"
     << "    long long kept = k;\n"
     << "    if (use_p) {\n"
     << "      const double need = (double)top_p * mass;\n"
     << "      double cum = 0.0; kept = 0;\n"
     << "      px = __int_as_float(0x7f800000); pj = -1;\n"
     << "      while (kept < k) {\n"
     << "        float cx = 0.0f; long long cj; TFC_NEXT_CANDIDATE(cx, cj);\n"
     << "        cum += k < V ? exp(((double)cx - (double)xmax) * (double)inv_t)\n"
     << "                     : (double)expf((cx - xmax) * inv_t);\n"
     << "        ++kept; px = cx; pj = cj;\n"
     << "        if (cum >= need) break;\n      }\n"
     << "      kept_mass = cum;\n    }\n"
     << "    const double target = u * kept_mass;\n"
     << "    double cum = 0.0; long long pick = 0;\n"
     << "    px = __int_as_float(0x7f800000); pj = -1;\n"
     << "    for (long long c = 0; c < kept; ++c) {\n"
     << "      float cx = 0.0f; long long cj; TFC_NEXT_CANDIDATE(cx, cj);\n"
     << "      cum += k < V ? exp(((double)cx - (double)xmax) * (double)inv_t)\n"
     << "                   : (double)expf((cx - xmax) * inv_t);\n"
     << "      pick = cj; px = cx; pj = cj;\n"
     << "      if (cum > target) break;\n    }\n"
     << "#undef TFC_NEXT_CANDIDATE\n"
     << "    out0[i] = (int)pick;\n  }\n}\n";
  return KernelSource{text, batch};
}

//===----------------------------------------------------------------------===//
// Mixture of experts, correct first. moe_route is the CPU kernel library's
// algorithm (f32 softmax, the k largest probabilities by repeated scans, the
// lower index on ties), one thread per token. moe_ffn and moe_ffn_grad keep
// their sums in f32 registers, rows of D in chunks of at most kMoeChunk
// columns, each chunk its own work item that recomputes the activations it
// needs (as attention_grad does: wider rows spill to local memory, which the
// driver reserves for every resident thread). moe_ffn: item (token, chunk)
// computes each of the token's k experts on that token alone (never an
// expert the token did not choose): per hidden unit f, h = silu(w1[f] . x) *
// (w3[f] . x), added as weight * h * w2[chunk, f]. moe_ffn_grad: items
// (token, chunk) write that chunk of the token's dx row (chunk 0 also its
// dweights row), items (expert e, hidden unit f, chunk) that chunk of row f
// of dw1_e and dw3_e and of column f of dw2_e, summing over the tokens that
// chose e in token order (the CPU kernel's order). No two items write one
// element: no atomics, deterministic, and an expert no token chose gets
// exact zeros. 16-bit operands are widened on load and results rounded once.
//===----------------------------------------------------------------------===//

constexpr int64_t kMoeChunk = 32;

FailureOr<KernelSource> emitMoeRoute(StringRef name, MoeRouteOp op,
                                     ArrayRef<MemRefType> operands,
                                     ArrayRef<MemRefType> results) {
  int64_t rows = operands[0].getDimSize(0), E = operands[0].getDimSize(1);
  int64_t k = op.getTopK();
  std::string x = load(operands[0].getElementType(), "x[e]");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << rows << "LL;\n" << kGridStride
     << "    const long long E = " << E << "LL;\n"
     << "    const " << storageType(operands[0].getElementType())
     << "* x = in0 + i * E;\n"
     << "    float m = -__int_as_float(0x7f800000);\n"
     << "    for (long long e = 0; e < E; ++e) { const float v = " << x
     << "; m = v > m ? v : m; }\n"
     << "    float sum = 0.0f;\n"
     << "    for (long long e = 0; e < E; ++e) sum += expf(" << x << " - m);\n"
     // The k choices by repeated scans over the experts not yet taken: the
     // first largest probability (a NaN only when nothing else is left).
     << "    bool taken[" << E << "];\n"
     << "    for (long long e = 0; e < E; ++e) taken[e] = false;\n"
     << "    for (long long j = 0; j < " << k << "LL; ++j) {\n"
     << "      float bp = 0.0f; long long be = -1;\n"
     << "      for (long long e = 0; e < E; ++e) {\n"
     << "        if (taken[e]) continue;\n"
     << "        const float p = expf(" << x << " - m) / sum;\n"
     << "        if (be < 0 || p > bp || (bp != bp && p == p)) { bp = p; be = e; }\n"
     << "      }\n"
     << "      taken[be] = true;\n"
     << "      out0[i * " << k << "LL + j] = (int)be;\n"
     << "    }\n  }\n}\n";
  return KernelSource{text, rows};
}

/// Declares `table`[E], the pointers in<first + 3e + role> (out<...> for
/// results) to every expert's w1 (role 0), w3 (role 1) or w2 (role 2).
void expertTable(llvm::raw_ostream &os, StringRef table, int64_t E,
                 int64_t first, int role, Type t, bool result) {
  os << "  " << (result ? "" : "const ") << storageType(t) << "* const "
     << table << "[" << E << "] = {";
  for (int64_t e = 0; e < E; ++e)
    os << (e ? ", " : "") << (result ? "out" : "in") << first + 3 * e + role;
  os << "};\n";
}

/// The statements giving `g` = w1[f] . x and `u` = w3[f] . x in f32, for
/// expert matrices of element type `et` and a token row x of type `xt`.
std::string moeGateUp(Type et, Type xt, StringRef indent) {
  std::string x = load(xt, "x[c]"), in = indent.str();
  return in + "float g = 0.0f, u = 0.0f;\n" + in +
         "for (long long c = 0; c < D; ++c) { g += " +
         load(et, "w1[f * D + c]") + " * " + x + "; u += " +
         load(et, "w3[f * D + c]") + " * " + x + "; }\n";
}

/// Expert parallelism (a rank's share of the experts) is built for the CPU
/// target only.
template <typename Op>
LogicalResult requireAllExperts(Op op) {
  auto weights = llvm::cast<RankedTensorType>(op.getWeights().getType());
  if (op.getFirstExpert() == 0 &&
      static_cast<int64_t>(op.getExperts().size() / 3) == weights.getDimSize(1))
    return success();
  return op.emitOpError("holds a share of the experts (expert parallelism, "
                        "tfc --ep), which the CUDA target does not build yet");
}

FailureOr<KernelSource> emitMoeFfn(StringRef name, MoeFfnOp op,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results) {
  if (failed(requireAllExperts(op)))
    return failure();
  Type xt = operands[0].getElementType(), wt = operands[2].getElementType();
  Type et = operands[3].getElementType(), yt = results[0].getElementType();
  int64_t N = operands[0].getDimSize(0), D = operands[0].getDimSize(1);
  int64_t k = operands[1].getDimSize(1), E = op.getNumExperts();
  int64_t F = operands[3].getDimSize(0);
  int64_t C = std::min(D, kMoeChunk), chunks = (D + C - 1) / C;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  expertTable(os, "w1s", E, 3, 0, et, /*result=*/false);
  expertTable(os, "w3s", E, 3, 1, et, /*result=*/false);
  expertTable(os, "w2s", E, 3, 2, et, /*result=*/false);
  os << "  const long long n = " << N * chunks << "LL;\n" << kGridStride
     << "    const long long D = " << D << "LL, F = " << F << "LL, E = " << E
     << "LL, C = " << C << "LL;\n"
     << "    const long long row = i / " << chunks << "LL, c0 = (i % " << chunks
     << "LL) * C;\n"
     << "    const " << storageType(xt) << "* x = in0 + row * D;\n"
     << "    float y[" << C << "];\n"
     << "    for (long long t = 0; t < C; ++t) y[t] = 0.0f;\n"
     << "    for (long long j = 0; j < " << k << "LL; ++j) {\n"
     << "      const int e = in1[row * " << k << "LL + j];\n"
     << "      if (e < 0 || e >= E) { tfc_report(TFC_KERNEL_ERROR_MOE_EXPERT); continue; }\n"
     << "      const float w = " << load(wt, "in2[row * E + e]") << ";\n"
     << "      const " << storageType(et) << "* w1 = w1s[e]; const "
     << storageType(et) << "* w3 = w3s[e]; const " << storageType(et)
     << "* w2 = w2s[e];\n"
     << "      for (long long f = 0; f < F; ++f) {\n"
     << moeGateUp(et, xt, "        ")
     << "        const float h = w * (g / (1.0f + expf(-g))) * u;\n"
     << "        for (long long t = 0; t < C && c0 + t < D; ++t) y[t] += h * "
     << load(et, "w2[(c0 + t) * F + f]") << ";\n"
     << "      }\n    }\n"
     << "    for (long long t = 0; t < C && c0 + t < D; ++t) out0[row * D + c0 + t] = "
     << store(yt, "y[t]") << ";\n  }\n}\n";
  return KernelSource{text, N * chunks};
}

FailureOr<KernelSource> emitMoeFfnGrad(StringRef name, MoeFfnGradOp op,
                                       ArrayRef<MemRefType> operands,
                                       ArrayRef<MemRefType> results) {
  if (failed(requireAllExperts(op)))
    return failure();
  // (x, ids, weights, dy, experts...) -> (dx, dweights, dexperts...).
  Type xt = operands[0].getElementType(), wt = operands[2].getElementType();
  Type gt = operands[3].getElementType(), et = operands[4].getElementType();
  Type dxt = results[0].getElementType(), dwt = results[1].getElementType();
  Type det = results[2].getElementType();
  int64_t N = operands[0].getDimSize(0), D = operands[0].getDimSize(1);
  int64_t k = operands[1].getDimSize(1);
  int64_t E = static_cast<int64_t>(op.getExperts().size()) / 3;
  int64_t F = operands[4].getDimSize(0);
  int64_t C = std::min(D, kMoeChunk), chunks = (D + C - 1) / C;
  int64_t tokenItems = N * chunks, items = tokenItems + E * F * chunks;
  // The backward of one (token, expert, hidden unit f), from w, x and dy:
  // a = silu(g) u; q = dy . w2[:, f]; da = w q (d out = w dy); dh1, dh3.
  auto unitGrad = [&](llvm::raw_ostream &os, StringRef indent) {
    os << moeGateUp(et, xt, indent) << indent
       << "const float s = 1.0f / (1.0f + expf(-g)), a = g * s * u;\n"
       << indent << "float q = 0.0f;\n"
       << indent << "for (long long d = 0; d < D; ++d) q += "
       << load(gt, "dy[d]") << " * " << load(et, "w2[d * F + f]") << ";\n"
       << indent << "const float da = w * q;\n"
       << indent << "const float dh1 = da * u * s * (1.0f + g * (1.0f - s)), "
       << "dh3 = da * g * s;\n";
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  expertTable(os, "w1s", E, 4, 0, et, /*result=*/false);
  expertTable(os, "w3s", E, 4, 1, et, /*result=*/false);
  expertTable(os, "w2s", E, 4, 2, et, /*result=*/false);
  expertTable(os, "dw1s", E, 2, 0, det, /*result=*/true);
  expertTable(os, "dw3s", E, 2, 1, det, /*result=*/true);
  expertTable(os, "dw2s", E, 2, 2, det, /*result=*/true);
  os << "  const long long n = " << items << "LL;\n" << kGridStride
     << "    const long long N = " << N << "LL, D = " << D << "LL, F = " << F
     << "LL, E = " << E << "LL, K = " << k << "LL, C = " << C << "LL;\n"
     << "    if (i < " << tokenItems << "LL) {\n"
     // Token row, columns [c0, c0 + C): dx = sum over its experts of dh1 w1 +
     // dh3 w3. Chunk 0 also writes dweights[row, e] = dy . (expert e's
     // output) for its experts, 0 elsewhere.
     << "      const long long row = i / " << chunks << "LL, c0 = (i % "
     << chunks << "LL) * C;\n"
     << "      const " << storageType(xt) << "* x = in0 + row * D;\n"
     << "      const " << storageType(gt) << "* dy = in3 + row * D;\n"
     << "      float dx[" << C << "];\n"
     << "      for (long long t = 0; t < C; ++t) dx[t] = 0.0f;\n"
     << "      if (c0 == 0) for (long long e = 0; e < E; ++e) out1[row * E + e] = "
     << store(dwt, "0.0f") << ";\n"
     << "      for (long long j = 0; j < K; ++j) {\n"
     << "        const int e = in1[row * K + j];\n"
     << "        if (e < 0 || e >= E) { tfc_report(TFC_KERNEL_ERROR_MOE_EXPERT); continue; }\n"
     << "        const float w = " << load(wt, "in2[row * E + e]") << ";\n"
     << "        const " << storageType(et) << "* w1 = w1s[e]; const "
     << storageType(et) << "* w3 = w3s[e]; const " << storageType(et)
     << "* w2 = w2s[e];\n"
     << "        float dot = 0.0f;\n"
     << "        for (long long f = 0; f < F; ++f) {\n";
  unitGrad(os, "          ");
  os << "          dot += a * q;\n"
     << "          for (long long t = 0; t < C && c0 + t < D; ++t) dx[t] += dh1 * "
     << load(et, "w1[f * D + c0 + t]") << " + dh3 * "
     << load(et, "w3[f * D + c0 + t]") << ";\n"
     << "        }\n"
     // The ids of a token are distinct: this adds to the 0 written above.
     << "        if (c0 == 0) out1[row * E + e] = "
     << store(dwt, load(dwt, "out1[row * E + e]") + " + dot") << ";\n"
     << "      }\n"
     << "      for (long long t = 0; t < C && c0 + t < D; ++t) out0[row * D + c0 + t] = "
     << store(dxt, "dx[t]") << ";\n"
     << "    } else {\n"
     // Expert e, hidden unit f, columns [c0, c0 + C): dw1[f, :] = sum dh1 x,
     // dw3[f, :] = sum dh3 x, dw2[:, f] = sum (w dy) a over the (token, slot)
     // pairs choosing e.
     << "      const long long at = i - " << tokenItems << "LL;\n"
     << "      const long long e = at / (F * " << chunks << "LL), f = (at / "
     << chunks << "LL) % F, c0 = (at % " << chunks << "LL) * C;\n"
     << "      const " << storageType(et) << "* w1 = w1s[e]; const "
     << storageType(et) << "* w3 = w3s[e]; const " << storageType(et)
     << "* w2 = w2s[e];\n"
     << "      float a1[" << C << "], a3[" << C << "], a2[" << C << "];\n"
     << "      for (long long t = 0; t < C; ++t) a1[t] = a3[t] = a2[t] = 0.0f;\n"
     << "      for (long long r = 0; r < N; ++r)\n"
     << "      for (long long j = 0; j < K; ++j) {\n"
     << "        if (in1[r * K + j] != e) continue;\n"
     << "        const " << storageType(xt) << "* x = in0 + r * D;\n"
     << "        const " << storageType(gt) << "* dy = in3 + r * D;\n"
     << "        const float w = " << load(wt, "in2[r * E + e]") << ";\n";
  unitGrad(os, "        ");
  os << "        for (long long t = 0; t < C && c0 + t < D; ++t) {\n"
     << "          const float xc = " << load(xt, "x[c0 + t]") << ";\n"
     << "          a1[t] += dh1 * xc; a3[t] += dh3 * xc; a2[t] += w * "
     << load(gt, "dy[c0 + t]") << " * a;\n"
     << "        }\n      }\n"
     << "      " << storageType(det) << "* dw1 = dw1s[e]; "
     << storageType(det) << "* dw3 = dw3s[e]; " << storageType(det)
     << "* dw2 = dw2s[e];\n"
     << "      for (long long t = 0; t < C && c0 + t < D; ++t) {\n"
     << "        dw1[f * D + c0 + t] = " << store(det, "a1[t]") << ";\n"
     << "        dw3[f * D + c0 + t] = " << store(det, "a3[t]") << ";\n"
     << "        dw2[(c0 + t) * F + f] = " << store(det, "a2[t]") << ";\n"
     << "      }\n    }\n  }\n}\n";
  return KernelSource{text, items};
}

/// argmax along `dim`: the first maximum (the first NaN if any, as PyTorch
/// treats NaN as the largest value), one thread per line.
FailureOr<KernelSource> emitArgmax(StringRef name, ArgmaxOp op,
                                   ArrayRef<MemRefType> operands,
                                   ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> shape = operands[0].getShape();
  int64_t rank = shape.size();
  int64_t dim = op.getDim() < 0 ? op.getDim() + rank : op.getDim();
  int64_t size = shape[dim], inner = 1;
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= shape[d];
  int64_t lines = operands[0].getNumElements() / size;
  Type e = operands[0].getElementType();
  bool isFloat = llvm::isa<FloatType>(e);
  std::string x = load(e, "in0[base + j * " + std::to_string(inner) + "LL]");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long n = " << lines << "LL;\n" << kGridStride
     << "    const long long base = (i / " << inner << "LL) * " << size * inner
     << "LL + i % " << inner << "LL;\n"
     << "    " << computeCType(e) << " best = "
     << load(e, "in0[base]") << ";\n"
     << "    long long at = 0;\n"
     << "    for (long long j = 1; j < " << size << "LL; ++j) {\n"
     << "      const " << computeCType(e) << " v = " << x << ";\n"
     << "      if (v > best" << (isFloat ? " || (v != v && best == best)" : "")
     << ") { best = v; at = j; }\n    }\n"
     << "    out0[i] = (" << storageType(results[0].getElementType())
     << ")at;\n  }\n}\n";
  return KernelSource{text, lines};
}

/// dropout: element e is kept iff tfc_k_uniform(seed, e) >= rate, and
/// scaled by 1 / (1 - rate): the CPU's mask, element for element.
FailureOr<KernelSource> emitDropout(StringRef name, DropoutOp op,
                                    ArrayRef<MemRefType> operands,
                                    ArrayRef<MemRefType> results) {
  double rate = op.getRate().convertToDouble();
  Type in = operands[0].getElementType(), out = results[0].getElementType();
  int64_t n = operands[0].getNumElements();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  const long long seed = in1[0];\n"
     << "  const long long n = " << n << "LL;\n" << kGridStride
     << "    const bool keep = tfc_uniform_float(seed, i) >= "
     << floatLiteral(static_cast<float>(rate)) << ";\n"
     << "    out0[i] = "
     << store(out, "keep ? " + load(in, "in0[i]") + " * " +
                       (rate < 1.0 ? floatLiteral(static_cast<float>(
                                         1.0 / (1.0 - rate)))
                                   : std::string("0.0f")) +
                       " : 0.0f")
     << ";\n  }\n}\n";
  return KernelSource{text, n};
}

/// kv_cache_update as tfc-lower-to-kernels plans it: the cache is updated in
/// place (the planner copies it first where it may not be), so the kernel
/// takes (update, position) and writes only the update's elements. A
/// position that does not fit writes nothing and reports.
FailureOr<KernelSource> emitKvCacheWrite(StringRef name, KvCacheUpdateOp kv,
                                         ArrayRef<MemRefType> operands,
                                         ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> cacheShape = results[0].getShape();
  ArrayRef<int64_t> space = operands[0].getShape();
  int64_t rank = cacheShape.size();
  int64_t dim = kv.getDim() < 0 ? kv.getDim() + rank : kv.getDim();
  int64_t size = cacheShape[dim], length = space[dim];
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n";
  bool perRow = operands[1].getRank() == 1;
  if (!perRow)
    os << "  const long long pos = in1[0];\n"
       << "  const bool fits = pos >= 0 && pos <= " << size - length << "LL;\n"
       << "  if (!fits && blockIdx.x == 0 && threadIdx.x == 0) "
          "tfc_report(TFC_KERNEL_ERROR_KV_POSITION);\n";
  os << "  const long long n = " << numElements(space) << "LL;\n"
     << kGridStride;
  declareCoords(os, space);
  if (perRow)
    // One position per row of dimension 0 (sequences at their own positions).
    os << "    const long long pos = in1[c0];\n"
       << "    const bool fits = pos >= 0 && pos <= " << size - length
       << "LL;\n"
       << "    if (!fits) tfc_report(TFC_KERNEL_ERROR_KV_POSITION);\n";
  SmallVector<std::string> at = coordNames(rank);
  at[dim] = "pos + c" + std::to_string(dim);
  os << "    if (fits) out0[" << offsetOf(at, stridesOf(cacheShape))
     << "] = in0[i];\n  }\n}\n";
  return KernelSource{text, numElements(space)};
}

/// kv_cache_update with blocks, in place: the kernel takes (update, position, blocks) and
/// writes the update's elements into the pool through each row's table.
KernelSource emitPagedKvWrite(StringRef name, ArrayRef<MemRefType> operands,
                              ArrayRef<MemRefType> results) {
  ArrayRef<int64_t> u = operands[0].getShape();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << signature(name, operands, results) << " {\n"
     << "  tfc_paged_kv_write(out0, in0, " << u[0] << "LL, " << u[1] << "LL, " << u[2]
     << "LL, " << u[3] << "LL, (const int*)in1, "
     << kvPages("in2", operands[2], results[0]) << ");\n}\n";
  return KernelSource{text, numElements(u)};
}

} // namespace

FailureOr<KernelSource> emitKernelSource(StringRef name, Operation *op,
                                         ArrayRef<MemRefType> operandTypes,
                                         ArrayRef<MemRefType> resultTypes,
                                         const EmitOptions &options) {
  if (failed(checkTypes(op, operandTypes)) ||
      failed(checkTypes(op, resultTypes)))
    return failure();
  if (auto cast = llvm::dyn_cast<CastOp>(op)) {
    Type to = resultTypes[0].getElementType();
    return emitPointwise(
        name, op, operandTypes, resultTypes, /*raw=*/true,
        [&](OpBuilder &b, Location loc,
            ValueRange a) -> FailureOr<SmallVector<Value>> {
          return SmallVector<Value>{scalar::castScalar(b, loc, a[0], to)};
        });
  }
  if (llvm::isa<BroadcastToOp>(op))
    return emitPointwise(
        name, op, operandTypes, resultTypes, /*raw=*/false,
        [&](OpBuilder &, Location, ValueRange a) -> FailureOr<SmallVector<Value>> {
          return SmallVector<Value>{a[0]};
        });
  if (scalar::PointwiseScalarFn fn = scalar::pointwiseScalarFn(op))
    return emitPointwise(
        name, op, operandTypes, resultTypes, /*raw=*/false,
        [&](OpBuilder &b, Location loc,
            ValueRange a) -> FailureOr<SmallVector<Value>> {
          return SmallVector<Value>{fn(b, loc, a)};
        });
  if (auto fused = llvm::dyn_cast<FusedOp>(op)) {
    if (fused.getKind() != "pointwise")
      return op->emitError("CUDA codegen: no kernel for tfc.fused \"")
             << fused.getKind() << "\" yet";
    for (MemRefType t : resultTypes)
      if (t.getShape() != resultTypes.front().getShape())
        return op->emitError("CUDA codegen: the results of a fused pointwise "
                             "kernel have one shape");
    Block &body = fused.getBody().front();
    return emitPointwise(
        name, op, operandTypes, resultTypes, /*raw=*/false,
        [&](OpBuilder &b, Location loc,
            ValueRange a) -> FailureOr<SmallVector<Value>> {
          DenseMap<Value, Value> env;
          for (auto [arg, v] : llvm::zip(body.getArguments(), a))
            env[arg] = v;
          if (failed(scalar::evaluateBody(b, loc, body, nullptr, env)))
            return failure();
          SmallVector<Value> out;
          for (Value v : llvm::cast<YieldOp>(body.getTerminator()).getValues())
            out.push_back(env.lookup(v));
          return out;
        });
  }
  if (auto r = llvm::dyn_cast<ReduceSumOp>(op))
    return emitReduce(name, op, operandTypes, resultTypes, "sum", r.getDims());
  if (auto r = llvm::dyn_cast<ReduceMeanOp>(op))
    return emitReduce(name, op, operandTypes, resultTypes, "mean",
                      r.getDims());
  if (auto r = llvm::dyn_cast<ReduceMaxOp>(op))
    return emitReduce(name, op, operandTypes, resultTypes, "max", r.getDims());
  if (auto s = llvm::dyn_cast<SoftmaxOp>(op))
    return emitSoftmax(name, op, operandTypes, resultTypes, s.getDim(),
                       /*log=*/false);
  if (auto s = llvm::dyn_cast<LogSoftmaxOp>(op))
    return emitSoftmax(name, op, operandTypes, resultTypes, s.getDim(),
                       /*log=*/true);
  if (auto ln = llvm::dyn_cast<LayerNormOp>(op))
    return emitNorm(name, op, operandTypes, resultTypes, /*center=*/true,
                    ln.getEps().convertToDouble(), bool(ln.getWeight()),
                    bool(ln.getBias()));
  if (auto rn = llvm::dyn_cast<RmsNormOp>(op))
    return emitNorm(name, op, operandTypes, resultTypes, /*center=*/false,
                    rn.getEps().convertToDouble(), bool(rn.getWeight()),
                    /*hasBias=*/false);
  if (auto mm = llvm::dyn_cast<MatmulOp>(op))
    return emitMatmul(name, mm, operandTypes, resultTypes, options);
  if (auto lin = llvm::dyn_cast<LinearOp>(op))
    return emitLinear(name, lin, operandTypes, resultTypes, options);
  if (auto a = llvm::dyn_cast<ArgmaxOp>(op))
    return emitArgmax(name, a, operandTypes, resultTypes);
  if (auto d = llvm::dyn_cast<DropoutOp>(op))
    return emitDropout(name, d, operandTypes, resultTypes);
  if (auto sample = llvm::dyn_cast<SampleOp>(op))
    return emitSample(name, sample, operandTypes, resultTypes);
  if (auto route = llvm::dyn_cast<MoeRouteOp>(op))
    return emitMoeRoute(name, route, operandTypes, resultTypes);
  if (auto moe = llvm::dyn_cast<MoeFfnOp>(op))
    return emitMoeFfn(name, moe, operandTypes, resultTypes);
  if (auto grad = llvm::dyn_cast<MoeFfnGradOp>(op))
    return emitMoeFfnGrad(name, grad, operandTypes, resultTypes);
  if (auto att = llvm::dyn_cast<AttentionOp>(op))
    return emitAttention(name, att, operandTypes, resultTypes);
  if (auto att = llvm::dyn_cast<AttentionGradOp>(op))
    return emitAttentionGrad(name, att, operandTypes, resultTypes);
  if (auto ce = llvm::dyn_cast<CrossEntropyOp>(op))
    return emitCrossEntropy(name, ce, operandTypes, resultTypes);
  if (auto ce = llvm::dyn_cast<CrossEntropyGradOp>(op))
    return emitCrossEntropyGrad(name, ce, operandTypes, resultTypes);
  if (llvm::isa<EmbeddingGradOp>(op))
    return emitEmbeddingGrad(name, operandTypes, resultTypes);
  if (auto rot = llvm::dyn_cast<RotaryOp>(op))
    return emitRotary(name, rot, operandTypes, resultTypes);
  if (auto kv = llvm::dyn_cast<KvCacheUpdateOp>(op)) {
    if (operandTypes.size() != (kv.getBlocks() ? 3u : 2u))
      return op->emitError("CUDA codegen: kv_cache_update is planned as an "
                           "in-place write of (update, position[, blocks])");
    if (kv.getBlocks())
      return emitPagedKvWrite(name, operandTypes, resultTypes);
    return emitKvCacheWrite(name, kv, operandTypes, resultTypes);
  }
  if (auto paged = llvm::dyn_cast<PagedAttentionOp>(op))
    return emitPagedAttention(name, paged, operandTypes, resultTypes);
  FailureOr<KernelSource> moved =
      emitDataMovement(name, op, operandTypes, resultTypes);
  if (succeeded(moved))
    return moved;
  return op->emitError("CUDA codegen: no kernel for '")
         << op->getName() << "' yet";
}

} // namespace tfc::cuda
