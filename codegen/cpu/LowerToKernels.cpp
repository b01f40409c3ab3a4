//===- LowerToKernels.cpp - the tfc-lower-to-kernels pass -----------------===//
//
// Graph -> planned program. For each entry function, in program order:
//   tfc.load      -> the parameter/state argument (or the value stored before)
//   tfc.store     -> remembered; copied into the state argument at the end
//   tfc.reshape   -> a view of the same arena bytes (a copy for arguments)
//   tfc.constant  -> a memref.global
//   anything else -> a call of a kernel function on its operand and result
//                    buffers; results live in the arena or, when returned, in
//                    the output argument directly.
// Kernels are deduplicated by (op name, attributes, operand and result types).
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "codegen/cpu/KernelEmitters.h"
#include "dialects/tfc/TfcOps.h"

#include "llvm/ADT/MapVector.h"
#include <map>
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "tfc-lower-to-kernels"

namespace tfc::cpu {
#define GEN_PASS_DEF_TFCLOWERTOKERNELS
#include "codegen/cpu/Passes.h.inc"
} // namespace tfc::cpu

using namespace mlir;
using namespace tfc;

namespace {

constexpr int64_t kAlignment = 64;

MemRefType bufferType(Type tensorType) {
  auto t = llvm::cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

int64_t byteSize(MemRefType t) {
  return numElements(t.getShape()) *
         ((t.getElementTypeBitWidth() + 7) / 8);
}

/// Lowers one entry function. Owns the state of the walk.
class EntryLowering {
public:
  EntryLowering(ModuleOp module, func::FuncOp graph,
                llvm::StringMap<func::FuncOp> &kernels,
                DenseMap<StringAttr, int64_t> &paramIndex,
                DenseMap<StringAttr, int64_t> &stateIndex)
      : module(module), graph(graph), kernels(kernels),
        paramIndex(paramIndex), stateIndex(stateIndex),
        builder(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult lowerOp(Operation *op);
  Value arenaBuffer(MemRefType type);
  /// The graph value `v` now refers to the arena bytes of `view` (a new
  /// buffer, or an alias such as a reshape): they stay allocated while any
  /// value refers to them.
  void retain(Value v, Value view);
  /// `v` is dead: its bytes return to the free list once no alias is live.
  void release(Value v);
  int64_t allocate(int64_t bytes);
  Value resultBuffer(Value result);
  func::FuncOp getOrCreateKernel(Operation *op, TypeRange operandTypes,
                                 TypeRange resultTypes, StringRef tag);
  Value storageArg(StringAttr name);

  ModuleOp module;
  func::FuncOp graph;
  llvm::StringMap<func::FuncOp> &kernels;
  DenseMap<StringAttr, int64_t> &paramIndex, &stateIndex;
  OpBuilder builder;

  func::FuncOp entry;
  Value arena;
  int64_t arenaBytes = 0;
  int64_t numKernels = 0;
  DenseMap<Value, Value> buffers;           // graph value -> memref
  DenseMap<Value, int64_t> arenaOffsets;    // memref in arena -> byte offset

  // Arena reuse by liveness: each allocation is a block shared by the values
  // that alias it; freed blocks go back to a free list (best fit, coalesced).
  struct ArenaBlock {
    int64_t offset, bytes;
    int refs = 0;
  };
  std::vector<ArenaBlock> blocks;
  DenseMap<Value, unsigned> blockOfView;  // arena view -> block
  DenseMap<Value, unsigned> blockOfValue; // graph value -> block it holds
  std::map<int64_t, int64_t> freeRanges;  // offset -> bytes
  int64_t liveBytes = 0, peakLiveBytes = 0, totalBytes = 0;
  DenseMap<Value, Value> outputFor;         // graph value -> output arg
  DenseMap<StringAttr, Value> storageArgs;  // symbol -> param/state arg
  llvm::MapVector<StringAttr, Value> stores; // symbol -> last stored value
  int64_t numConstants = 0;
};

Value EntryLowering::storageArg(StringAttr name) {
  return storageArgs.lookup(name);
}

int64_t EntryLowering::allocate(int64_t bytes) {
  // Best fit among the free ranges, else grow the arena.
  auto best = freeRanges.end();
  for (auto it = freeRanges.begin(); it != freeRanges.end(); ++it)
    if (it->second >= bytes &&
        (best == freeRanges.end() || it->second < best->second))
      best = it;
  if (best == freeRanges.end()) {
    int64_t offset = arenaBytes;
    arenaBytes += bytes;
    return offset;
  }
  int64_t offset = best->first, rest = best->second - bytes;
  freeRanges.erase(best);
  if (rest > 0)
    freeRanges[offset + bytes] = rest;
  return offset;
}

Value EntryLowering::arenaBuffer(MemRefType type) {
  Location loc = graph.getLoc();
  int64_t bytes = (byteSize(type) + kAlignment - 1) / kAlignment * kAlignment;
  int64_t offset = allocate(bytes);
  totalBytes += bytes;
  liveBytes += bytes;
  peakLiveBytes = std::max(peakLiveBytes, liveBytes);
  Value offsetValue = cpu::indexConst(builder, loc, offset);
  Value view = builder.create<memref::ViewOp>(loc, type, arena, offsetValue,
                                              ValueRange{});
  arenaOffsets[view] = offset;
  blockOfView[view] = blocks.size();
  blocks.push_back({offset, bytes});
  return view;
}

void EntryLowering::retain(Value v, Value view) {
  auto it = blockOfView.find(view);
  if (it == blockOfView.end())
    return; // Not arena memory: arguments, globals.
  blockOfValue[v] = it->second;
  ++blocks[it->second].refs;
}

void EntryLowering::release(Value v) {
  auto it = blockOfValue.find(v);
  if (it == blockOfValue.end())
    return;
  ArenaBlock &block = blocks[it->second];
  blockOfValue.erase(it);
  if (--block.refs > 0)
    return;
  liveBytes -= block.bytes;
  // Return the range and merge it with free neighbours.
  int64_t offset = block.offset, bytes = block.bytes;
  auto next = freeRanges.lower_bound(offset);
  if (next != freeRanges.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = freeRanges.erase(next);
  }
  if (next != freeRanges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  freeRanges[offset] = bytes;
}

Value EntryLowering::resultBuffer(Value result) {
  if (Value out = outputFor.lookup(result)) {
    outputFor.erase(result); // Only the first return position is written.
    return out;
  }
  return arenaBuffer(bufferType(result.getType()));
}

func::FuncOp EntryLowering::getOrCreateKernel(Operation *op,
                                              TypeRange operandTypes,
                                              TypeRange resultTypes,
                                              StringRef tag) {
  // The key is everything the emitted body depends on.
  std::string key;
  llvm::raw_string_ostream os(key);
  os << tag << op->getName() << op->getAttrDictionary();
  if (auto props = op->getPropertiesAsAttribute())
    os << props;
  for (Type t : operandTypes)
    os << "|" << t;
  os << "->";
  for (Type t : resultTypes)
    os << "|" << t;
  if (auto it = kernels.find(key); it != kernels.end())
    return it->second;

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(entry);
  SmallVector<Type> argTypes(operandTypes.begin(), operandTypes.end());
  argTypes.append(resultTypes.begin(), resultTypes.end());
  std::string name = ("k" + llvm::Twine(kernels.size()) + "_" +
                      op->getName().stripDialect() + tag)
                         .str();
  auto kernel = builder.create<func::FuncOp>(
      op->getLoc(), name, builder.getFunctionType(argTypes, {}));
  kernel.setPrivate();
  kernel->setAttr("tfc.kernel", builder.getUnitAttr());
  // Private in MLIR becomes internal in LLVM IR (func-to-llvm keeps external
  // linkage otherwise), so that LLVM may inline and specialize kernels.
  kernel->setAttr("llvm.linkage", LLVM::LinkageAttr::get(
                                      builder.getContext(),
                                      LLVM::Linkage::Internal));
  Block *body = kernel.addEntryBlock();
  builder.setInsertionPointToStart(body);
  auto args = body->getArguments();
  if (tag == "_write") {
    // kv_cache_update in place: (update, position) -> cache.
    auto kv = llvm::cast<KvCacheUpdateOp>(op);
    if (failed(cpu::emitKvCacheWrite(builder, op->getLoc(), args[0], args[1],
                                     args[2], kv.getDim())))
      return nullptr;
  } else if (failed(cpu::emitKernelBody(
                 builder, op, args.take_front(operandTypes.size()),
                 args.drop_front(operandTypes.size())))) {
    return nullptr;
  }
  builder.create<func::ReturnOp>(op->getLoc());
  kernels[key] = kernel;
  return kernel;
}

LogicalResult EntryLowering::lowerOp(Operation *op) {
  Location loc = op->getLoc();
  if (auto load = llvm::dyn_cast<LoadOp>(op)) {
    StringAttr name = load.getNameAttr().getAttr();
    if (auto it = stores.find(name); it != stores.end())
      buffers[load] = buffers.lookup(it->second);
    else
      buffers[load] = storageArg(name);
    return success();
  }
  if (auto store = llvm::dyn_cast<StoreOp>(op)) {
    stores[store.getNameAttr().getAttr()] = store.getValue();
    return success();
  }
  if (auto constant = llvm::dyn_cast<ConstantOp>(op)) {
    auto type = bufferType(constant.getType());
    std::string name =
        (entry.getName() + "_cst" + llvm::Twine(numConstants++)).str();
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(entry);
      builder.create<memref::GlobalOp>(
          loc, name, builder.getStringAttr("private"), type,
          llvm::cast<ElementsAttr>(constant.getValue()), /*constant=*/true,
          /*alignment=*/builder.getI64IntegerAttr(kAlignment));
    }
    Value global = builder.create<memref::GetGlobalOp>(loc, type, name);
    if (Value out = outputFor.lookup(constant.getResult())) {
      builder.create<memref::CopyOp>(loc, global, out);
      outputFor.erase(constant.getResult());
    }
    buffers[constant] = global;
    return success();
  }
  if (auto reshape = llvm::dyn_cast<ReshapeOp>(op)) {
    Value src = buffers.lookup(reshape.getX());
    auto type = bufferType(reshape.getType());
    auto it = arenaOffsets.find(src);
    if (it != arenaOffsets.end() && !outputFor.count(reshape.getResult())) {
      Value view = builder.create<memref::ViewOp>(
          loc, type, arena, cpu::indexConst(builder, loc, it->second),
          ValueRange{});
      arenaOffsets[view] = it->second;
      blockOfView[view] = blockOfView.lookup(src);
      buffers[reshape] = view;
      return success();
    }
    // Arguments and outputs: copy the bytes into a buffer of the new shape.
    Value dst = resultBuffer(reshape.getResult());
    Value flatSrc = cpu::flatten(builder, loc, src);
    Value flatDst = cpu::flatten(builder, loc, dst);
    builder.create<memref::CopyOp>(loc, flatSrc, flatDst);
    buffers[reshape] = dst;
    return success();
  }

  // In-place KV cache update: the cache comes straight from a state whose
  // only use is this op, and the result is stored back to the same state.
  if (auto kv = llvm::dyn_cast<KvCacheUpdateOp>(op)) {
    auto load = kv.getCache().getDefiningOp<LoadOp>();
    StoreOp backStore;
    for (Operation *user : kv->getUsers())
      if (auto s = llvm::dyn_cast<StoreOp>(user))
        if (load && s.getNameAttr() == load.getNameAttr())
          backStore = s;
    Value dest = buffers.lookup(kv.getCache());
    bool inPlace = load && load->hasOneUse() && backStore &&
                   stateIndex.count(load.getNameAttr().getAttr()) &&
                   dest == storageArg(load.getNameAttr().getAttr()) &&
                   !outputFor.count(kv.getResult());
    if (!inPlace) {
      Value fresh = resultBuffer(kv.getResult());
      builder.create<memref::CopyOp>(loc, dest, fresh);
      dest = fresh;
    }
    Value update = buffers.lookup(kv.getUpdate());
    Value position = buffers.lookup(kv.getPosition());
    func::FuncOp kernel = getOrCreateKernel(
        op, TypeRange{update.getType(), position.getType()},
        TypeRange{dest.getType()}, "_write");
    if (!kernel)
      return failure();
    builder.create<func::CallOp>(loc, kernel,
                                 ValueRange{update, position, dest});
    ++numKernels;
    buffers[kv] = dest;
    return success();
  }

  if (op->getNumRegions() != 0 || !llvm::isa<TFCDialect>(op->getDialect()))
    return op->emitError("CPU codegen: unexpected op '")
           << op->getName() << "' in an entry function";

  SmallVector<Value> operands, results;
  for (Value v : op->getOperands()) {
    Value buffer = buffers.lookup(v);
    if (!buffer)
      return op->emitError("CPU codegen: operand has no buffer");
    operands.push_back(buffer);
  }
  for (Value r : op->getResults())
    results.push_back(resultBuffer(r));
  func::FuncOp kernel =
      getOrCreateKernel(op, ValueRange(operands).getTypes(),
                        ValueRange(results).getTypes(), "");
  if (!kernel)
    return failure();
  SmallVector<Value> args(operands);
  args.append(results);
  builder.create<func::CallOp>(loc, kernel, args);
  ++numKernels;
  for (auto [r, buffer] : llvm::zip(op->getResults(), results))
    buffers[r] = buffer;
  return success();
}

LogicalResult EntryLowering::run() {
  if (!graph.getBody().hasOneBlock())
    return graph.emitError("CPU codegen: entry '")
           << graph.getName() << "' must have a single block";
  Block &block = graph.getBody().front();
  MLIRContext *ctx = module.getContext();

  // Which parameters and states does this entry touch, in module order?
  llvm::SetVector<StringAttr> usedParams, usedStates;
  graph.walk([&](Operation *op) {
    FlatSymbolRefAttr ref;
    if (auto l = llvm::dyn_cast<LoadOp>(op))
      ref = l.getNameAttr();
    else if (auto s = llvm::dyn_cast<StoreOp>(op))
      ref = s.getNameAttr();
    if (!ref)
      return;
    if (paramIndex.count(ref.getAttr()))
      usedParams.insert(ref.getAttr());
    else
      usedStates.insert(ref.getAttr());
  });
  auto byIndex = [](DenseMap<StringAttr, int64_t> &index) {
    return [&index](StringAttr a, StringAttr b) {
      return index.lookup(a) < index.lookup(b);
    };
  };
  SmallVector<StringAttr> params(usedParams.begin(), usedParams.end());
  SmallVector<StringAttr> states(usedStates.begin(), usedStates.end());
  llvm::sort(params, byIndex(paramIndex));
  llvm::sort(states, byIndex(stateIndex));

  // Signature: params, states, inputs, outputs, arena (patched at the end).
  SmallVector<Type> argTypes;
  SmallVector<NamedAttrList> argAttrs;
  auto addArg = [&](Type t, StringRef attr, Attribute value) {
    argTypes.push_back(t);
    NamedAttrList attrs;
    attrs.set(attr, value);
    argAttrs.push_back(attrs);
  };
  auto declaredType = [&](StringAttr name) -> Type {
    Operation *decl = module.lookupSymbol(name);
    if (auto p = llvm::dyn_cast<ParamOp>(decl))
      return bufferType(p.getType());
    return bufferType(llvm::cast<StateOp>(decl).getType());
  };
  for (StringAttr p : params)
    addArg(declaredType(p), "tfc.param_index",
           builder.getI64IntegerAttr(paramIndex.lookup(p)));
  for (StringAttr s : states)
    addArg(declaredType(s), "tfc.state_index",
           builder.getI64IntegerAttr(stateIndex.lookup(s)));
  auto graphType = graph.getFunctionType();
  auto nameOf = [&](DictionaryAttr attrs, const Twine &fallback) {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>("tfc.name"))
        return n;
    return builder.getStringAttr(fallback);
  };
  for (auto [i, t] : llvm::enumerate(graphType.getInputs())) {
    addArg(bufferType(t), "tfc.input_index", builder.getI64IntegerAttr(i));
    argAttrs.back().set("tfc.name",
                        nameOf(graph.getArgAttrDict(i), "input" + Twine(i)));
  }
  for (auto [i, t] : llvm::enumerate(graphType.getResults())) {
    addArg(bufferType(t), "tfc.output_index", builder.getI64IntegerAttr(i));
    argAttrs.back().set("tfc.name",
                        nameOf(graph.getResultAttrDict(i), "output" + Twine(i)));
  }
  addArg(MemRefType::get({1}, builder.getI8Type()), "tfc.arena",
         builder.getUnitAttr());

  builder.setInsertionPoint(graph);
  std::string graphName = graph.getName().str();
  graph.setName(graphName + ".graph");
  entry = builder.create<func::FuncOp>(graph.getLoc(), graphName,
                                       builder.getFunctionType(argTypes, {}));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    entry.setArgAttrs(i, attrs.getDictionary(ctx));
  Block *body = entry.addEntryBlock();
  builder.setInsertionPointToStart(body);

  unsigned next = 0;
  for (StringAttr p : params)
    storageArgs[p] = body->getArgument(next++);
  for (StringAttr s : states)
    storageArgs[s] = body->getArgument(next++);
  for (BlockArgument a : block.getArguments())
    buffers[a] = body->getArgument(next++);
  auto returnOp = llvm::cast<func::ReturnOp>(block.getTerminator());
  unsigned firstOutput = next;
  for (auto [i, v] : llvm::enumerate(returnOp.getOperands()))
    if (!outputFor.count(v) && !llvm::isa<BlockArgument>(v))
      outputFor[v] = body->getArgument(firstOutput + i);
  next += returnOp.getNumOperands();
  arena = body->getArgument(next);

  // Last use of every value in program order; returned and stored values
  // live to the end.
  DenseMap<Value, int64_t> lastUse;
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (auto [i, op] : llvm::enumerate(ops)) {
    int64_t use = llvm::isa<StoreOp>(op) ? INT64_MAX : (int64_t)i;
    for (Value v : op->getOperands())
      lastUse[v] = std::max(lastUse.lookup(v), use);
  }
  for (Value v : returnOp.getOperands())
    lastUse[v] = INT64_MAX;

  for (auto [i, op] : llvm::enumerate(ops)) {
    if (failed(lowerOp(op)))
      return failure();
    for (Value r : op->getResults())
      retain(r, buffers.lookup(r));
    // Operands used for the last time, and results nobody reads, free their
    // bytes for the ops that follow (never for this op's own results).
    for (Value v : op->getOperands())
      if (lastUse.lookup(v) == (int64_t)i)
        release(v);
    for (Value r : op->getResults())
      if (!lastUse.count(r))
        release(r);
  }

  Location loc = graph.getLoc();
  // Outputs not written in place (inputs, loaded params, values returned
  // twice) are copied.
  for (auto [i, v] : llvm::enumerate(returnOp.getOperands())) {
    Value out = body->getArgument(firstOutput + i);
    Value buffer = buffers.lookup(v);
    if (buffer != out)
      builder.create<memref::CopyOp>(loc, buffer, out);
  }
  // Stored state goes back to its argument unless it was updated in place.
  for (auto [name, value] : stores) {
    Value buffer = buffers.lookup(value);
    Value target = storageArg(name);
    if (buffer != target)
      builder.create<memref::CopyOp>(loc, buffer, target);
  }
  builder.create<func::ReturnOp>(loc);

  // The arena's real size is known only now.
  int64_t size = std::max<int64_t>(arenaBytes, kAlignment);
  auto arenaType = MemRefType::get({size}, builder.getI8Type());
  arena.setType(arenaType);
  argTypes.back() = arenaType;
  entry.setFunctionType(builder.getFunctionType(argTypes, {}));
  entry->setAttr("tfc.entry", builder.getStringAttr(graphName));
  entry->setAttr("tfc.arena_bytes", builder.getI64IntegerAttr(size));
  entry->setAttr("tfc.num_kernels", builder.getI64IntegerAttr(numKernels));
  // The memory report: every intermediate's bytes added up, the most bytes
  // live at once in this order (a lower bound for any placement), and the
  // arena actually planned.
  entry->setAttr("tfc.intermediate_bytes", builder.getI64IntegerAttr(totalBytes));
  entry->setAttr("tfc.live_bound_bytes", builder.getI64IntegerAttr(peakLiveBytes));
  graph.erase();
  return success();
}

struct LowerToKernelsPass
    : public tfc::cpu::impl::TfcLowerToKernelsBase<LowerToKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DenseMap<StringAttr, int64_t> paramIndex, stateIndex;
    for (auto p : module.getOps<ParamOp>())
      paramIndex[p.getSymNameAttr()] = paramIndex.size();
    for (auto s : module.getOps<StateOp>())
      stateIndex[s.getSymNameAttr()] = stateIndex.size();
    SmallVector<func::FuncOp> entries;
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal())
        entries.push_back(f);
    llvm::StringMap<func::FuncOp> kernels;
    for (func::FuncOp f : entries) {
      EntryLowering lowering(module, f, kernels, paramIndex, stateIndex);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
