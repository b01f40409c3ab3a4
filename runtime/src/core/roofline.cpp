#include "tfc/runtime/roofline.hpp"

#include <algorithm>
#include <map>

namespace tfc {

namespace {

constexpr GpuFigures kKnownGpus[] = {  // most specific first
    {"H200", "H200", 989000, 4800},
    {"H100 NVL", "H100 NVL", 835000, 3900},
    {"H100 PCIe", "H100 PCIe", 756000, 2000},
    {"H100", "H100 SXM", 989000, 3350},
    {"A100-SXM4-80GB", "A100 SXM 80GB", 312000, 2039},
    {"A100", "A100", 312000, 1555},
};

// The kind of kernel its ops say: "fused.linear" of "fused.linear: linear, gelu".
std::string kindOf(const std::string& ops) { return ops.substr(0, ops.find(':')); }

void sortSlowestFirst(std::vector<KernelCost>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const KernelCost& a, const KernelCost& b) {
    return a.seconds > b.seconds;
  });
}

}  // namespace

const GpuFigures* knownGpu(std::string_view deviceName) {
  deviceName = deviceName.substr(0, deviceName.find(';'));
  for (const GpuFigures& gpu : kKnownGpus) {
    if (deviceName.find(gpu.match) != std::string_view::npos) return &gpu;
  }
  return nullptr;
}

std::string knownGpuNames() {
  std::string names;
  for (const GpuFigures& gpu : kKnownGpus) {
    names += (names.empty() ? "" : ", ") + std::string(gpu.name);
  }
  return names;
}

void KernelCost::add(const KernelCost& other) {
  launches += other.launches;
  seconds += other.seconds;
  flops += other.flops;
  bytes += other.bytes;
  floorSeconds += other.floorSeconds;
}

const char* rooflineRegime(const KernelCost& cost, const MachinePeak& peak) {
  double computeFloor = cost.flops / peak.flopsPerSecond;
  double memoryFloor = cost.bytes / peak.bytesPerSecond;
  double floor = std::max(computeFloor, memoryFloor);
  if (cost.launches > 0 && cost.seconds / static_cast<double>(cost.launches) < kOverheadSeconds &&
      floor < kOverheadFraction * cost.seconds) {
    return "overhead";
  }
  return computeFloor >= memoryFloor ? "compute" : "memory";
}

std::vector<KernelCost> kernelRoofline(const tfc_entry_t& entry,
                                       const std::vector<double>& launchSeconds,
                                       uint64_t calls, const MachinePeak& peak) {
  // Launches of one kernel add up; times are per call.
  std::map<std::string, KernelCost> byName;
  const double perCall = 1.0 / static_cast<double>(std::max<uint64_t>(calls, 1));
  const size_t launches = std::min(launchSeconds.size(), static_cast<size_t>(entry.num_kernels));
  for (size_t i = 0; i < launches; ++i) {
    const tfc_kernel_desc_t& k = entry.kernels[i];
    KernelCost& row = byName[k.name];
    row.name = k.name;
    row.ops = k.ops;
    row.kind = kindOf(k.ops);
    row.launches += 1;
    row.seconds += launchSeconds[i] * perCall;
    const auto flops = static_cast<double>(k.flops);
    const auto bytes = static_cast<double>(k.bytes_read + k.bytes_written);
    row.flops += flops;
    row.bytes += bytes;
    row.floorSeconds += std::max(flops / peak.flopsPerSecond, bytes / peak.bytesPerSecond);
  }
  std::vector<KernelCost> rows;
  for (auto& [name, row] : byName) {
    row.regime = rooflineRegime(row, peak);
    rows.push_back(std::move(row));
  }
  sortSlowestFirst(rows);
  return rows;
}

std::vector<KernelCost> kindRoofline(const std::vector<KernelCost>& kernels,
                                     const MachinePeak& peak) {
  std::map<std::string, KernelCost> byKind;
  for (const KernelCost& row : kernels) {
    KernelCost& kind = byKind[row.kind];
    kind.kind = row.kind;
    kind.add(row);
  }
  std::vector<KernelCost> kinds;
  for (auto& [name, kind] : byKind) {
    kind.regime = rooflineRegime(kind, peak);
    kinds.push_back(std::move(kind));
  }
  sortSlowestFirst(kinds);
  return kinds;
}

KernelCost totalRoofline(const std::vector<KernelCost>& kernels, const MachinePeak& peak) {
  KernelCost total;
  for (const KernelCost& row : kernels) total.add(row);
  total.regime = rooflineRegime(total, peak);
  return total;
}

}  // namespace tfc
