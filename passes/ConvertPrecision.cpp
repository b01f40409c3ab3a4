//===- ConvertPrecision.cpp - the tfc-convert-precision pass --------------===//
//
// Parameters and state become 16-bit, and the entries that use them compute
// in 16 bits: each op's result type is inferred again from its (now 16-bit)
// operands, in program order. The op kernels accumulate in f32 and round
// once, so this is PyTorch's `model.to(torch.bfloat16)`, not an emulation of
// it. Entry signatures do not change: casts at the arguments and returns
// keep every caller, the runtime included, as it was.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace tfc {
#define GEN_PASS_DEF_TFCCONVERTPRECISION
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;
using namespace tfc;

namespace {

RankedTensorType asTensor(Type t) { return llvm::dyn_cast<RankedTensorType>(t); }

bool isF32Tensor(Type t) {
  auto tensor = asTensor(t);
  return tensor && tensor.getElementType().isF32();
}

RankedTensorType withElement(RankedTensorType t, Type element) {
  return RankedTensorType::get(t.getShape(), element);
}

/// Converts one entry to compute in `precision`.
class EntryConverter {
public:
  EntryConverter(func::FuncOp func, Type precision, SymbolTable &symbols)
      : func(func), precision(precision), symbols(symbols) {}

  LogicalResult run() {
    Block &body = func.getBody().front();
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&body);
    for (BlockArgument arg : body.getArguments()) {
      if (!isF32Tensor(arg.getType()) || arg.use_empty())
        continue;
      Value cast = castTo(b, arg, precision);
      arg.replaceAllUsesExcept(cast, cast.getDefiningOp());
    }
    for (Operation &op : llvm::make_early_inc_range(body))
      if (failed(convert(op)))
        return failure();
    return success();
  }

private:
  Value castTo(OpBuilder &b, Value v, Type element) {
    auto type = withElement(asTensor(v.getType()), element);
    return b.create<CastOp>(v.getLoc(), type, v);
  }

  /// Casts operands that are float tensors of `from` to `to`, before `op`.
  void castOperands(Operation &op, Type from, Type to) {
    OpBuilder b(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      auto t = asTensor(operand.get().getType());
      if (t && t.getElementType() == from)
        operand.set(castTo(b, operand.get(), to));
    }
  }

  bool hasPrecisionOperand(Operation &op) {
    return llvm::any_of(op.getOperandTypes(), [&](Type t) {
      auto tensor = asTensor(t);
      return tensor && tensor.getElementType() == precision;
    });
  }

  /// Re-infers `op`'s result types from its operands; no diagnostics.
  bool reinfer(Operation &op, InferTypeOpInterface infer) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op.getContext(), std::nullopt, op.getOperands(),
            op.getAttrDictionary(), op.getPropertiesStorage(), op.getRegions(),
            types)) ||
        types.size() != op.getNumResults())
      return false;
    for (auto [result, type] : llvm::zip(op.getResults(), types))
      result.setType(type);
    return true;
  }

  LogicalResult convert(Operation &op) {
    if (auto load = llvm::dyn_cast<LoadOp>(op)) {
      Operation *symbol = symbols.lookup(load.getName());
      if (auto param = llvm::dyn_cast_or_null<ParamOp>(symbol))
        load.getResult().setType(param.getType());
      else if (auto state = llvm::dyn_cast_or_null<StateOp>(symbol))
        load.getResult().setType(state.getType());
      return success();
    }
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      OpBuilder b(&op);
      for (auto [operand, type] :
           llvm::zip(ret->getOpOperands(), func.getResultTypes()))
        if (operand.get().getType() != type)
          operand.set(b.create<CastOp>(op.getLoc(), type, operand.get()));
      return success();
    }
    if (llvm::isa<CastOp, ConstantOp>(op) || !hasPrecisionOperand(op))
      return success();
    // The loss as the f32 logits give it (what transformers computes too:
    // it upcasts the logits first), not rounded to 16 bits at the end.
    if (llvm::isa<CrossEntropyOp>(op)) {
      castOperands(op, precision, Float32Type::get(op.getContext()));
      return success();
    }
    if (auto store = llvm::dyn_cast<StoreOp>(op)) {
      Operation *symbol = symbols.lookup(store.getName());
      auto state = llvm::dyn_cast_or_null<StateOp>(symbol);
      if (state && store.getValue().getType() != state.getType())
        castOperands(op, asTensor(store.getValue().getType()).getElementType(),
                     state.getTensorType().getElementType());
      return success();
    }
    auto f32 = Float32Type::get(op.getContext());
    if (auto infer = llvm::dyn_cast<InferTypeOpInterface>(op)) {
      // Mixed operands are kept where the op takes them (rotary's f32
      // frequencies); else the f32 ones join the 16-bit computation.
      if (reinfer(op, infer))
        return success();
      castOperands(op, f32, precision);
      if (reinfer(op, infer))
        return success();
      return op.emitOpError("cannot compute in ")
             << precision << " (tfc-convert-precision)";
    }
    // Ops whose result type is their operands' (gelu, reshape, ...).
    castOperands(op, f32, precision);
    for (Value result : op.getResults())
      if (isF32Tensor(result.getType()))
        result.setType(withElement(asTensor(result.getType()), precision));
    return success();
  }

  func::FuncOp func;
  Type precision;
  SymbolTable &symbols;
};

struct TfcConvertPrecisionPass
    : tfc::impl::TfcConvertPrecisionBase<TfcConvertPrecisionPass> {
  using TfcConvertPrecisionBase::TfcConvertPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    Type type;
    if (precision == "bf16")
      type = BFloat16Type::get(context);
    else if (precision == "f16")
      type = Float16Type::get(context);
    else {
      module.emitError("tfc-convert-precision: unknown precision '")
          << precision << "' (expected bf16 or f16)";
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < func.getNumResults(); ++i) {
        if (func.getResultAttr(i, attr::kGradOf)) {
          func.emitError("tfc-convert-precision: '")
              << func.getSymName()
              << "' is a training entry; 16-bit parameters are for "
                 "generation artifacts (mixed-precision training keeps f32 "
                 "master weights)";
          return signalPassFailure();
        }
      }
    }
    for (Operation &op : module.getBody()->getOperations()) {
      if (auto param = llvm::dyn_cast<ParamOp>(op); param && isF32Tensor(param.getType()))
        param.setType(withElement(param.getTensorType(), type));
      if (auto state = llvm::dyn_cast<StateOp>(op); state && isF32Tensor(state.getType()))
        state.setType(withElement(state.getTensorType(), type));
    }
    SymbolTable symbols(module);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool usesModuleValues =
          func.walk([](Operation *op) {
                return llvm::isa<LoadOp, StoreOp>(op) ? WalkResult::interrupt()
                                                      : WalkResult::advance();
              }).wasInterrupted();
      if (!usesModuleValues)
        continue;
      if (failed(EntryConverter(func, type, symbols).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
