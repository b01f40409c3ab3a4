//===- LaunchKernels.cpp - the tfc-cuda-launch-kernels pass ---------------===//
//
// The host half of a CUDA artifact, in the LLVM dialect, where a buffer is a
// pointer. Entries stay host code that computes device addresses (views of
// the arena) but never dereferences one; what they did to memory becomes a
// request to the runtime through the kernel library's device_* forwards:
//
//   - each kernel declaration (`tfc.device_kernel_index`) gets a body that
//     packs its pointer arguments and its launch shape (tfc_device_launch_t)
//     into stack arrays and calls
//       tfc_kernels_device_launch(index, &shape, args, num_args)
//     with the kernel's own shape (`tfc.cuda.launch`, a tiled kernel) or a
//     1-D grid of `block`-thread blocks covering `tfc.cuda.threads` work
//     items (the kernels loop grid-stride, so a capped grid is correct); a
//     product kernel (`tfc.cuda.library_product`) first offers its product
//     to the runtime's library with
//       tfc_kernels_device_matmul(&product, a, b, c, bias)
//     and launches only when that returns non-zero (declined);
//   - a copy (llvm.intr.memcpy: the memory plan's copies of returned inputs,
//     stored state, caches not updated in place) becomes
//       tfc_kernels_device_copy(dst, src, bytes);
//   - the address of a global becomes
//       tfc_kernels_device_constant(host address, bytes)
//     (the runtime's device copy of it, uploaded once; entries only read
//     globals: constants, and all-zero ones that are not marked constant so
//     that they take no bytes in the artifact), except a collective's group
//     name, which the host reads.
// Anything else that touches memory in an entry is an error at its location.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Passes.h"

#include "codegen/cuda/CudaAttrs.h"
#include "dialects/tfc/AttrNames.h"
#include "tfc/artifact_abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include <cstddef>

namespace tfc::cuda {
#define GEN_PASS_DEF_TFCCUDALAUNCHKERNELS
#include "codegen/cuda/Passes.h.inc"
} // namespace tfc::cuda

using namespace mlir;
using namespace tfc;

namespace {

constexpr llvm::StringLiteral kLaunch = "tfc_kernels_device_launch";
constexpr llvm::StringLiteral kCopy = "tfc_kernels_device_copy";
constexpr llvm::StringLiteral kConstant = "tfc_kernels_device_constant";
constexpr llvm::StringLiteral kMatmul = "tfc_kernels_device_matmul";

// The stub builds tfc_device_launch_t as seven i32s.
static_assert(sizeof(tfc_device_launch_t) == 7 * sizeof(uint32_t) &&
                  offsetof(tfc_device_launch_t, block) == 3 * sizeof(uint32_t) &&
                  offsetof(tfc_device_launch_t, shared_bytes) == 6 * sizeof(uint32_t),
              "tfc_device_launch_t is no longer seven uint32_t");
// The stub builds tfc_device_matmul_t as eight i32s and six i64s.
static_assert(sizeof(tfc_device_matmul_t) == 8 * sizeof(int32_t) + 6 * sizeof(int64_t) &&
                  offsetof(tfc_device_matmul_t, batch) == 8 * sizeof(int32_t) &&
                  offsetof(tfc_device_matmul_t, stride_b) == 8 * sizeof(int32_t) +
                                                                5 * sizeof(int64_t),
              "tfc_device_matmul_t is no longer eight int32_t and six int64_t");

/// Threads per block, and the most blocks a launch asks for: past that the
/// grid-stride loops take several items per thread.
constexpr int64_t kBlockThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16;

struct LaunchKernelsPass
    : public tfc::cuda::impl::TfcCudaLaunchKernelsBase<LaunchKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SymbolTable symbols(module);
    OpBuilder b(ctx);
    ptr = LLVM::LLVMPointerType::get(ctx);
    i32 = IntegerType::get(ctx, 32);
    i64 = IntegerType::get(ctx, 64);
    Type voidType = LLVM::LLVMVoidType::get(ctx);

    auto declare = [&](StringRef name, Type result, ArrayRef<Type> params) {
      if (auto fn = symbols.lookup<LLVM::LLVMFuncOp>(name))
        return fn;
      b.setInsertionPointToEnd(module.getBody());
      auto fn = b.create<LLVM::LLVMFuncOp>(
          module.getLoc(), name, LLVM::LLVMFunctionType::get(result, params));
      symbols.insert(fn);
      return fn;
    };

    SmallVector<LLVM::LLVMFuncOp> kernels, hosts;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      if (fn->hasAttr(attr::kDeviceKernelIndex))
        kernels.push_back(fn);
      else if (!fn.isExternal())
        hosts.push_back(fn);
    }
    if (kernels.empty())
      return;
    LLVM::LLVMFuncOp launch =
        declare(kLaunch, voidType, {i32, ptr, ptr, i32});
    if (llvm::any_of(kernels, [](LLVM::LLVMFuncOp kernel) {
          return kernel->hasAttr(cuda::attr::kLibraryProduct);
        }))
      matmul = declare(kMatmul, i32, {ptr, ptr, ptr, ptr, ptr});
    for (LLVM::LLVMFuncOp kernel : kernels)
      if (failed(buildLaunchStub(kernel, launch, b)))
        return signalPassFailure();

    LLVM::LLVMFuncOp copy = declare(kCopy, voidType, {ptr, ptr, i64});
    LLVM::LLVMFuncOp constant = declare(kConstant, ptr, {ptr, i64});
    DataLayout layout(module);
    for (LLVM::LLVMFuncOp host : hosts)
      if (failed(redirectMemory(host, copy, constant, symbols, layout, b)))
        return signalPassFailure();
  }

  /// kernel(p0, ..., pn-1) {
  ///   shape = {grid, block, shared}; args = {p0, ..., pn-1};
  ///   launch(index, &shape, args, n)
  /// }
  LogicalResult buildLaunchStub(LLVM::LLVMFuncOp kernel,
                                LLVM::LLVMFuncOp launch, OpBuilder &b) {
    Location loc = kernel.getLoc();
    auto index = kernel->getAttrOfType<IntegerAttr>(attr::kDeviceKernelIndex);
    auto threads = kernel->getAttrOfType<IntegerAttr>(cuda::attr::kThreads);
    if (!index || !threads || threads.getInt() < 1)
      return kernel.emitError("a CUDA kernel needs ")
             << attr::kDeviceKernelIndex << " and a positive "
             << cuda::attr::kThreads;
    ArrayRef<Type> params = kernel.getFunctionType().getParams();
    for (Type t : params)
      if (t != ptr)
        return kernel.emitError("CUDA kernel @")
               << kernel.getName() << " takes a " << t
               << "; kernels take buffers only";
    if (params.size() > TFC_DEVICE_MAX_KERNEL_ARGS)
      return kernel.emitError("CUDA kernel @")
             << kernel.getName() << " takes " << params.size()
             << " buffers; a kernel takes at most " << TFC_DEVICE_MAX_KERNEL_ARGS
             << " (CUDA's 4 KiB of parameters)";
    if (!llvm::isa<LLVM::LLVMVoidType>(kernel.getFunctionType().getReturnType()))
      return kernel.emitError("CUDA kernel @")
             << kernel.getName() << " returns a value";
    SmallVector<int64_t, 7> shape;
    if (auto fixed = kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::attr::kLaunch)) {
      shape.assign(fixed.asArrayRef().begin(), fixed.asArrayRef().end());
      auto positive = [&](size_t i) { return shape[i] >= 1 && shape[i] <= UINT32_MAX; };
      if (shape.size() != 7 || !positive(0) || !positive(1) || !positive(2) ||
          !positive(3) || !positive(4) || !positive(5) ||
          shape[3] * shape[4] * shape[5] > 1024 || shape[6] < 0 || shape[6] > UINT32_MAX)
        return kernel.emitError("CUDA kernel @")
               << kernel.getName() << ": " << cuda::attr::kLaunch
               << " must be a grid and a block of positive sizes (at most 1024 "
                  "threads a block) and the dynamic shared bytes";
    } else {
      int64_t n = threads.getInt();
      int64_t block = std::min(kBlockThreads, (n + 31) / 32 * 32);
      int64_t grid = std::min(kMaxBlocks, (n + block - 1) / block);
      shape = {grid, 1, 1, block, 1, 1, 0};
    }

    auto product =
        kernel->getAttrOfType<DenseI64ArrayAttr>(cuda::attr::kLibraryProduct);
    if (product && (product.size() != 14 ||
                    params.size() != (product[3] != 0 ? 4u : 3u)))
      return kernel.emitError("CUDA kernel @")
             << kernel.getName() << ": " << cuda::attr::kLibraryProduct
             << " must be the fourteen fields of tfc_device_matmul_t, on a "
                "kernel of A, B, the bias if any, and C";

    kernel.setLinkage(LLVM::Linkage::Internal);
    Block *entry = kernel.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    if (product) {
      // Offered to the host's library first; launched when it declines.
      Block *launchBlock = new Block, *done = new Block;
      kernel.getBody().push_back(launchBlock);
      kernel.getBody().push_back(done);
      Value taken = offerProduct(loc, product.asArrayRef(),
                                 entry->getArguments(), b);
      b.create<LLVM::CondBrOp>(loc, taken, done, launchBlock);
      b.setInsertionPointToStart(done);
      b.create<LLVM::ReturnOp>(loc, ValueRange{});
      b.setInsertionPointToStart(launchBlock);
    }
    auto arrayType = LLVM::LLVMArrayType::get(ptr, std::max<size_t>(1, params.size()));
    Value one = b.create<LLVM::ConstantOp>(loc, i64, 1);
    Value args = b.create<LLVM::AllocaOp>(loc, ptr, arrayType, one);
    for (unsigned i = 0; i < params.size(); ++i) {
      Value slot = b.create<LLVM::GEPOp>(
          loc, ptr, arrayType, args,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      b.create<LLVM::StoreOp>(loc, entry->getArgument(i), slot);
    }
    auto c32 = [&](int64_t v) -> Value {
      return b.create<LLVM::ConstantOp>(loc, i32, v);
    };
    auto shapeType = LLVM::LLVMArrayType::get(i32, 7);
    Value shapeSlot = b.create<LLVM::AllocaOp>(loc, ptr, shapeType, one);
    for (unsigned i = 0; i < 7; ++i) {
      Value slot = b.create<LLVM::GEPOp>(
          loc, ptr, shapeType, shapeSlot,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      b.create<LLVM::StoreOp>(loc, c32(shape[i]), slot);
    }
    b.create<LLVM::CallOp>(
        loc, launch,
        ValueRange{c32(index.getInt()), shapeSlot, args,
                   c32(static_cast<int64_t>(params.size()))});
    b.create<LLVM::ReturnOp>(loc, ValueRange{});
    // The source went to the device image; LLVM IR has no use for these.
    for (StringRef name : {cuda::attr::kSource.data(), cuda::attr::kThreads.data(),
                           cuda::attr::kLaunch.data(), cuda::attr::kLibraryProduct.data(),
                           attr::kDeviceKernelIndex.data()})
      kernel->removeAttr(name);
    return success();
  }

  /// desc = {fields}; taken = tfc_kernels_device_matmul(&desc, a, b, c,
  /// bias) == 0, for a kernel of (a, b, [bias,] c).
  Value offerProduct(Location loc, ArrayRef<int64_t> fields,
                     ValueRange args, OpBuilder &b) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Type, 14> members(8, i32);
    members.append(6, i64);
    auto descType = LLVM::LLVMStructType::getLiteral(ctx, members);
    Value one = b.create<LLVM::ConstantOp>(loc, i64, 1);
    Value desc = b.create<LLVM::AllocaOp>(loc, ptr, descType, one);
    for (unsigned i = 0; i < 14; ++i) {
      Value slot = b.create<LLVM::GEPOp>(
          loc, ptr, descType, desc,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      Value v = b.create<LLVM::ConstantOp>(loc, members[i], fields[i]);
      b.create<LLVM::StoreOp>(loc, v, slot);
    }
    bool hasBias = args.size() == 4;
    Value bias = hasBias ? args[2] : b.create<LLVM::ZeroOp>(loc, ptr).getResult();
    Value c = args[hasBias ? 3 : 2];
    auto call = b.create<LLVM::CallOp>(
        loc, matmul, ValueRange{desc, args[0], args[1], c, bias});
    Value zero = b.create<LLVM::ConstantOp>(loc, i32, 0);
    return b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::eq,
                                  call.getResult(), zero);
  }

  /// Turns the memory operations of host function `fn` into device
  /// requests; refuses what cannot be one.
  LogicalResult redirectMemory(LLVM::LLVMFuncOp fn, LLVM::LLVMFuncOp copy,
                               LLVM::LLVMFuncOp constant,
                               SymbolTable &symbols, const DataLayout &layout,
                               OpBuilder &b) {
    WalkResult walked = fn.walk([&](Operation *op) -> WalkResult {
      if (auto memcpy = llvm::dyn_cast<LLVM::MemcpyOp>(op)) {
        b.setInsertionPoint(memcpy);
        Value bytes = memcpy.getLen();
        if (bytes.getType() != i64)
          bytes = b.create<LLVM::ZExtOp>(memcpy.getLoc(), i64, bytes);
        b.create<LLVM::CallOp>(
            memcpy.getLoc(), copy,
            ValueRange{memcpy.getDst(), memcpy.getSrc(), bytes});
        memcpy.erase();
        return WalkResult::skip();
      }
      if (auto address = llvm::dyn_cast<LLVM::AddressOfOp>(op)) {
        auto global = symbols.lookup<LLVM::GlobalOp>(address.getGlobalName());
        if (!global)
          return WalkResult::advance(); // a function
        if (onlyReadByHost(address))
          return WalkResult::advance(); // e.g. a collective's group name
        b.setInsertionPointAfter(address);
        uint64_t bytes = layout.getTypeSize(global.getGlobalType());
        Value size = b.create<LLVM::ConstantOp>(address.getLoc(), i64, bytes);
        auto device = b.create<LLVM::CallOp>(address.getLoc(), constant,
                                             ValueRange{address, size});
        address.getResult().replaceAllUsesExcept(device.getResult(), device);
        return WalkResult::advance();
      }
      bool dereferences =
          llvm::isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::MemsetOp,
                    LLVM::MemmoveOp, LLVM::AtomicRMWOp>(op);
      if (dereferences && !readsOwnStack(op))
        return op->emitError("a CUDA entry would touch device memory on the "
                             "host here; only kernels may (an op the CUDA "
                             "target lowers on the host by mistake)");
      if (auto call = llvm::dyn_cast<LLVM::CallOp>(op)) {
        auto callee = call.getCallee();
        if (callee && (*callee == "memrefCopy" || *callee == "malloc" ||
                       *callee == "aligned_alloc"))
          return op->emitError("a CUDA entry calls @")
                 << *callee << " on the host; only kernels may touch device "
                               "memory";
      }
      return WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  }

  /// Whether every use of `address` is an argument of a call that reads it
  /// on the host: the group name of tfc_kernels_collective_f32 (the kernel
  /// library's entry into the communicator, codegen/cpu/LibraryKernels.cpp).
  static bool onlyReadByHost(LLVM::AddressOfOp address) {
    return llvm::all_of(address->getUsers(), [](Operation *user) {
      auto call = llvm::dyn_cast<LLVM::CallOp>(user);
      return call && call.getCallee() &&
             *call.getCallee() == "tfc_kernels_collective_f32";
    });
  }

  /// Whether `op`'s address is a stack slot of its own function.
  static bool readsOwnStack(Operation *op) {
    Value address;
    if (auto load = llvm::dyn_cast<LLVM::LoadOp>(op))
      address = load.getAddr();
    else if (auto store = llvm::dyn_cast<LLVM::StoreOp>(op))
      address = store.getAddr();
    else
      return false;
    while (auto gep = address.getDefiningOp<LLVM::GEPOp>())
      address = gep.getBase();
    return address.getDefiningOp<LLVM::AllocaOp>() != nullptr;
  }

  Type ptr, i32, i64;
  LLVM::LLVMFuncOp matmul;
};

} // namespace
