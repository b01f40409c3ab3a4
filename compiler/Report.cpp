//===- Report.cpp - `tfc --report=FILE.json` ------------------------------===//
#include "compiler/Report.h"

#include "codegen/cuda/CudaAttrs.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc {
namespace {

int64_t intAttr(mlir::Operation *op, llvm::StringRef name) {
  if (auto a = op->getAttrOfType<mlir::IntegerAttr>(name))
    return a.getInt();
  return 0;
}

/// A dictionary of integers (what the graph passes record) as an object.
void writeDecisions(llvm::json::OStream &json, mlir::Operation *op,
                    llvm::StringRef attr, llvm::StringRef key) {
  auto dict = op->getAttrOfType<mlir::DictionaryAttr>(attr);
  if (!dict)
    return;
  json.attributeObject(key, [&] {
    for (mlir::NamedAttribute entry : dict)
      if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(entry.getValue()))
        json.attribute(entry.getName().strref(), i.getInt());
  });
}

/// For a CUDA module: how many of the kernels `entry` launches are tiled
/// (their own launch shape) and which fell back to one thread an item, with
/// why (tfc-cuda-emit-kernels records both on the kernel declarations).
void writeCudaKernels(llvm::json::OStream &json, mlir::ModuleOp module,
                      mlir::func::FuncOp entry) {
  llvm::SetVector<mlir::func::FuncOp> launched; // in first-call order
  entry.walk([&](mlir::func::CallOp call) {
    auto kernel = module.lookupSymbol<mlir::func::FuncOp>(call.getCallee());
    if (kernel && kernel->hasAttr(cuda::attr::kSource))
      launched.insert(kernel);
  });
  if (launched.empty())
    return;
  int64_t tiled = 0;
  for (mlir::func::FuncOp kernel : launched)
    tiled += kernel->hasAttr(cuda::attr::kLaunch);
  json.attributeObject("cuda", [&] {
    json.attribute("tiled_kernels", tiled);
    json.attribute("grid_stride_kernels", int64_t(launched.size()) - tiled);
    json.attributeArray("fallbacks", [&] {
      for (mlir::func::FuncOp kernel : launched)
        if (auto why =
                kernel->getAttrOfType<mlir::StringAttr>(cuda::attr::kFallback))
          json.object([&] {
            json.attribute("kernel", kernel.getSymName());
            json.attribute("why", why.getValue());
          });
    });
  });
}

/// Pipeline parallelism (tfc --pp): each stage's work, memory and messages,
/// and the bubble the schedule predicts from them: with M micro-batches and
/// stage s doing c_s FLOPs a step, a step takes (M + S - 1) x max(c_s) / M
/// while the stages are busy sum(c_s) / S of it; balanced stages give
/// (S - 1) / (M + S - 1).
void writePipeline(llvm::json::OStream &json, mlir::ModuleOp module) {
  auto meta = module->getAttrOfType<mlir::StringAttr>(attr::kMetadata);
  if (!meta)
    return;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(meta.getValue());
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return;
  }
  const llvm::json::Object *object = parsed->getAsObject();
  std::optional<int64_t> stages =
      object ? object->getInteger("pp_size") : std::nullopt;
  if (!stages || *stages < 2)
    return;
  int64_t microbatches = object->getInteger("microbatches").value_or(1);
  llvm::SmallVector<mlir::func::FuncOp> entries;
  for (int64_t s = 0; s < *stages; ++s)
    for (auto f : module.getOps<mlir::func::FuncOp>())
      if (auto name = f->getAttrOfType<mlir::StringAttr>(attr::kEntry);
          name && name.getValue() == ("train_step.stage" + llvm::Twine(s)).str())
        entries.push_back(f);
  if (static_cast<int64_t>(entries.size()) != *stages)
    return;
  double total = 0, most = 0;
  for (auto f : entries) {
    double flops = static_cast<double>(intAttr(f, attr::kFlops));
    total += flops;
    most = std::max(most, flops);
  }
  const double m = static_cast<double>(microbatches),
               s = static_cast<double>(*stages);
  json.attributeObject("pipeline", [&] {
    json.attribute("stages", *stages);
    json.attribute("microbatches", microbatches);
    if (auto schedule = object->getString("pp_schedule"))
      json.attribute("schedule", *schedule);
    json.attribute("bubble_balanced", (s - 1) / (m + s - 1));
    json.attribute("bubble_predicted",
                   most > 0 ? 1 - total / (s * (m + s - 1) * most / m) : 0.0);
    json.attributeArray("per_stage", [&] {
      for (auto f : entries)
        json.object([&] {
          // The parameters the stage's program reads (each rank still
          // allocates all of them).
          int64_t paramBytes = 0;
          for (mlir::BlockArgument a : f.getArguments())
            if (f.getArgAttr(a.getArgNumber(), attr::kParamIndex))
              if (auto t = llvm::dyn_cast<mlir::MemRefType>(a.getType()))
                paramBytes += t.getNumElements() *
                              ((t.getElementTypeBitWidth() + 7) / 8);
          json.attribute("entry", f.getName());
          json.attribute("flops", intAttr(f, attr::kFlops));
          json.attribute("parameter_bytes", paramBytes);
          json.attribute("arena_bytes", intAttr(f, attr::kArenaBytes));
          json.attribute("link_bytes", intAttr(f, attr::kLinkBytes));
        });
    });
  });
}

} // namespace

void writeReport(mlir::ModuleOp module, llvm::StringRef input,
                 llvm::StringRef settings, llvm::raw_ostream &os) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("input", input);
    json.attribute("settings", settings);
    // What each process holds for the whole run (the parameters and the
    // module state: optimizer moments, KV cache, ...). The optimizer's state
    // is the `opt.*` tensors of tfc-train-step, which ZeRO-1 (tfc --zero=1)
    // keeps as one block per rank: N x smaller.
    int64_t paramBytes = 0, stateBytes = 0, optimizerBytes = 0;
    auto bytesOf = [](mlir::Type t) -> int64_t {
      auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(t);
      if (!tensor || !tensor.hasStaticShape())
        return 0;
      return tensor.getNumElements() *
             ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
    };
    for (auto param : module.getOps<ParamOp>())
      paramBytes += bytesOf(param.getType());
    for (auto state : module.getOps<StateOp>()) {
      int64_t bytes = bytesOf(state.getType());
      stateBytes += bytes;
      if (state.getSymName().starts_with("opt."))
        optimizerBytes += bytes;
    }
    json.attributeObject("memory_per_rank", [&] {
      json.attribute("parameter_bytes", paramBytes);
      json.attribute("state_bytes", stateBytes);
      json.attribute("optimizer_state_bytes", optimizerBytes);
    });
    writePipeline(json, module);
    json.attributeObject("entries", [&] {
      for (auto func : module.getOps<mlir::func::FuncOp>()) {
        auto name = func->getAttrOfType<mlir::StringAttr>(attr::kEntry);
        if (!name)
          continue;
        json.attributeObject(name.getValue(), [&] {
          int64_t read = intAttr(func, attr::kBytesRead);
          int64_t written = intAttr(func, attr::kBytesWritten);
          int64_t computeBound = intAttr(func, attr::kComputeBoundBytes);
          json.attribute("kernels", intAttr(func, attr::kNumKernels));
          json.attribute("flops", intAttr(func, attr::kFlops));
          json.attribute("bytes_read", read);
          json.attribute("bytes_written", written);
          json.attribute("bytes_moved", read + written);
          // Matmul-like kernels are bound by arithmetic; the rest by memory.
          json.attribute("bytes_moved_matmul_like", computeBound);
          json.attribute("bytes_moved_other", read + written - computeBound);
          // Collectives (tfc --dp): what one rank sends per call, by the
          // ring all-reduce's 2 (n-1)/n x bytes.
          if (func->hasAttr(attr::kLinkBytes))
            json.attribute("link_bytes", intAttr(func, attr::kLinkBytes));
          json.attribute("arena_bytes", intAttr(func, attr::kArenaBytes));
          json.attribute("live_bound_bytes",
                         intAttr(func, attr::kLiveBoundBytes));
          json.attribute("intermediate_bytes",
                         intAttr(func, attr::kIntermediateBytes));
          // Where the bytes go: per kind of kernel, most bytes first.
          if (auto byKind = func->getAttrOfType<mlir::DictionaryAttr>(
                  attr::kCostByKernel)) {
            llvm::SmallVector<std::pair<llvm::StringRef, llvm::ArrayRef<int64_t>>>
                kinds;
            for (mlir::NamedAttribute e : byKind)
              if (auto a = llvm::dyn_cast<mlir::DenseI64ArrayAttr>(e.getValue()))
                if (a.size() == 3)
                  kinds.push_back({e.getName().strref(), a.asArrayRef()});
            llvm::stable_sort(kinds, [](auto &a, auto &b) {
              return a.second[2] > b.second[2];
            });
            json.attributeArray("by_kernel", [&] {
              for (auto &[kind, v] : kinds)
                json.object([&] {
                  json.attribute("kind", kind);
                  json.attribute("count", v[0]);
                  json.attribute("flops", v[1]);
                  json.attribute("bytes_moved", v[2]);
                });
            });
          }
          writeCudaKernels(json, module, func);
          writeDecisions(json, func, attr::kFusion, "fusion");
          writeDecisions(json, func, attr::kRemat, "remat");
          writeDecisions(json, func, attr::kSchedule, "schedule");
        });
      }
    });
  });
  os << "\n";
}

} // namespace tfc
