//===- Summary.cpp - the tfc-summary pass ---------------------------------===//
//
// A read-only report of a module: what the parameters and state cost in
// memory, and what each entry function does. Used by `tfc` after compiling.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tfc-summary"

namespace tfc {
#define GEN_PASS_DEF_TFCSUMMARY
#include "passes/Passes.h.inc"
} // namespace tfc

using namespace mlir;

namespace {

int64_t byteSize(RankedTensorType t) {
  int64_t bits = t.getElementTypeBitWidth();
  return tfc::numElements(t.getShape()) * ((bits + 7) / 8);
}

std::string humanBytes(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes >= 1000000)
    os << llvm::format("%.1f MB", bytes / 1e6);
  else if (bytes >= 1000)
    os << llvm::format("%.1f kB", bytes / 1e3);
  else
    os << bytes << " B";
  return s;
}

} // namespace

namespace tfc {

static int64_t numElementsOf(RankedTensorType t) {
  return numElements(t.getShape());
}

void printModuleSummary(ModuleOp module, llvm::raw_ostream &os) {
  int64_t params = 0, paramValues = 0, paramBytes = 0, frozen = 0;
  int64_t states = 0, stateValues = 0, stateBytes = 0;
  for (auto param : module.getOps<ParamOp>()) {
    ++params;
    paramValues += numElementsOf(param.getTensorType());
    paramBytes += ::byteSize(param.getTensorType());
    frozen += param.getFrozen() ? 1 : 0;
  }
  for (auto state : module.getOps<StateOp>()) {
    ++states;
    stateValues += numElementsOf(state.getTensorType());
    stateBytes += ::byteSize(state.getTensorType());
  }
  os << "module: " << params << " parameters, " << paramValues << " values ("
     << humanBytes(paramBytes) << "), " << frozen << " frozen\n";
  os << "state: " << states << " tensors, " << stateValues << " values ("
     << humanBytes(stateBytes) << ")\n";
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate())
      continue;
    llvm::MapVector<StringRef, int64_t> histogram;
    int64_t total = 0;
    func.walk([&](Operation *op) {
      if (op == func.getOperation() || llvm::isa<func::ReturnOp>(op))
        return;
      ++total;
      ++histogram[op->getName().getStringRef()];
    });
    os << "entry @" << func.getName() << "(";
    llvm::interleaveComma(func.getArgumentTypes(), os);
    os << ") -> (";
    llvm::interleaveComma(func.getResultTypes(), os);
    os << "): " << total << " ops\n";
    auto sorted = histogram.takeVector();
    llvm::stable_sort(sorted, [](auto &a, auto &b) { return a.second > b.second; });
    os << "  ";
    llvm::interleave(
        sorted, os,
        [&](auto &entry) { os << entry.first << " x" << entry.second; }, ", ");
    os << "\n";
  }
}

} // namespace tfc

namespace {

struct TfcSummaryPass : public tfc::impl::TfcSummaryBase<TfcSummaryPass> {
  using TfcSummaryBase::TfcSummaryBase;

  void runOnOperation() override {
    if (output == "-") {
      tfc::printModuleSummary(getOperation(), llvm::outs());
      llvm::outs().flush();
      markAllAnalysesPreserved();
      return;
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      getOperation().emitError("tfc-summary: cannot write '")
          << output << "': " << ec.message();
      return signalPassFailure();
    }
    tfc::printModuleSummary(getOperation(), os);
    markAllAnalysesPreserved();
  }
};

} // namespace
