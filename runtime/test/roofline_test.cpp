// The roofline model (roofline.hpp) on a hand-made kernel table, with every figure worked
// out here: per-call times, floors as the larger of FLOPs / peak and bytes / bandwidth, the
// three regimes, and the sums per kind and in all.
#include "tfc/runtime/roofline.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tfc {
namespace {

// 1 TFLOP/s and 100 GB/s: the ridge at 10 FLOP/byte.
MachinePeak peak() {
  MachinePeak machine;
  machine.flopsPerSecond = 1e12;
  machine.bytesPerSecond = 1e11;
  return machine;
}

TEST(RooflineTest, KernelsKindsAndTotal) {
  const tfc_kernel_desc_t kernels[] = {
      // A product at 100 FLOP/byte: compute-bound, floor 2e9 / 1e12 = 2 ms.
      {"k0_matmul", "fused.linear: linear, gelu", 2000000000, 15000000, 5000000},
      // An elementwise kernel launched twice: memory-bound, floor 2 x 1e8 / 1e11 = 2 ms.
      {"k1_add", "fused.elementwise: add", 1000000, 60000000, 40000000},
      {"k1_add", "fused.elementwise: add", 1000000, 60000000, 40000000},
      // A tiny launch far above its floor (1e3 / 1e11 = 10 ns of 2 us): overhead-bound.
      {"k2_tiny", "fused.elementwise: mul", 100, 600, 400},
  };
  tfc_entry_t entry{};
  entry.name = "forward";
  entry.num_kernels = 4;
  entry.kernels = kernels;
  // Summed over 2 calls.
  const std::vector<double> launchSeconds = {8e-3, 3e-3, 5e-3, 4e-6};
  const std::vector<KernelCost> rows = kernelRoofline(entry, launchSeconds, 2, peak());

  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "k0_matmul");  // slowest first: 4 ms, 4 ms (stable), 2 us
  EXPECT_EQ(rows[0].kind, "fused.linear");
  EXPECT_EQ(rows[0].launches, 1);
  EXPECT_DOUBLE_EQ(rows[0].seconds, 4e-3);
  EXPECT_DOUBLE_EQ(rows[0].floorSeconds, 2e-3);
  EXPECT_STREQ(rows[0].regime, "compute");
  EXPECT_EQ(rows[1].name, "k1_add");
  EXPECT_EQ(rows[1].launches, 2);
  EXPECT_DOUBLE_EQ(rows[1].seconds, 4e-3);
  EXPECT_DOUBLE_EQ(rows[1].bytes, 2e8);
  EXPECT_DOUBLE_EQ(rows[1].floorSeconds, 2e-3);
  EXPECT_STREQ(rows[1].regime, "memory");
  EXPECT_EQ(rows[2].name, "k2_tiny");
  EXPECT_DOUBLE_EQ(rows[2].seconds, 2e-6);
  EXPECT_STREQ(rows[2].regime, "overhead");

  const std::vector<KernelCost> kinds = kindRoofline(rows, peak());
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].kind, "fused.elementwise");  // 4.002 ms before fused.linear's 4 ms
  EXPECT_EQ(kinds[0].launches, 3);
  EXPECT_STREQ(kinds[0].regime, "memory");
  EXPECT_EQ(kinds[1].kind, "fused.linear");

  const KernelCost total = totalRoofline(rows, peak());
  EXPECT_EQ(total.launches, 4);
  EXPECT_DOUBLE_EQ(total.seconds, 8.002e-3);
  EXPECT_DOUBLE_EQ(total.floorSeconds, 2e-3 + 2e-3 + 1e-8);
  // 2e9 FLOPs take 2 ms, 2.2e8 bytes 2.2 ms: memory-bound in all.
  EXPECT_STREQ(total.regime, "memory");
}

TEST(RooflineTest, KnownGpusMatchTheMostSpecificName) {
  ASSERT_NE(knownGpu("NVIDIA H100 PCIe"), nullptr);
  EXPECT_STREQ(knownGpu("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_STREQ(knownGpu("NVIDIA H100 80GB HBM3")->name, "H100 SXM");
  EXPECT_STREQ(knownGpu("GPU 0: NVIDIA H200 (sm_90)")->name, "H200");
  // A context's device name: what follows ';' does not count.
  EXPECT_EQ(knownGpu("GPU 0: NVIDIA RTX A6000 (sm_86); products on the H100 path"), nullptr);
  EXPECT_EQ(knownGpu("NVIDIA GeForce RTX 4090"), nullptr);
  EXPECT_NE(knownGpuNames().find("A100"), std::string::npos);
}

}  // namespace
}  // namespace tfc
