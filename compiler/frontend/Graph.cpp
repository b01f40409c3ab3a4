//===- Graph.cpp - the tracing frontend: Graph and Tensor -----------------===//
#include "compiler/frontend/Graph.h"

#include "compiler/frontend/Ops.h"
#include "dialects/tfc/AttrNames.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace tfc::frontend {

mlir::Type toMlirType(MLIRContext *context, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return Float32Type::get(context);
  case DType::BF16:
    return BFloat16Type::get(context);
  case DType::F16:
    return Float16Type::get(context);
  case DType::I32:
    return IntegerType::get(context, 32);
  case DType::I64:
    return IntegerType::get(context, 64);
  }
  llvm_unreachable("unknown dtype");
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  llvm_unreachable("unknown dtype");
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Graph &Tensor::graph() const {
  if (!graph_)
    throw TraceError("use of an empty Tensor");
  return *graph_;
}

RankedTensorType Tensor::type() const {
  if (!value_)
    throw TraceError("use of an empty Tensor");
  return llvm::cast<RankedTensorType>(value_.getType());
}

int64_t Tensor::dim(int64_t d) const {
  auto n = normalizeDim(d, rank());
  if (!n)
    throw TraceError("dimension " + std::to_string(d) +
                     " is out of range for a tensor of shape " +
                     formatShape(shape()));
  return shape()[*n];
}

DType Tensor::dtype() const {
  Type t = type().getElementType();
  if (t.isF32())
    return DType::F32;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(32))
    return DType::I32;
  return DType::I64;
}

bool Tensor::isFloat() const {
  return llvm::isa<FloatType>(type().getElementType());
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

LogicalResult captureDiagnostics(MLIRContext *context,
                                 std::vector<std::string> &messages,
                                 llvm::function_ref<LogicalResult()> fn) {
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      messages.push_back(diag.str());
    return success();
  });
  return fn();
}

void loadDialects(MLIRContext &context) {
  context.loadDialect<TFCDialect, func::FuncDialect>();
}

Graph::Graph(MLIRContext &context)
    : context_(&context), builder_(&context) {
  if (!context.getLoadedDialect<TFCDialect>() ||
      !context.getLoadedDialect<func::FuncDialect>())
    throw TraceError("Graph needs an MLIRContext with the tfc and func "
                     "dialects loaded (see loadDialects)");
  module_ = ModuleOp::create(UnknownLoc::get(&context));
}

Graph::Scope::~Scope() {
  if (graph_)
    graph_->scopes_.pop_back();
}

Graph::Scope Graph::scope(const llvm::Twine &name) {
  scopes_.push_back(name.str());
  return Scope(*this);
}

Location Graph::loc() {
  std::string name = scopes_.empty() ? entryName_ : llvm::join(scopes_, ".");
  if (name.empty())
    return UnknownLoc::get(context_);
  return NameLoc::get(StringAttr::get(context_, name));
}

std::string Graph::where() {
  std::string s;
  if (!entryName_.empty())
    s += "in entry '" + entryName_ + "'";
  if (!scopes_.empty())
    s += (s.empty() ? "at " : " at ") + llvm::join(scopes_, ".");
  return s;
}

void Graph::fail(llvm::StringRef opName, const std::string &message) {
  std::string where = this->where();
  std::string text = where.empty() ? "" : where + ": ";
  // Op diagnostics already start with "'tfc.x' op "; add it where missing.
  if (!opName.empty() && !llvm::StringRef(message).starts_with("'"))
    text += "'" + opName.str() + "' op ";
  throw TraceError(text + message);
}

void Graph::requireEntry(llvm::StringRef what) {
  if (entryName_.empty())
    throw TraceError("'" + what.str() +
                     "' used outside an entry function (call it inside "
                     "Graph::entry)");
}

RankedTensorType Graph::tensorType(llvm::ArrayRef<int64_t> shape,
                                   Type elementType) {
  std::string prefix = where().empty() ? "" : where() + ": ";
  // 2^48 elements is far beyond any real model and keeps every product of
  // dimensions that later code forms well inside int64.
  const int64_t limit = int64_t(1) << 48;
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1)
      throw TraceError(prefix + "invalid tensor shape " + formatShape(shape) +
                       ": every dimension must be >= 1");
    if (d > limit / elements)
      throw TraceError(prefix + "tensor shape " + formatShape(shape) +
                       " has too many elements");
    elements *= d;
  }
  return RankedTensorType::get(shape, elementType);
}

RankedTensorType Graph::tensorType(llvm::ArrayRef<int64_t> shape,
                                   DType dtype) {
  return tensorType(shape, toMlirType(context_, dtype));
}

Operation *Graph::verifyNew(Operation *op) {
  if (succeeded(captured([&] { return verify(op, /*verifyRecursively=*/false); })))
    return op;
  std::string name = op->getName().getStringRef().str();
  op->erase();
  fail(name, diagnostics_.empty() ? "failed to verify" : diagnostics_[0]);
}

Tensor Graph::declareAndLoad(bool isParam, llvm::StringRef name,
                             llvm::ArrayRef<int64_t> shape, DType dtype,
                             llvm::StringRef init, bool frozen) {
  const char *kind = isParam ? "tfc.param" : "tfc.state";
  requireEntry(kind);
  if (name.empty())
    throw TraceError(std::string(kind) + " needs a name");
  RankedTensorType type = tensorType(shape, dtype);

  auto it = declared_.find(name);
  if (it != declared_.end()) {
    Operation *existing = it->second;
    bool existingIsParam = llvm::isa<ParamOp>(existing);
    Type existingType = existingIsParam
                            ? llvm::cast<ParamOp>(existing).getType()
                            : llvm::cast<StateOp>(existing).getType();
    StringRef existingInit = existingIsParam
                                 ? llvm::cast<ParamOp>(existing).getInit()
                                 : llvm::cast<StateOp>(existing).getInit();
    bool existingFrozen =
        existingIsParam && llvm::cast<ParamOp>(existing).getFrozen();
    if (existingIsParam != isParam || existingType != Type(type) ||
        existingInit != init || existingFrozen != frozen)
      throw TraceError(std::string("'") + name.str() +
                       "' is declared twice with different definitions");
  } else {
    OpBuilder decl(context_);
    // Declarations stay together at the top, in the order of first use.
    auto funcs = module_->getOps<func::FuncOp>();
    if (funcs.empty())
      decl.setInsertionPointToEnd(module_->getBody());
    else
      decl.setInsertionPoint(*funcs.begin());
    Location location = NameLoc::get(StringAttr::get(context_, name));
    SmallVector<NamedAttribute> attrs = {
        decl.getNamedAttr("sym_name", decl.getStringAttr(name)),
        decl.getNamedAttr("type", TypeAttr::get(type)),
        decl.getNamedAttr("init", decl.getStringAttr(init))};
    Operation *op;
    if (isParam) {
      if (frozen)
        attrs.push_back(decl.getNamedAttr("frozen", decl.getUnitAttr()));
      op = decl.create<ParamOp>(location, TypeRange(), ValueRange(), attrs);
    } else {
      op = decl.create<StateOp>(location, TypeRange(), ValueRange(), attrs);
    }
    verifyNew(op);
    declared_[name] = op;
  }

  auto cached = loaded_.find(name);
  if (cached != loaded_.end())
    return Tensor(this, cached->second);
  Tensor value = create<LoadOp>(
      type, {},
      {builder_.getNamedAttr("name", FlatSymbolRefAttr::get(context_, name))});
  loaded_[name] = value.value();
  return value;
}

Tensor Graph::param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    DType dtype, llvm::StringRef init, bool frozen) {
  return declareAndLoad(/*isParam=*/true, name, shape, dtype, init, frozen);
}

void Graph::shard(llvm::StringRef name, llvm::StringRef kind, int64_t blocks) {
  auto it = declared_.find(name);
  if (it == declared_.end() || !llvm::isa<ParamOp>(it->second))
    throw TraceError("shard of '" + name.str() +
                     "', which is not a declared tfc.param");
  it->second->setAttr(attr::kShard, builder_.getStringAttr(kind));
  if (blocks > 1)
    it->second->setAttr(attr::kShardBlocks, builder_.getI64IntegerAttr(blocks));
}

Tensor Graph::state(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    DType dtype, llvm::StringRef init) {
  return declareAndLoad(/*isParam=*/false, name, shape, dtype, init, false);
}

void Graph::store(llvm::StringRef name, Tensor value) {
  requireEntry("tfc.store");
  auto it = declared_.find(name);
  if (it == declared_.end() || !llvm::isa<StateOp>(it->second))
    throw TraceError("store to '" + name.str() +
                     "', which is not a declared tfc.state");
  Type declared = llvm::cast<StateOp>(it->second).getType();
  if (declared != value.value().getType())
    throw TraceError(where() + ": store of " + formatShape(value.shape()) +
                     " " + dtypeName(value.dtype()) + " to '" + name.str() +
                     "', declared as " +
                     formatShape(llvm::cast<RankedTensorType>(declared).getShape()));
  create<StoreOp>(
      Type(), value.value(),
      {builder_.getNamedAttr("name", FlatSymbolRefAttr::get(context_, name))});
  loaded_[name] = value.value();
}

void Graph::entry(llvm::StringRef name, llvm::ArrayRef<EntryInput> inputs,
                  EntryBody body) {
  if (!entryName_.empty())
    throw TraceError("entry '" + name.str() + "' started inside entry '" +
                     entryName_ + "'");
  if (module_->lookupSymbol(name))
    throw TraceError("entry '" + name.str() + "' is defined twice");

  llvm::StringSet<> inputNames;
  SmallVector<Type> inputTypes;
  for (const EntryInput &input : inputs) {
    if (input.name.empty() || !inputNames.insert(input.name).second)
      throw TraceError("entry '" + name.str() + "': input names must be "
                       "non-empty and distinct, got '" + input.name + "'");
    inputTypes.push_back(tensorType(input.shape, input.dtype));
  }

  OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToEnd(module_->getBody());
  Location location = NameLoc::get(builder_.getStringAttr(name));
  auto func = builder_.create<func::FuncOp>(
      location, name, builder_.getFunctionType(inputTypes, {}));
  for (auto [i, input] : llvm::enumerate(inputs))
    func.setArgAttr(i, attr::kName, builder_.getStringAttr(input.name));
  Block *block = func.addEntryBlock();
  builder_.setInsertionPointToStart(block);

  entryName_ = name.str();
  loaded_.clear();
  struct Reset {
    Graph &g;
    ~Reset() {
      g.entryName_.clear();
      g.loaded_.clear();
      g.scopes_.clear();
    }
  } reset{*this};

  SmallVector<Tensor> args;
  for (BlockArgument arg : block->getArguments())
    args.push_back(Tensor(this, arg));
  std::vector<EntryOutput> outputs = body(args);

  llvm::StringSet<> outputNames;
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<Attribute> resultAttrs;
  for (const EntryOutput &output : outputs) {
    if (output.name.empty() || !outputNames.insert(output.name).second)
      throw TraceError("entry '" + name.str() + "': output names must be "
                       "non-empty and distinct, got '" + output.name + "'");
    if (!output.value || &output.value.graph() != this)
      throw TraceError("entry '" + name.str() + "': output '" + output.name +
                       "' is not a tensor of this graph");
    results.push_back(output.value.value());
    resultTypes.push_back(output.value.type());
    resultAttrs.push_back(builder_.getDictionaryAttr(builder_.getNamedAttr(
        attr::kName, builder_.getStringAttr(output.name))));
  }
  builder_.create<func::ReturnOp>(location, results);
  func.setFunctionType(builder_.getFunctionType(inputTypes, resultTypes));
  func.setAllResultAttrs(resultAttrs);
}

OwningOpRef<ModuleOp> Graph::finish() {
  if (!module_)
    throw TraceError("Graph::finish called twice");
  std::vector<std::string> messages;
  if (failed(captureDiagnostics(context_, messages,
                                [&] { return verify(*module_); })))
    throw TraceError("the traced module does not verify: " +
                     (messages.empty() ? std::string("(no message)")
                                       : messages[0]));
  declared_.clear();
  return std::move(module_);
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
Tensor operator/(Tensor a, Tensor b) { return div(a, b); }
Tensor operator+(Tensor a, double b) { return add(a, scalarLike(a, b)); }
Tensor operator-(Tensor a, double b) { return sub(a, scalarLike(a, b)); }
Tensor operator*(Tensor a, double b) { return mul(a, scalarLike(a, b)); }
Tensor operator/(Tensor a, double b) { return div(a, scalarLike(a, b)); }
Tensor operator+(double a, Tensor b) { return add(scalarLike(b, a), b); }
Tensor operator-(double a, Tensor b) { return sub(scalarLike(b, a), b); }
Tensor operator*(double a, Tensor b) { return mul(scalarLike(b, a), b); }
Tensor operator/(double a, Tensor b) { return div(scalarLike(b, a), b); }
Tensor operator-(Tensor a) { return neg(a); }

} // namespace tfc::frontend
