// Runs one kernel of kernels.cu on the host device model, for check_device_model.py:
//   harness KERNEL GX GY GZ BX BY BZ SHARED_BYTES IN... OUT [M N K]
// float kernels take IN (x) and write OUT (its float count follows it); the gemm_* kernels
// take A and B (16-bit) and write C, and M N K follow. A fault is printed as
// "fault: MESSAGE" with exit status 3.
#include "host_shim.h"
#include "kernels.cu"

#include <fstream>
#include <iterator>
#include <map>

namespace {

template <typename T>
std::vector<T> readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

template <typename T>
void writeFile(const char* path, const std::vector<T>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(T)));
}

using FloatKernel = void (*)(const float*, float*);
using GemmKernel = void (*)(const unsigned short*, const unsigned short*, float*, long long,
                            long long, long long);

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, FloatKernel> floats = {
      {"block_sum", block_sum},
      {"block_sum_bad_race", block_sum_bad_race},
      {"shared_bad_bounds", shared_bad_bounds},
      {"shared_bad_uninitialized", shared_bad_uninitialized},
      {"barrier_bad_divergent", barrier_bad_divergent},
      {"collective_bad_divergent", collective_bad_divergent},
      {"warp_bad_race", warp_bad_race},
      {"warp_sync", warp_sync},
      {"warp_collectives", warp_collectives},
      {"dynamic_reverse", dynamic_reverse},
  };
  const std::map<std::string, GemmKernel> gemms = {
      {"gemm_bf16_nn", gemm_bf16_nn}, {"gemm_bf16_tn", gemm_bf16_tn},
      {"gemm_bf16_nt", gemm_bf16_nt}, {"gemm_f16_nn", gemm_f16_nn},
      {"gemm_f16_tt", gemm_f16_tt},
  };
  if (argc < 9) {
    std::fprintf(stderr, "usage: harness KERNEL GX GY GZ BX BY BZ SHARED_BYTES FILES...\n");
    return 2;
  }
  const std::string name = argv[1];
  tfc_emu::LaunchConfig config;
  config.kernel = argv[1];
  config.grid = {unsigned(std::atoi(argv[2])), unsigned(std::atoi(argv[3])),
                 unsigned(std::atoi(argv[4]))};
  config.block = {unsigned(std::atoi(argv[5])), unsigned(std::atoi(argv[6])),
                  unsigned(std::atoi(argv[7]))};
  config.dynamic_shared = std::strtoull(argv[8], nullptr, 10);
  std::string fault;
  if (floats.count(name) != 0 && argc == 12) {
    const std::vector<float> x = readFile<float>(argv[9]);
    std::vector<float> out(std::strtoull(argv[11], nullptr, 10), 0.0f);
    const FloatKernel kernel = floats.at(name);
    fault = tfc_emu::launch(config, [&] { kernel(x.data(), out.data()); });
    if (fault.empty()) writeFile(argv[10], out);
  } else if (gemms.count(name) != 0 && argc == 15) {
    const auto a = readFile<unsigned short>(argv[9]);
    const auto b = readFile<unsigned short>(argv[10]);
    const long long m = std::atoll(argv[12]), n = std::atoll(argv[13]), k = std::atoll(argv[14]);
    std::vector<float> c(static_cast<size_t>(m * n) * config.grid.z, NAN);
    const GemmKernel kernel = gemms.at(name);
    fault = tfc_emu::launch(config, [&] { kernel(a.data(), b.data(), c.data(), m, n, k); });
    if (fault.empty()) writeFile(argv[11], c);
  } else {
    std::fprintf(stderr, "harness: unknown kernel %s or wrong arguments\n", argv[1]);
    return 2;
  }
  if (!fault.empty()) {
    std::printf("fault: %s\n", fault.c_str());
    return 3;
  }
  return 0;
}
