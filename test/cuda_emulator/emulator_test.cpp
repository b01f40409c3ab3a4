// End-to-end check of the emulated CUDA driver through the runtime's loader: tfc's embedding
// kernel (dumped by tfc --target=cuda, built for the host by build_host_kernels.py) is
// launched on fresh random inputs and compared with a host computation, its out-of-range
// token ids are reported through tfc_error_code, and a captured graph replays it with the
// same result. Host functions (cuLaunchHostFunc, which the fake cuBLASLt queues its products
// with) run in stream order and once per replay of a graph that captured them. Also checks
// the emulator's refusals that would fail on a GPU too.
//
//   TFC_CUDA_DRIVER=<build>/test/cuda_emulator/libcuda.so.1 \
//   TFC_CUDA_EMULATOR_KERNELS=kernels.so tfc-cuda-emulator-test --dump-dir DIR [--seed S]
//
// DIR holds the dump of test/cuda_emulator/cuda-emulator.mlir: one kernel *_embedding.cu of
// a [50, 16] f32 table and [4, 8] i32 ids. Prints each check that fails, then one verdict.
#include <dirent.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "devices/cuda/driver.hpp"
#include "tfc/artifact_abi.h"

using namespace tfc::internal::cuda;  // NOLINT: the driver's names, as cuda.h's users see them

namespace {

constexpr int kVocab = 50, kDim = 16, kTokens = 4 * 8;
constexpr unsigned kErrorEmbeddingId = TFC_KERNEL_ERROR_EMBEDDING_ID;

int checks = 0, failures = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

// A driver call that must succeed; prints the driver's error otherwise.
bool ok(const Driver& d, CUresult result, const char* what) {
  tfc::Status status = check(d, result, what);
  expect(status.ok(), status.toString());
  return status.ok();
}

// The one *_embedding.cu kernel of |dir|, "" when there is not exactly one.
std::string findEmbeddingKernel(const std::string& dir) {
  std::vector<std::string> found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      const std::string suffix = "_embedding.cu";
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        found.push_back(name.substr(0, name.size() - 3));
      }
    }
    closedir(d);
  }
  return found.size() == 1 ? found[0] : "";
}

// out[t, :] = table[ids[t], :], zero rows for ids out of range.
std::vector<float> reference(const std::vector<float>& table, const std::vector<int32_t>& ids) {
  std::vector<float> out(kTokens * kDim, 0.0f);
  for (int t = 0; t < kTokens; ++t) {
    if (ids[t] < 0 || ids[t] >= kVocab) continue;
    for (int c = 0; c < kDim; ++c) out[t * kDim + c] = table[ids[t] * kDim + c];
  }
  return out;
}

struct Buffers {
  CUdeviceptr table = 0, ids = 0, out = 0;
};

int run(const std::string& dumpDir, uint64_t seed) {
  auto loaded = loadDriver();
  if (!loaded.ok()) {
    std::printf("FAILED: loadDriver: %s\n", loaded.status().toString().c_str());
    return 1;
  }
  const Driver& d = **loaded;
  expect(d.version == 13000, "the emulator's driver version is 13000");

  int count = 0;
  CUdevice device = -1;
  char name[64] = {};
  int major = 0, minor = 0;
  if (!ok(d, d.cuDeviceGetCount(&count), "cuDeviceGetCount") ||
      !ok(d, d.cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !ok(d, d.cuDeviceGetName(name, sizeof(name), device), "cuDeviceGetName") ||
      !ok(d, d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
          "cuDeviceGetAttribute major") ||
      !ok(d, d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
          "cuDeviceGetAttribute minor")) {
    return 1;
  }
  expect(count == 1 && std::string(name) == "tfc CUDA emulator", "one device, named");
  std::printf("device: %s, sm_%d%d\n", name, major, minor);

  // Nothing that needs a context works before one is current.
  CUdeviceptr early = 0;
  expect(d.cuMemAlloc(&early, 64) == CUDA_ERROR_INVALID_CONTEXT,
         "cuMemAlloc without a current context fails with CUDA_ERROR_INVALID_CONTEXT");
  CUcontext context = nullptr;
  if (!ok(d, d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !ok(d, d.cuCtxSetCurrent(context), "cuCtxSetCurrent")) {
    return 1;
  }

  const std::string kernelName = findEmbeddingKernel(dumpDir);
  if (kernelName.empty()) {
    std::printf("FAILED: %s holds no single *_embedding.cu\n", dumpDir.c_str());
    return 1;
  }
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  CUdeviceptr errorCode = 0;
  size_t errorBytes = 0;
  const char image[] = "a cubin the host cannot run";
  if (!ok(d, d.cuModuleLoadData(&module, image), "cuModuleLoadData") ||
      !ok(d, d.cuModuleGetFunction(&kernel, module, kernelName.c_str()),
          "cuModuleGetFunction") ||
      !ok(d, d.cuModuleGetGlobal(&errorCode, &errorBytes, module, "tfc_error_code"),
          "cuModuleGetGlobal tfc_error_code")) {
    return 1;
  }
  expect(errorBytes == 4, "tfc_error_code has 4 bytes");
  CUfunction missing = nullptr;
  expect(d.cuModuleGetFunction(&missing, module, "no_such_kernel") == CUDA_ERROR_NOT_FOUND,
         "an unknown kernel is CUDA_ERROR_NOT_FOUND");

  CUstream stream = nullptr;
  if (!ok(d, d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) return 1;
  Buffers b;
  if (!ok(d, d.cuMemAlloc(&b.table, kVocab * kDim * sizeof(float)), "cuMemAlloc table") ||
      !ok(d, d.cuMemAlloc(&b.ids, kTokens * sizeof(int32_t)), "cuMemAlloc ids") ||
      !ok(d, d.cuMemAlloc(&b.out, kTokens * kDim * sizeof(float)), "cuMemAlloc out")) {
    return 1;
  }

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
  std::vector<float> table(kVocab * kDim);
  for (float& x : table) x = normal(rng);
  std::vector<int32_t> ids(kTokens);
  for (int32_t& id : ids) id = token(rng);
  ok(d, d.cuMemcpyHtoD(b.table, table.data(), table.size() * sizeof(float)), "upload table");

  // One launch as tfc's host code makes it: 1-D, parameters by address.
  auto launch = [&](unsigned grid, unsigned block) {
    void* params[] = {&b.table, &b.ids, &b.out};
    return d.cuLaunchKernel(kernel, grid, 1, 1, block, 1, 1, 0, stream, params, nullptr);
  };
  auto readError = [&]() {
    uint32_t code = 0xdeadbeef;
    ok(d, d.cuMemcpyDtoH(&code, errorCode, sizeof(code)), "read tfc_error_code");
    return code;
  };
  auto readOut = [&]() {
    std::vector<float> out(kTokens * kDim, -1.0f);
    ok(d, d.cuMemcpyDtoH(out.data(), b.out, out.size() * sizeof(float)), "download out");
    return out;
  };

  // 1. A direct launch on random ids. Grid x block (3 x 32) is smaller than the 512
  //    elements, so the kernel's grid-stride loop runs more than once per thread.
  ok(d, d.cuMemsetD8Async(errorCode, 0, 4, stream), "clear tfc_error_code");
  ok(d, d.cuMemcpyHtoDAsync(b.ids, ids.data(), ids.size() * sizeof(int32_t), stream),
     "upload ids");
  ok(d, launch(3, 32), "cuLaunchKernel");
  ok(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
  expect(readOut() == reference(table, ids), "the launch gathers table rows by id");
  expect(readError() == 0, "no error reported for ids in range");

  // 2. Ids out of range: their rows are zero and tfc_error_code says why.
  std::vector<int32_t> bad = ids;
  bad[5] = kVocab;
  bad[17] = -1;
  ok(d, d.cuMemcpyHtoD(b.ids, bad.data(), bad.size() * sizeof(int32_t)), "upload bad ids");
  ok(d, launch(4, 128), "cuLaunchKernel with bad ids");
  expect(readOut() == reference(table, bad), "rows of out-of-range ids are zero");
  expect(readError() == kErrorEmbeddingId, "tfc_error_code reports the out-of-range id");

  // 3. Capture then replay: clear, upload, launch, download, all recorded; nothing runs
  //    until the graph is launched, and the parameters are the values at capture time.
  std::vector<int32_t> ids2(kTokens);
  for (int32_t& id : ids2) id = token(rng);
  std::vector<float> captured(kTokens * kDim, 12345.0f);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ok(d, d.cuMemsetD8Async(errorCode, 0, 4, stream), "clear tfc_error_code");
  ok(d, d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin capture");
  ok(d, d.cuMemsetD8Async(b.out, 0, kTokens * kDim * sizeof(float), stream), "capture memset");
  ok(d, d.cuMemcpyHtoDAsync(b.ids, ids2.data(), ids2.size() * sizeof(int32_t), stream),
     "capture upload");
  ok(d, launch(2, 64), "capture launch");
  ok(d, d.cuMemcpyDtoHAsync(captured.data(), b.out, captured.size() * sizeof(float), stream),
     "capture download");
  ok(d, d.cuStreamEndCapture(stream, &graph), "end capture");
  ok(d, d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  expect(captured[0] == 12345.0f, "nothing captured ran before the graph launch");
  const Buffers saved = b;
  b = Buffers{};  // the launch's parameter values were copied at capture time
  CUevent start = nullptr, stop = nullptr;
  ok(d, d.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  ok(d, d.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  ok(d, d.cuEventRecord(start, stream), "cuEventRecord");
  ok(d, d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  ok(d, d.cuEventRecord(stop, stream), "cuEventRecord");
  ok(d, d.cuEventSynchronize(stop), "cuEventSynchronize");
  float ms = -1;
  ok(d, d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  expect(ms >= 0, "elapsed time is not negative");
  b = saved;
  expect(captured == reference(table, ids2), "the replayed graph gives the direct result");
  expect(readError() == 0, "no error reported by the replay");
  // A second replay reads the host buffer again, as a captured copy does.
  for (int32_t& id : ids2) id = token(rng);
  ok(d, d.cuGraphLaunch(exec, stream), "cuGraphLaunch again");
  ok(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
  expect(captured == reference(table, ids2), "a second replay uses the new host ids");

  // 4. Host functions: not in the runtime's list, so looked up in the loaded library. One
  //    runs at once on a stream; one captured after a copy in and a copy out runs only on
  //    each replay, after those copies (it sees the value of the replay's copy).
  using LaunchHostFunc = CUresult (*)(CUstream, CUhostFn, void*);
  auto launchHostFunc =
      reinterpret_cast<LaunchHostFunc>(dlsym(d.library, "cuLaunchHostFunc"));
  expect(launchHostFunc != nullptr, "the emulator exports cuLaunchHostFunc");
  if (launchHostFunc != nullptr) {
    struct HostCall {
      int calls = 0;
      float staged = -1, seen = -1;
    } call;
    CUhostFn note = [](void* data) {
      auto* c = static_cast<HostCall*>(data);
      ++c->calls;
      c->seen = c->staged;
    };
    ok(d, launchHostFunc(stream, note, &call), "cuLaunchHostFunc");
    expect(call.calls == 1, "a host function runs when queued outside a capture");
    expect(launchHostFunc(stream, nullptr, &call) == CUDA_ERROR_INVALID_VALUE,
           "a null host function is refused");
    float source = 1.0f;
    CUgraph hostGraph = nullptr;
    CUgraphExec hostExec = nullptr;
    ok(d, d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
    ok(d, d.cuMemcpyHtoDAsync(b.out, &source, sizeof(source), stream), "capture upload");
    ok(d, d.cuMemcpyDtoHAsync(&call.staged, b.out, sizeof(call.staged), stream),
       "capture download");
    ok(d, launchHostFunc(stream, note, &call), "capture cuLaunchHostFunc");
    ok(d, d.cuStreamEndCapture(stream, &hostGraph), "end capture");
    ok(d, d.cuGraphInstantiate(&hostExec, hostGraph, 0), "cuGraphInstantiate");
    expect(call.calls == 1 && call.staged == -1.0f, "nothing captured ran at capture");
    source = 7.0f;
    ok(d, d.cuGraphLaunch(hostExec, stream), "cuGraphLaunch");
    expect(call.calls == 2 && call.seen == 7.0f,
           "a replay runs the host function once, after the copies before it");
    source = 8.0f;
    ok(d, d.cuGraphLaunch(hostExec, stream), "cuGraphLaunch again");
    ok(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    expect(call.calls == 3 && call.seen == 8.0f, "each replay runs the host function again");
    ok(d, d.cuGraphExecDestroy(hostExec), "cuGraphExecDestroy");
    ok(d, d.cuGraphDestroy(hostGraph), "cuGraphDestroy");
  }

  // 5. What a GPU refuses, refused here too.
  CUdeviceptr during = 0;
  CUgraph invalid = nullptr;
  ok(d, d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "begin capture");
  expect(d.cuMemAlloc(&during, 64) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
         "cuMemAlloc during a global capture is refused");
  expect(d.cuStreamEndCapture(stream, &invalid) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
             invalid == nullptr,
         "the capture is invalidated by it");
  const size_t outBytes = kTokens * kDim * sizeof(float);
  tfc::Status past = check(d, d.cuMemcpyHtoD(b.out + 8, table.data(), outBytes),
                           "cuMemcpyHtoD past the end of out");
  expect(past.code() == TFC_INTERNAL &&
             std::string(past.message()) ==
                 "cuMemcpyHtoD past the end of out: CUDA_ERROR_INVALID_VALUE (invalid argument)",
         "a copy past an allocation's end is CUDA_ERROR_INVALID_VALUE: " + past.toString());
  expect(d.cuMemAlloc(&during, 0) == CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of 0 bytes is refused");
  expect(d.cuMemFree(0) == CUDA_SUCCESS, "cuMemFree(0) is a no-op");
  // A GPU's launch limits: 1024 threads a block, 48 KiB of dynamic shared memory.
  void* params[] = {&b.table, &b.ids, &b.out};
  expect(d.cuLaunchKernel(kernel, 2, 2, 1, 32, 33, 1, 0, stream, params, nullptr) ==
             CUDA_ERROR_INVALID_VALUE,
         "a block of 1056 threads is refused");
  expect(d.cuLaunchKernel(kernel, 2, 1, 1, 32, 1, 1, 49153, stream, params, nullptr) ==
             CUDA_ERROR_INVALID_VALUE,
         "49153 bytes of dynamic shared memory are refused");

  // 6. Cleanup, every handle once.
  ok(d, d.cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  ok(d, d.cuGraphDestroy(graph), "cuGraphDestroy");
  expect(d.cuGraphDestroy(graph) == CUDA_ERROR_INVALID_HANDLE, "a graph destroyed twice");
  ok(d, d.cuEventDestroy(start), "cuEventDestroy");
  ok(d, d.cuEventDestroy(stop), "cuEventDestroy");
  ok(d, d.cuStreamDestroy(stream), "cuStreamDestroy");
  ok(d, d.cuMemFree(b.table), "cuMemFree");
  ok(d, d.cuMemFree(b.ids), "cuMemFree");
  ok(d, d.cuMemFree(b.out), "cuMemFree");
  size_t freeBytes = 0, totalBytes = 0;
  ok(d, d.cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  expect(freeBytes == totalBytes, "all device memory is free again");
  ok(d, d.cuModuleUnload(module), "cuModuleUnload");
  ok(d, d.cuCtxSetCurrent(nullptr), "cuCtxSetCurrent(NULL)");
  ok(d, d.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dumpDir;
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--dump-dir" && i + 1 < argc) {
      dumpDir = argv[++i];
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s --dump-dir DIR [--seed S]\n", argv[0]);
      return 2;
    }
  }
  if (dumpDir.empty()) {
    std::fprintf(stderr, "usage: %s --dump-dir DIR [--seed S]\n", argv[0]);
    return 2;
  }
  if (seed == 0) {
    const char* env = std::getenv("TFC_TEST_SEED");
    seed = env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 10)
                                          : std::random_device{}() % 1000000 + 1;
  }
  std::printf("seed %llu (reproduce with --seed %llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  const int rc = run(dumpDir, seed);
  if (rc == 0 && failures == 0) {
    std::printf("emulator test: %d checks passed\n", checks);
    return 0;
  }
  std::printf("emulator test: %d of %d checks failed\n", failures, checks);
  return 1;
}
