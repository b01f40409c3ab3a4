//===- IRDumper.cpp - one numbered file per pass --------------------------===//
#include "compiler/IRDumper.h"
#include "support/OutputFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc {

static llvm::Error writeModule(const std::string &path, mlir::Operation *op) {
  return writeOutput(path, [&](llvm::raw_ostream &os) {
    op->print(os);
    os << "\n";
    return llvm::Error::success();
  });
}

static std::string numbered(const std::string &dir, unsigned index,
                            llvm::StringRef name) {
  llvm::SmallString<256> path(dir);
  std::string file;
  llvm::raw_string_ostream(file)
      << llvm::format("%02u-", index) << name << ".mlir";
  llvm::sys::path::append(path, file);
  return std::string(path);
}

llvm::Error startIRDump(const std::string &dir, mlir::ModuleOp module) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(ec, "cannot create dump directory '%s': %s",
                                   dir.c_str(), ec.message().c_str());
  return writeModule(numbered(dir, 0, "input"), module);
}

namespace {
class IRDumpInstrumentation : public mlir::PassInstrumentation {
public:
  IRDumpInstrumentation(std::string dir, std::shared_ptr<unsigned> counter)
      : dir(std::move(dir)), counter(std::move(counter)) {}

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    // Nested pass managers run per function; dump the whole module so that
    // every file is a complete, parseable module.
    mlir::Operation *top = op;
    while (top->getParentOp())
      top = top->getParentOp();
    llvm::StringRef name = pass->getArgument();
    if (name.empty())
      name = pass->getName();
    if (llvm::Error err = writeModule(numbered(dir, ++*counter, name), top)) {
      if (!reported)
        llvm::errs() << "tfc: warning: --dump-ir: "
                     << llvm::toString(std::move(err)) << "\n";
      else
        llvm::consumeError(std::move(err));
      reported = true;
    }
  }

private:
  std::string dir;
  std::shared_ptr<unsigned> counter;
  bool reported = false;
};
} // namespace

std::unique_ptr<mlir::PassInstrumentation>
createIRDumpInstrumentation(const std::string &dir,
                            std::shared_ptr<unsigned> counter) {
  return std::make_unique<IRDumpInstrumentation>(dir, std::move(counter));
}

} // namespace tfc
