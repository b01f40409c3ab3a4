//===- Graph.h - the tracing frontend: Graph and Tensor ---------*- C++ -*-===//
//
// A model is ordinary C++ over `Tensor`s. Every operation on a Tensor records
// one tfc op into the entry function being built; `Graph` owns the module, the
// module-level parameters and state, and the entry functions.
//
//   mlir::MLIRContext context;           // tfc and func dialects loaded
//   Graph g(context);
//   g.entry("forward", {{"x", {2, 8}, DType::F32}}, [&](ArrayRef<Tensor> in) {
//     Tensor w = g.param("w", {8, 4}, DType::F32, "normal(0.0, 0.02)");
//     return std::vector<EntryOutput>{{"y", matmul(in[0], w)}};
//   });
//   mlir::OwningOpRef<mlir::ModuleOp> module = g.finish();
//
// Errors (a shape that does not fit, a name declared twice with two types, a
// use outside an entry) throw `TraceError` with a message that names the op,
// the scope it was recorded in and the shapes involved. Nothing aborts.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_FRONTEND_GRAPH_H
#define TFC_COMPILER_FRONTEND_GRAPH_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tfc::frontend {

/// The one error type of the frontend: bad model configs, shapes that do not
/// fit, misuse of the Graph API. tfc-trace catches it and prints the message.
class TraceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Element types of tfc tensors.
enum class DType { F32, BF16, F16, I32, I64 };

mlir::Type toMlirType(mlir::MLIRContext *context, DType dtype);
/// "f32", "bf16", ...
const char *dtypeName(DType dtype);

using Shape = llvm::SmallVector<int64_t, 4>;

class Graph;

/// Loads the dialects a Graph records into (tfc, func). Tracing needs no
/// passes, so tools that only trace need not link them.
void loadDialects(mlir::MLIRContext &context);

/// A tensor value of the entry function being traced. Cheap to copy.
class Tensor {
public:
  Tensor() = default;
  Tensor(Graph *graph, mlir::Value value) : graph_(graph), value_(value) {}

  mlir::Value value() const { return value_; }
  Graph &graph() const;
  mlir::RankedTensorType type() const;
  llvm::ArrayRef<int64_t> shape() const { return type().getShape(); }
  int64_t rank() const { return type().getRank(); }
  /// Size of dimension `d`; negative counts from the end.
  int64_t dim(int64_t d) const;
  DType dtype() const;
  bool isFloat() const;
  explicit operator bool() const { return static_cast<bool>(value_); }

private:
  Graph *graph_ = nullptr;
  mlir::Value value_;
};

/// An input of an entry function: its name (recorded as the `tfc.name`
/// argument attribute, by which the runtime binds `.npy` files), shape, type.
struct EntryInput {
  std::string name;
  Shape shape;
  DType dtype;
};

/// A named result of an entry function (`tfc.name` result attribute).
struct EntryOutput {
  std::string name;
  Tensor value;
};

using EntryBody =
    llvm::function_ref<std::vector<EntryOutput>(llvm::ArrayRef<Tensor>)>;

/// Owns one module under construction and the builder that records ops.
class Graph {
public:
  /// `context` must have the tfc and func dialects loaded.
  explicit Graph(mlir::MLIRContext &context);
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// Declares the module-level `tfc.param` `name` (once; a second declaration
  /// must agree) and returns its value in the current entry (one `tfc.load`
  /// per entry). `init` uses the tfc.param grammar, e.g. "normal(0.0, 0.02)".
  Tensor param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               DType dtype, llvm::StringRef init, bool frozen = false);
  /// Marks the declared parameter `name` with how Megatron-LM's tensor
  /// parallelism splits it (tfc.shard: "column" or "row"; `blocks` > 1: a
  /// fused column weight made of `blocks` equal outputs, each split alike).
  /// Only tfc-tensor-parallel (tfc --tp) acts on it.
  void shard(llvm::StringRef name, llvm::StringRef kind, int64_t blocks = 1);
  /// Same for mutable module state (KV caches, optimizer moments).
  Tensor state(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               DType dtype, llvm::StringRef init);
  /// Writes a declared state; later reads of `name` in this entry see `value`.
  void store(llvm::StringRef name, Tensor value);

  /// Builds the public entry function `name(inputs) -> outputs of body`.
  void entry(llvm::StringRef name, llvm::ArrayRef<EntryInput> inputs,
             EntryBody body);

  /// Verifies the module and hands it over. The Graph is empty afterwards.
  mlir::OwningOpRef<mlir::ModuleOp> finish();

  /// Names the ops recorded while it lives: scopes nest with '.', so that
  /// `auto s = g.scope("h.3"); auto a = g.scope("attn");` gives ops the
  /// location `loc("h.3.attn")`.
  class [[nodiscard]] Scope {
  public:
    explicit Scope(Graph &graph) : graph_(&graph) {}
    Scope(Scope &&other) : graph_(other.graph_) { other.graph_ = nullptr; }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;
    ~Scope();

  private:
    Graph *graph_;
  };
  Scope scope(const llvm::Twine &name);
  /// The location of the next recorded op: the current scope (or the entry).
  mlir::Location loc();

  mlir::MLIRContext *context() { return context_; }

  /// Records an op whose result type the op infers (InferTypeOpAdaptor). The
  /// inference runs first; a failure becomes a TraceError, never an abort.
  template <typename OpTy>
  Tensor infer(mlir::ValueRange operands,
               llvm::ArrayRef<mlir::NamedAttribute> attributes = {});
  /// Records an op with the given result type (null: no result) and verifies
  /// it.
  template <typename OpTy>
  Tensor create(mlir::Type resultType, mlir::ValueRange operands,
                llvm::ArrayRef<mlir::NamedAttribute> attributes = {});

  /// A ranked tensor type; throws for a dimension < 1.
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    DType dtype);
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type elementType);

private:
  friend class Scope;
  void requireEntry(llvm::StringRef what);
  Tensor declareAndLoad(bool isParam, llvm::StringRef name,
                        llvm::ArrayRef<int64_t> shape, DType dtype,
                        llvm::StringRef init, bool frozen);
  /// Verifies a just-created op; on failure erases it and throws.
  mlir::Operation *verifyNew(mlir::Operation *op);
  [[noreturn]] void fail(llvm::StringRef opName, const std::string &message);
  std::string where();

  mlir::MLIRContext *context_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::OpBuilder builder_;
  std::string entryName_;                  // empty outside an entry
  std::vector<std::string> scopes_;
  llvm::StringMap<mlir::Operation *> declared_; // tfc.param / tfc.state
  llvm::StringMap<mlir::Value> loaded_;         // per entry
  /// Diagnostics emitted while checking one op.
  std::vector<std::string> diagnostics_;

  /// Runs `fn` with diagnostics captured into diagnostics_.
  template <typename Fn>
  mlir::LogicalResult captured(Fn &&fn);
};

//===----------------------------------------------------------------------===//
// Template implementations
//===----------------------------------------------------------------------===//

mlir::LogicalResult captureDiagnostics(mlir::MLIRContext *context,
                                       std::vector<std::string> &messages,
                                       llvm::function_ref<mlir::LogicalResult()> fn);

template <typename Fn>
mlir::LogicalResult Graph::captured(Fn &&fn) {
  diagnostics_.clear();
  return captureDiagnostics(context_, diagnostics_, fn);
}

template <typename OpTy>
Tensor Graph::infer(mlir::ValueRange operands,
                    llvm::ArrayRef<mlir::NamedAttribute> attributes) {
  llvm::StringRef opName = OpTy::getOperationName();
  requireEntry(opName);
  mlir::Location location = loc();
  mlir::OperationState state(location, opName, operands, {}, attributes);
  mlir::DictionaryAttr dict = state.attributes.getDictionary(context_);
  using Props = typename mlir::PropertiesSelector<OpTy>::type;
  llvm::SmallVector<mlir::Type, 1> types;
  mlir::LogicalResult inferred = captured([&]() -> mlir::LogicalResult {
    if constexpr (!std::is_same_v<Props, mlir::EmptyProperties>) {
      Props &props = state.getOrAddProperties<Props>();
      if (mlir::failed(OpTy::setPropertiesFromAttr(
              props, dict, [&] { return mlir::emitError(location); })))
        return mlir::failure();
    }
    return OpTy::inferReturnTypes(context_, location, state.operands, dict,
                                  state.getRawProperties(), {}, types);
  });
  if (mlir::failed(inferred))
    fail(opName, diagnostics_.empty() ? "invalid operands" : diagnostics_[0]);
  state.addTypes(types);
  mlir::Operation *op = verifyNew(builder_.create(state));
  return Tensor(this, op->getResult(0));
}

template <typename OpTy>
Tensor Graph::create(mlir::Type resultType, mlir::ValueRange operands,
                     llvm::ArrayRef<mlir::NamedAttribute> attributes) {
  requireEntry(OpTy::getOperationName());
  mlir::TypeRange types = resultType ? mlir::TypeRange(resultType)
                                     : mlir::TypeRange();
  auto op = builder_.create<OpTy>(loc(), types, operands, attributes);
  verifyNew(op);
  if (!resultType)
    return Tensor();
  return Tensor(this, op->getResult(0));
}

//===----------------------------------------------------------------------===//
// Arithmetic with NumPy broadcasting. A scalar becomes a 0-d tfc.constant of
// the tensor's element type.
//===----------------------------------------------------------------------===//

Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator+(Tensor a, double b);
Tensor operator-(Tensor a, double b);
Tensor operator*(Tensor a, double b);
Tensor operator/(Tensor a, double b);
Tensor operator+(double a, Tensor b);
Tensor operator-(double a, Tensor b);
Tensor operator*(double a, Tensor b);
Tensor operator/(double a, Tensor b);
Tensor operator-(Tensor a);

} // namespace tfc::frontend

#endif // TFC_COMPILER_FRONTEND_GRAPH_H
