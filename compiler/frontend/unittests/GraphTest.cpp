//===- GraphTest.cpp - the tracing frontend's Graph and op helpers --------===//
//
// The API contract: ops are recorded with names and locations, parameters are
// declared once and loaded once per entry, and every misuse or shape error is
// a TraceError with a useful message, never an abort.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfc/AttrNames.h"
#include "compiler/frontend/Graph.h"
#include "compiler/frontend/Ops.h"
#include "dialects/tfc/TfcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace tfc::frontend;

namespace {

class GraphTest : public ::testing::Test {
protected:
  GraphTest() { loadDialects(context); }

  /// Runs `body` inside an entry with one (2, 8) f32 input and expects a
  /// TraceError whose message contains `expected`.
  void expectError(const std::string &expected,
                   std::function<void(Graph &, Tensor)> body) {
    Graph g(context);
    try {
      g.entry("f", {{"x", {2, 8}, DType::F32}}, [&](llvm::ArrayRef<Tensor> in) {
        body(g, in[0]);
        return std::vector<EntryOutput>{{"y", in[0]}};
      });
      FAIL() << "expected a TraceError containing: " << expected;
    } catch (const TraceError &e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << "message: " << e.what();
    }
  }

  mlir::MLIRContext context;
};

TEST_F(GraphTest, RecordsEntryWithNamesParamsAndLocations) {
  Graph g(context);
  g.entry("forward", {{"x", {2, 8}, DType::F32}},
          [&](llvm::ArrayRef<Tensor> in) {
            auto scope = g.scope("blk.0");
            Tensor w = g.param("w", {8, 4}, DType::F32, "normal(0.0, 0.02)");
            Tensor again = g.param("w", {8, 4}, DType::F32, "normal(0.0, 0.02)");
            EXPECT_EQ(w.value(), again.value()); // one load per entry
            Tensor y = matmul(in[0], w) * 2.0;   // (2, 4)
            EXPECT_EQ(y.shape(), llvm::ArrayRef<int64_t>({2, 4}));
            return std::vector<EntryOutput>{{"y", y}};
          });
  g.entry("other", {{"x", {8}, DType::F32}}, [&](llvm::ArrayRef<Tensor> in) {
    Tensor w = g.param("w", {8, 4}, DType::F32, "normal(0.0, 0.02)");
    return std::vector<EntryOutput>{{"z", linear(in[0], w)}};
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = g.finish();
  ASSERT_TRUE(module);
  EXPECT_EQ(llvm::range_size(module->getOps<tfc::ParamOp>()), 1u);
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward.getArgAttrOfType<mlir::StringAttr>(0, tfc::attr::kName).getValue(),
            "x");
  EXPECT_EQ(
      forward.getResultAttrOfType<mlir::StringAttr>(0, tfc::attr::kName).getValue(),
      "y");
  bool sawMatmul = false;
  forward.walk([&](tfc::MatmulOp op) {
    sawMatmul = true;
    auto loc = llvm::dyn_cast<mlir::NameLoc>(op.getLoc());
    ASSERT_TRUE(loc);
    EXPECT_EQ(loc.getName().getValue(), "blk.0");
  });
  EXPECT_TRUE(sawMatmul);
}

TEST_F(GraphTest, ShapeMismatchIsAnErrorWithScopeAndShapes) {
  expectError("at blk.3.attn: 'tfc.matmul' op contracting dimensions differ",
              [](Graph &g, Tensor x) {
                auto a = g.scope("blk.3");
                auto b = g.scope("attn");
                Tensor w = g.param("w", {4, 4}, DType::F32, "zeros");
                matmul(x, w); // (2, 8) @ (4, 4)
              });
  expectError("operands do not broadcast",
              [](Graph &g, Tensor x) { x + g.param("b", {3}, DType::F32, "zeros"); });
  expectError("cannot reshape [2, 8]",
              [](Graph &, Tensor x) { reshape(x, {3, 5}); });
  expectError("every dimension must be >= 1",
              [](Graph &, Tensor x) { reshape(x, {0, 16}); });
  expectError("must be [B, H, T, D]",
              [](Graph &, Tensor x) { attention(x, x, x); });
  expectError("'tfc.exp' op operand #0 must be",
              [](Graph &g, Tensor) { exp(iota(g, {4}, DType::I32)); });
  expectError("is not an integer",
              [](Graph &g, Tensor) { iota(g, {4}, DType::I32) * 0.5; });
}

TEST_F(GraphTest, MisuseIsAnError) {
  expectError("declared twice with different definitions",
              [](Graph &g, Tensor) {
                g.param("w", {8, 4}, DType::F32, "zeros");
                g.param("w", {4, 8}, DType::F32, "zeros");
              });
  expectError("not a declared tfc.state",
              [](Graph &g, Tensor x) { g.store("kv", x); });
  expectError("is not one of zeros, ones",
              [](Graph &g, Tensor) { g.param("w", {2}, DType::F32, "gaussian"); });

  Graph g(context);
  EXPECT_THROW(g.param("w", {2}, DType::F32, "zeros"), TraceError);
}

} // namespace
