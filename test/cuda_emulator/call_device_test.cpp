// tfc_context_call_device on the emulated driver, where device memory is host memory: a
// CUDA artifact's entry called with "device" buffers gives the bits of the same call with
// host buffers, again when replayed as a graph, and after the buffers move (no stale
// graph); a CPU context refuses device buffers.
//
//   tfc-cuda-call-device-test CUDA.so CPU.so   (with TFC_CUDA_DRIVER and
//                                               TFC_CUDA_EMULATOR_KERNELS set)
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tfc/runtime/runtime.h"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += !ok;
}

bool check(tfc_status_t status, const char* what) {
  if (status == nullptr) return true;
  std::printf("FAILED %s: %s\n", what, tfc_status_message(status));
  tfc_status_free(status);
  ++failures;
  return false;
}

struct Model {
  tfc_loaded_artifact_t* artifact = nullptr;
  tfc_params_t* params = nullptr;
  tfc_context_t* context = nullptr;
  ~Model() {
    tfc_context_release(context);
    tfc_params_release(params);
    tfc_artifact_release(artifact);
  }
  bool open(const char* path) {
    return check(tfc_artifact_open(path, nullptr, &artifact), path) &&
           check(tfc_params_create(artifact, nullptr, &params), "tfc_params_create") &&
           check(tfc_params_init(params, 1), "tfc_params_init") &&
           check(tfc_context_create(artifact, params, nullptr, &context), "tfc_context_create");
  }
};

tfc_tensor_ref_t ref(const tfc_tensor_desc_t& desc, void* data) {
  return {static_cast<tfc_dtype_t>(desc.dtype), desc.rank, desc.shape, data,
          static_cast<size_t>(tfc_tensor_desc_byte_size(&desc))};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CUDA.so CPU.so\n", argv[0]);
    return 2;
  }
  Model gpu, cpu;
  if (!gpu.open(argv[1]) || !cpu.open(argv[2])) return 1;
  int32_t index = -1;
  if (!check(tfc_artifact_find_entry(gpu.artifact, "forward", &index), "forward")) return 1;
  const tfc_entry_t& entry = tfc_artifact_table(gpu.artifact)->entries[index];
  std::printf("device: %s\n", tfc_context_device_name(gpu.context));

  const tfc_tensor_desc_t& in = entry.inputs[0];
  const tfc_tensor_desc_t& out = entry.outputs[0];
  std::vector<int32_t> tokens(tfc_tensor_desc_byte_size(&in) / 4);
  std::mt19937 rng(std::random_device{}());
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % 200);
  size_t outBytes = tfc_tensor_desc_byte_size(&out);
  std::vector<char> host(outBytes), device(outBytes), moved(outBytes + 64);
  tfc_tensor_ref_t input = ref(in, tokens.data());
  tfc_tensor_ref_t output = ref(out, host.data());
  if (!check(tfc_context_call_index(gpu.context, index, &input, 1, &output, 1), "host call")) {
    return 1;
  }
  output = ref(out, device.data());
  for (int call = 0; call < 3; ++call) {
    std::memset(device.data(), 0, outBytes);
    check(tfc_context_call_device(gpu.context, index, &input, 1, &output, 1), "device call");
    expect(std::memcmp(host.data(), device.data(), outBytes) == 0,
           "device call " + std::to_string(call) + " equals the host call" +
               (call > 0 ? " (graph replay)" : ""));
  }
  // Other output buffer: the graph made for the first must not be replayed.
  output = ref(out, moved.data() + 64);
  check(tfc_context_call_device(gpu.context, index, &input, 1, &output, 1), "moved call");
  expect(std::memcmp(host.data(), moved.data() + 64, outBytes) == 0,
         "a device call on another output buffer writes that one");

  // The device memory held: at least the parameters and the forward's arena and buffers;
  // none on the CPU.
  uint64_t paramBytes = 0;
  const tfc_artifact_t* table = tfc_artifact_table(gpu.artifact);
  for (int32_t i = 0; i < table->num_params; ++i) {
    paramBytes += tfc_tensor_desc_byte_size(&table->params[i]);
  }
  const uint64_t held = tfc_context_device_bytes(gpu.context);
  expect(held >= paramBytes + entry.arena_bytes + outBytes,
         "the device memory held (" + std::to_string(held) + " bytes) counts the parameters (" +
             std::to_string(paramBytes) + "), the arena (" + std::to_string(entry.arena_bytes) +
             ") and the output buffer");
  expect(tfc_context_device_bytes(cpu.context) == 0, "a CPU context holds no device memory");

  int32_t cpuIndex = -1;
  check(tfc_artifact_find_entry(cpu.artifact, "forward", &cpuIndex), "forward");
  tfc_status_t refused = tfc_context_call_device(cpu.context, cpuIndex, &input, 1, &output, 1);
  expect(refused != nullptr && tfc_status_code(refused) == TFC_FAILED_PRECONDITION &&
             std::strstr(tfc_status_message(refused), "runs on the CPU") != nullptr,
         std::string("a CPU context refuses device buffers: ") +
             (refused ? tfc_status_message(refused) : "(accepted)"));
  tfc_status_free(refused);
  std::printf("call_device test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
