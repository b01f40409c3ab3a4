//===- LowerToKernels.cpp - the tfc-lower-to-kernels pass -----------------===//
//
// Graph -> planned program. For each entry function, in program order:
//   tfc.load      -> the parameter/state argument (or the value stored before)
//   tfc.store     -> remembered; copied into the state argument at the end
//   tfc.reshape   -> a view of the same buffer (collapse + expand; a copy
//                    for arguments)
//   tfc.constant  -> a memref.global
//   anything else -> a call of a kernel function on its operand and result
//                    buffers; each intermediate result gets its own
//                    memref.alloc or, when returned, is the output argument.
// A kernel's body is the op itself on tensors (bufferization.to_tensor of the
// operand buffers, bufferization.materialize_in_destination into the result
// buffers): the target's codegen phase writes the code. Kernels are
// deduplicated by (op name, attributes, operand and result types). Calls of
// kernels that the target says may write over an operand carry
// `tfc.in_place_ok`. Where the buffers go is tfc-plan-memory's job
// (PlanMemory.cpp), checked by tfc-verify-memory-plan.
//
//===----------------------------------------------------------------------===//
#include "codegen/plan/Passes.h"

#include "codegen/target/Target.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"
#include "passes/CostModel.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

#define DEBUG_TYPE "tfc-lower-to-kernels"

namespace tfc::plan {
#define GEN_PASS_DEF_TFCLOWERTOKERNELS
#include "codegen/plan/Passes.h.inc"
} // namespace tfc::plan

using namespace mlir;
using namespace tfc;

namespace {

MemRefType bufferType(Type tensorType) {
  auto t = llvm::cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// `memref` viewed as 1-D (a 0-d memref as memref<1x...>).
Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = llvm::cast<MemRefType>(memref.getType());
  if (type.getRank() == 1)
    return memref;
  if (type.getRank() == 0)
    return b.create<memref::ExpandShapeOp>(
        loc, MemRefType::get({1}, type.getElementType()), memref,
        ArrayRef<ReassociationIndices>{});
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return b.create<memref::CollapseShapeOp>(
      loc, memref, SmallVector<ReassociationIndices>{all});
}

/// Refuses what this pass cannot take, with a message instead of a crash:
/// a module already planned (tfc's own `--compile-to=kernels` output fed
/// back), or an entry whose values are not ranked tensors.
LogicalResult checkGraph(ModuleOp module, ArrayRef<func::FuncOp> entries) {
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(attr::kEntry) || f->hasAttr(attr::kKernel))
      return f.emitError("tfc-lower-to-kernels: @")
             << f.getName()
             << " is already part of a planned program; this pass takes the "
                "graph (tfc compiles a planned module on from its codegen "
                "phase)";
  for (func::FuncOp f : entries) {
    auto bad = [](Type t) { return !llvm::isa<RankedTensorType>(t); };
    for (Type t : f.getFunctionType().getInputs())
      if (bad(t))
        return f.emitError("tfc-lower-to-kernels: entry @")
               << f.getName() << " takes " << t
               << "; entries take and return ranked tensors";
    for (Type t : f.getFunctionType().getResults())
      if (bad(t))
        return f.emitError("tfc-lower-to-kernels: entry @")
               << f.getName() << " returns " << t
               << "; entries take and return ranked tensors";
    WalkResult walk = f.walk([&](Operation *op) {
      if (llvm::isa<FusedOp>(op->getParentOp()))
        return WalkResult::skip();
      for (Type t : op->getResultTypes())
        if (bad(t)) {
          op->emitError("tfc-lower-to-kernels: a result of type ")
              << t << " in entry @" << f.getName()
              << "; graph values are ranked tensors";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

/// Lowers one entry function. Owns the state of the walk.
class EntryLowering {
public:
  EntryLowering(ModuleOp module, func::FuncOp graph, const Target &target,
                llvm::StringMap<func::FuncOp> &kernels,
                DenseMap<StringAttr, int64_t> &paramIndex,
                DenseMap<StringAttr, int64_t> &stateIndex)
      : module(module), graph(graph), target(target), kernels(kernels),
        paramIndex(paramIndex), stateIndex(stateIndex),
        builder(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult lowerOp(Operation *op);
  /// A fresh buffer for an intermediate: a memref.alloc that tfc-plan-memory
  /// later places in the arena.
  Value newBuffer(MemRefType type);
  /// Whether `buffer` is an intermediate (a memref.alloc or a view of one).
  bool isIntermediate(Value buffer);
  /// `buffer` seen with another shape of the same bytes: a view, not a copy.
  Value reshapeView(Value buffer, MemRefType type);
  Value resultBuffer(Value result);
  /// The kernel computing `op` from buffers of `operandTypes` into buffers
  /// of `resultTypes`; with `inPlaceCache`, kv_cache_update writing into its
  /// cache (operands: update, position, cache).
  func::FuncOp getOrCreateKernel(Operation *op, TypeRange operandTypes,
                                 TypeRange resultTypes, bool inPlaceCache);
  Value storageArg(StringAttr name);
  /// The graph values that are computed straight into the state or
  /// parameter argument they are stored to (see run()).
  void findStoresInPlace(Block &block, func::ReturnOp returnOp);

  ModuleOp module;
  func::FuncOp graph;
  const Target &target;
  llvm::StringMap<func::FuncOp> &kernels;
  DenseMap<StringAttr, int64_t> &paramIndex, &stateIndex;
  OpBuilder builder;

  func::FuncOp entry;
  int64_t numKernels = 0;
  // What the kernels do by the cost model, for --report; the bytes of
  // matmul-like kernels apart from the memory-bound rest.
  OpCost cost;
  int64_t computeBoundBytes = 0;
  // Per kind of kernel (op name; fused kernels by kind): count, cost.
  std::map<std::string, std::pair<int64_t, OpCost>> costByKind;
  void countKernel(Operation *op) {
    ++numKernels;
    OpCost c = estimateCost(op);
    cost += c;
    if (isComputeBound(op))
      computeBoundBytes += c.bytes();
    std::string kind = op->getName().stripDialect().str();
    if (auto fused = llvm::dyn_cast<FusedOp>(op))
      kind += "." + fused.getKind().str();
    auto &[count, kindCost] = costByKind[kind];
    ++count;
    kindCost += c;
  }
  DenseMap<Value, Value> buffers;           // graph value -> memref
  DenseMap<Value, Value> outputFor;         // graph value -> output arg
  DenseMap<Value, StringAttr> storeInPlace; // graph value -> symbol it is
                                            // computed into
  DenseMap<StringAttr, Value> storageArgs;  // symbol -> param/state arg
  llvm::MapVector<StringAttr, Value> stores; // symbol -> last stored value
  int64_t numConstants = 0;
};

Value EntryLowering::storageArg(StringAttr name) {
  return storageArgs.lookup(name);
}

Value EntryLowering::newBuffer(MemRefType type) {
  return builder.create<memref::AllocOp>(
      graph.getLoc(), type,
      builder.getI64IntegerAttr(target.arenaAlignment()));
}

bool EntryLowering::isIntermediate(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>())
    buffer = view.getViewSource();
  return buffer.getDefiningOp<memref::AllocOp>() != nullptr;
}

Value EntryLowering::reshapeView(Value buffer, MemRefType type) {
  Location loc = graph.getLoc();
  Value flat = flatten(builder, loc, buffer);
  if (flat.getType() == type)
    return flat;
  if (type.getRank() == 0)
    return builder.create<memref::CollapseShapeOp>(
        loc, type, flat, ArrayRef<ReassociationIndices>{});
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return builder.create<memref::ExpandShapeOp>(
      loc, type, flat, SmallVector<ReassociationIndices>{all});
}

Value EntryLowering::resultBuffer(Value result) {
  if (Value out = outputFor.lookup(result)) {
    outputFor.erase(result); // Only the first return position is written.
    return out;
  }
  if (StringAttr name = storeInPlace.lookup(result))
    return storageArg(name);
  return newBuffer(bufferType(result.getType()));
}

/// The graph ops a kernel computes, for profiles: "softmax", or for a fused
/// group its kind and body ops in order ("fused.linear: linear, add, gelu"),
/// leaving out the constants they read.
static std::string describeOps(Operation *op) {
  std::string text = op->getName().stripDialect().str();
  auto fused = llvm::dyn_cast<FusedOp>(op);
  if (!fused)
    return text;
  text += "." + fused.getKind().str() + ":";
  llvm::StringRef separator = " ";
  for (Operation &inner : fused.getBody().front().without_terminator()) {
    if (llvm::isa<ConstantOp>(inner))
      continue;
    text += separator.str() + inner.getName().stripDialect().str();
    separator = ", ";
  }
  return text;
}

func::FuncOp EntryLowering::getOrCreateKernel(Operation *op,
                                              TypeRange operandTypes,
                                              TypeRange resultTypes,
                                              bool inPlaceCache) {
  StringRef tag = inPlaceCache ? "_write" : "";
  // The key is everything the kernel's code depends on.
  std::string key;
  llvm::raw_string_ostream os(key);
  os << tag << op->getName() << op->getAttrDictionary();
  if (auto props = op->getPropertiesAsAttribute())
    os << props;
  // A fused kernel is what its body computes; printed in its own scope, the
  // body reads the same for every group with the same ops.
  if (auto fused = llvm::dyn_cast<FusedOp>(op))
    fused->print(os, OpPrintingFlags().useLocalScope());
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
  Location loc = op->getLoc();
  auto kernel = builder.create<func::FuncOp>(
      loc, name, builder.getFunctionType(argTypes, {}));
  kernel.setPrivate();
  kernel->setAttr(attr::kKernel, builder.getUnitAttr());
  // What one launch costs and computes, for the artifact's kernel table. A
  // shared kernel has one cost: its key fixes the op, attributes and shapes.
  OpCost cost = estimateCost(op);
  kernel->setAttr(attr::kKernelCost,
                  builder.getDenseI64ArrayAttr(
                      {cost.flops, cost.bytesRead, cost.bytesWritten}));
  kernel->setAttr(attr::kKernelOps, builder.getStringAttr(describeOps(op)));
  Block *body = kernel.addEntryBlock();
  builder.setInsertionPointToStart(body);
  // The op on tensors: each operand read from its buffer, each result
  // materialized into its buffer. For the in-place cache update the cache
  // buffer (the last argument) is both read and written.
  auto read = [&](Value buffer) -> Value {
    return builder.create<bufferization::ToTensorOp>(loc, buffer,
                                                     /*restrict=*/true,
                                                     /*writable=*/false);
  };
  auto args = body->getArguments();
  SmallVector<Value> reads;
  for (Value arg : inPlaceCache ? args : args.take_front(operandTypes.size()))
    reads.push_back(read(arg));
  // Operands are set by position, not mapped by value: `mul %x, %x` must
  // read its two buffers, for the kernel is shared with `mul %a, %b`.
  Operation *clone = builder.clone(*op);
  SmallVector<Value> destinations;
  if (inPlaceCache) {
    // (update, position, [blocks,] cache)
    auto kv = llvm::cast<KvCacheUpdateOp>(clone);
    kv.getUpdateMutable().assign(reads[0]);
    kv.getPositionMutable().assign(reads[1]);
    if (kv.getBlocks())
      kv.getBlocksMutable().assign(reads[2]);
    kv.getCacheMutable().assign(reads.back());
    destinations.push_back(args.back());
  } else {
    for (auto [i, value] : llvm::enumerate(reads))
      clone->setOperand(i, value);
    llvm::append_range(destinations, args.drop_front(operandTypes.size()));
  }
  for (auto [result, dest] : llvm::zip(clone->getResults(), destinations))
    builder.create<bufferization::MaterializeInDestinationOp>(
        loc, /*result=*/Type(), result, dest, /*restrict=*/true,
        /*writable=*/true);
  builder.create<func::ReturnOp>(loc);
  kernels[key] = kernel;
  return kernel;
}

void EntryLowering::findStoresInPlace(Block &block, func::ReturnOp returnOp) {
  // A stored value is computed straight into its state or parameter argument
  // (instead of into an intermediate copied back at the end of the entry)
  // when nothing reads the old value once the value's kernel has started:
  // every read of a load of the symbol made before the store comes earlier
  // in the order, or is at that kernel as a pointwise operand (read before
  // written, element by element). The value must be a kernel's result (not a
  // load, constant, reshape or kv_cache_update), the only value stored to the
  // symbol, stored nowhere else, and not returned. Stores and returns read
  // their value at the end of the entry.
  DenseMap<Operation *, int64_t> order;
  llvm::MapVector<StringAttr, SmallVector<StoreOp>> storesOf;
  DenseMap<StringAttr, SmallVector<LoadOp>> loadsOf;
  for (auto [i, op] : llvm::enumerate(block)) {
    order[&op] = i;
    if (auto s = llvm::dyn_cast<StoreOp>(op))
      storesOf[s.getNameAttr().getAttr()].push_back(s);
    else if (auto l = llvm::dyn_cast<LoadOp>(op))
      loadsOf[l.getNameAttr().getAttr()].push_back(l);
  }
  auto readAt = [&](Operation *user) -> int64_t {
    if (llvm::isa<StoreOp, func::ReturnOp>(user))
      return INT64_MAX;
    return order.lookup(block.findAncestorOpInBlock(*user));
  };
  for (auto &[name, list] : storesOf) {
    if (list.size() != 1)
      continue;
    StoreOp store = list.front();
    Value value = store.getValue();
    Operation *def = value.getDefiningOp();
    if (!def || !llvm::isa<TFCDialect>(def->getDialect()) ||
        llvm::isa<LoadOp, ConstantOp, ReshapeOp, CopyToGroupOp, KvCacheUpdateOp>(
            def) ||
        storeInPlace.count(value) ||
        llvm::any_of(value.getUsers(), [&](Operation *user) {
          return llvm::isa<func::ReturnOp>(user) ||
                 (user != store.getOperation() && llvm::isa<StoreOp>(user));
        }))
      continue;
    int64_t at = order.lookup(def), storeAt = order.lookup(store);
    bool oldValueDead = true;
    for (LoadOp load : loadsOf.lookup(name)) {
      if (order.lookup(load) > storeAt)
        continue; // Sees the stored value.
      for (Operation *user : load->getUsers()) {
        int64_t when = readAt(user);
        if (when < at || (when == at && target.mayWriteOverOperand(def)))
          continue;
        oldValueDead = false;
      }
    }
    if (oldValueDead)
      storeInPlace[value] = name;
  }
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
      // All zeros (the zero halves of a slice's gradient, 75 MB in gpt2-124m
      // at B=8 T=1024) are a global that nothing writes but that is not
      // marked constant, so that the object file stores no bytes for it
      // (zero-initialized writable data goes to .bss).
      auto value = llvm::cast<ElementsAttr>(constant.getValue());
      auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
      bool zeros = dense && dense.isSplat() &&
                   (llvm::isa<FloatType>(dense.getElementType())
                        ? dense.getSplatValue<APFloat>().isPosZero()
                        : dense.getSplatValue<APInt>().isZero());
      builder.create<memref::GlobalOp>(
          loc, name, builder.getStringAttr("private"), type, value,
          /*constant=*/!zeros,
          /*alignment=*/builder.getI64IntegerAttr(target.arenaAlignment()));
    }
    Value global = builder.create<memref::GetGlobalOp>(loc, type, name);
    if (Value out = outputFor.lookup(constant.getResult())) {
      builder.create<memref::CopyOp>(loc, global, out);
      outputFor.erase(constant.getResult());
    }
    buffers[constant] = global;
    return success();
  }
  // A reshape, and tfc.copy_to_group (the identity in the forward: its
  // all-reduce is in the gradient), are views of their operand.
  if (llvm::isa<ReshapeOp, CopyToGroupOp>(op)) {
    Value src = buffers.lookup(op->getOperand(0));
    Value result = op->getResult(0);
    auto type = bufferType(llvm::cast<RankedTensorType>(result.getType()));
    if (isIntermediate(src) && !outputFor.count(result)) {
      buffers[result] = reshapeView(src, type);
      return success();
    }
    // Arguments and outputs: copy the bytes into a buffer of the new shape.
    Value dst = resultBuffer(result);
    Value flatSrc = flatten(builder, loc, src);
    Value flatDst = flatten(builder, loc, dst);
    builder.create<memref::CopyOp>(loc, flatSrc, flatDst);
    buffers[result] = dst;
    return success();
  }

  // In-place KV cache update: the cache comes straight from a state that
  // nothing else reads after this op, and the result is stored back to the
  // same state. Reads before it are dynamic slices (serving's prefill_row
  // copies its row out, updates it, and writes it back here), which copy
  // their window out before the write: the plan runs in block order.
  if (auto kv = llvm::dyn_cast<KvCacheUpdateOp>(op)) {
    auto load = kv.getCache().getDefiningOp<LoadOp>();
    StoreOp backStore;
    for (Operation *user : kv->getUsers())
      if (auto s = llvm::dyn_cast<StoreOp>(user))
        if (load && s.getNameAttr() == load.getNameAttr())
          backStore = s;
    auto onlyEarlierSlices = [&] {
      return llvm::all_of(load->getUsers(), [&](Operation *user) {
        return user == op ||
               (llvm::isa<DynamicSliceOp>(user) &&
                user->getBlock() == op->getBlock() && user->isBeforeInBlock(op));
      });
    };
    Value dest = buffers.lookup(kv.getCache());
    bool inPlace = load && onlyEarlierSlices() && backStore &&
                   stateIndex.count(load.getNameAttr().getAttr()) &&
                   dest == storageArg(load.getNameAttr().getAttr()) &&
                   !outputFor.count(kv.getResult());
    if (!inPlace) {
      Value fresh = resultBuffer(kv.getResult());
      builder.create<memref::CopyOp>(loc, dest, fresh);
      dest = fresh;
    }
    SmallVector<Value> inputs = {buffers.lookup(kv.getUpdate()),
                                 buffers.lookup(kv.getPosition())};
    if (kv.getBlocks())
      inputs.push_back(buffers.lookup(kv.getBlocks()));
    func::FuncOp kernel = getOrCreateKernel(
        op, ValueRange(inputs).getTypes(), TypeRange{dest.getType()},
        /*inPlaceCache=*/true);
    if (!kernel)
      return failure();
    inputs.push_back(dest);
    builder.create<func::CallOp>(loc, kernel, inputs);
    countKernel(op);
    buffers[kv] = dest;
    return success();
  }

  if ((op->getNumRegions() != 0 && !llvm::isa<FusedOp>(op)) ||
      !llvm::isa<TFCDialect>(op->getDialect()))
    return op->emitError("tfc-lower-to-kernels: unexpected op '")
           << op->getName() << "' in an entry function";

  SmallVector<Value> operands, results;
  for (Value v : op->getOperands()) {
    Value buffer = buffers.lookup(v);
    if (!buffer)
      return op->emitError("tfc-lower-to-kernels: operand has no buffer");
    operands.push_back(buffer);
  }
  for (Value r : op->getResults())
    results.push_back(resultBuffer(r));
  func::FuncOp kernel =
      getOrCreateKernel(op, ValueRange(operands).getTypes(),
                        ValueRange(results).getTypes(),
                        /*inPlaceCache=*/false);
  if (!kernel)
    return failure();
  SmallVector<Value> args(operands);
  args.append(results);
  auto call = builder.create<func::CallOp>(loc, kernel, args);
  if (target.mayWriteOverOperand(op))
    call->setAttr(attr::kInPlaceOk, builder.getUnitAttr());
  countKernel(op);
  for (auto [r, buffer] : llvm::zip(op->getResults(), results))
    buffers[r] = buffer;
  return success();
}

LogicalResult EntryLowering::run() {
  if (!graph.getBody().hasOneBlock())
    return graph.emitError("tfc-lower-to-kernels: entry '")
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

  // Signature: params, states, inputs, outputs, arena (sized by
  // tfc-plan-memory).
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
    addArg(declaredType(p), attr::kParamIndex,
           builder.getI64IntegerAttr(paramIndex.lookup(p)));
  for (StringAttr s : states)
    addArg(declaredType(s), attr::kStateIndex,
           builder.getI64IntegerAttr(stateIndex.lookup(s)));
  auto graphType = graph.getFunctionType();
  auto nameOf = [&](DictionaryAttr attrs, const Twine &fallback) {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>(attr::kName))
        return n;
    return builder.getStringAttr(fallback);
  };
  for (auto [i, t] : llvm::enumerate(graphType.getInputs())) {
    addArg(bufferType(t), attr::kInputIndex, builder.getI64IntegerAttr(i));
    argAttrs.back().set(attr::kName,
                        nameOf(graph.getArgAttrDict(i), "input" + Twine(i)));
  }
  for (auto [i, t] : llvm::enumerate(graphType.getResults())) {
    addArg(bufferType(t), attr::kOutputIndex, builder.getI64IntegerAttr(i));
    argAttrs.back().set(attr::kName,
                        nameOf(graph.getResultAttrDict(i), "output" + Twine(i)));
  }
  addArg(MemRefType::get({0}, builder.getI8Type()), attr::kArena,
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
  findStoresInPlace(block, returnOp);

  for (Operation &op : block.without_terminator())
    if (failed(lowerOp(&op)))
      return failure();

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

  entry->setAttr(attr::kEntry, builder.getStringAttr(graphName));
  // No arena yet: tfc-plan-memory places the allocs in it and sets its size
  // and the memory report (tfc.intermediate_bytes, tfc.live_bound_bytes).
  entry->setAttr(attr::kArenaBytes, builder.getI64IntegerAttr(0));
  entry->setAttr(attr::kNumKernels, builder.getI64IntegerAttr(numKernels));
  entry->setAttr(attr::kFlops, builder.getI64IntegerAttr(cost.flops));
  entry->setAttr(attr::kBytesRead, builder.getI64IntegerAttr(cost.bytesRead));
  entry->setAttr(attr::kBytesWritten,
                 builder.getI64IntegerAttr(cost.bytesWritten));
  entry->setAttr(attr::kComputeBoundBytes,
                 builder.getI64IntegerAttr(computeBoundBytes));
  if (cost.linkBytes > 0)
    entry->setAttr(attr::kLinkBytes, builder.getI64IntegerAttr(cost.linkBytes));
  SmallVector<NamedAttribute> byKind;
  for (auto &[kind, entry] : costByKind)
    byKind.push_back(builder.getNamedAttr(
        kind, builder.getDenseI64ArrayAttr({entry.first, entry.second.flops,
                                            entry.second.bytes()})));
  entry->setAttr(attr::kCostByKernel, builder.getDictionaryAttr(byKind));
  // What the graph passes decided travels with the entry to the report.
  for (StringRef name : {attr::kFusion, attr::kRemat, attr::kSchedule})
    if (Attribute a = graph->getAttr(name))
      entry->setAttr(name, a);
  graph.erase();
  return success();
}

struct LowerToKernelsPass
    : public tfc::plan::impl::TfcLowerToKernelsBase<LowerToKernelsPass> {
  using TfcLowerToKernelsBase::TfcLowerToKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const Target *planTarget = lookupTarget(target);
    if (!planTarget) {
      module.emitError("tfc-lower-to-kernels: unknown target '")
          << target << "' (this build knows " << listTargets() << ")";
      return signalPassFailure();
    }
    DenseMap<StringAttr, int64_t> paramIndex, stateIndex;
    for (auto p : module.getOps<ParamOp>())
      paramIndex[p.getSymNameAttr()] = paramIndex.size();
    for (auto s : module.getOps<StateOp>())
      stateIndex[s.getSymNameAttr()] = stateIndex.size();
    SmallVector<func::FuncOp> entries;
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal())
        entries.push_back(f);
    if (failed(checkGraph(module, entries)))
      return signalPassFailure();
    module->setAttr(attr::kTarget, StringAttr::get(module.getContext(),
                                                    planTarget->name()));
    llvm::StringMap<func::FuncOp> kernels;
    for (func::FuncOp f : entries) {
      EntryLowering lowering(module, f, *planTarget, kernels, paramIndex,
                             stateIndex);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
