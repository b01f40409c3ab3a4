// The size-1 communicator: every collective is the identity (a copy), and the world outside
// mpirun is that communicator. The MPI communicator is checked under mpirun by
// test/Tools/comm/communicator-mpi.test (runtime/test/comm_tool.cpp).
#include "tfc/runtime/communicator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace tfc {
namespace {

std::vector<float> randomData(size_t n) {
  std::mt19937 gen(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

TEST(SingleCommunicator, EveryCollectiveIsACopy) {
  auto comm = makeSingleCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  const std::vector<float> in = randomData(257);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    std::vector<float> out(in.size(), 0.0f);
    ASSERT_TRUE(comm->allReduce(in.data(), out.data(), in.size(), op).ok());
    EXPECT_EQ(out, in);
    std::vector<float> inPlace = in;
    ASSERT_TRUE(comm->allReduce(inPlace.data(), inPlace.data(), in.size(), op).ok());
    EXPECT_EQ(inPlace, in);
    out.assign(in.size(), 0.0f);
    ASSERT_TRUE(comm->reduceScatter(in.data(), out.data(), in.size(), op).ok());
    EXPECT_EQ(out, in);
  }
  std::vector<float> out(in.size(), 0.0f);
  ASSERT_TRUE(comm->allGather(in.data(), out.data(), in.size()).ok());
  EXPECT_EQ(out, in);
  out.assign(in.size(), 0.0f);
  ASSERT_TRUE(comm->allToAll(in.data(), out.data(), in.size()).ok());
  EXPECT_EQ(out, in);
  std::vector<float> data = in;
  EXPECT_TRUE(comm->broadcast(data.data(), data.size() * sizeof(float), 0).ok());
  EXPECT_EQ(data, in);
  EXPECT_TRUE(comm->barrier().ok());
  Status bad = comm->broadcast(data.data(), 4, 1);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("rank 1"), std::string::npos) << bad.message();
}

TEST(WorldCommunicator, OutsideMpirunIsOneRank) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) GTEST_SKIP();
  auto world = worldCommunicator();
  ASSERT_TRUE(world.ok()) << world.status().message();
  EXPECT_EQ((*world)->size(), 1);
  EXPECT_STREQ((*world)->transport(), "single");
}

TEST(SingleCommunicator, SplitsIntoAnotherOfOneRank) {
  auto comm = makeSingleCommunicator();
  auto part = comm->split(0, 0, "group 'tp' (world ranks 0)");
  ASSERT_TRUE(part.ok()) << part.status().message();
  ASSERT_NE(*part, comm.get());
  EXPECT_EQ((*part)->size(), 1);
  EXPECT_EQ((*part)->name(), "group 'tp' (world ranks 0)");
  EXPECT_EQ(comm->name(), "");
  const std::vector<float> in = randomData(33);
  std::vector<float> out(in.size(), 0.0f);
  ASSERT_TRUE((*part)->allReduce(in.data(), out.data(), in.size(), ReduceOp::kMean).ok());
  EXPECT_EQ(out, in);
}

TEST(GroupCommunicator, OneKindOfParallelismIsTheWorld) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) GTEST_SKIP();
  auto world = worldCommunicator();
  ASSERT_TRUE(world.ok()) << world.status().message();
  // One process, or a mesh with one size above 1: every group is the world, never split.
  for (ProcessMesh mesh : {ProcessMesh{1, 1, 1}, ProcessMesh{1, 1, 2}, ProcessMesh{1, 4, 1},
                           ProcessMesh{2, 1, 1}}) {
    for (const char* group : {"", "dp", "pp", "tp", "ep"}) {
      auto comm = groupCommunicator(group, mesh);
      ASSERT_TRUE(comm.ok()) << comm.status().message();
      EXPECT_EQ(*comm, *world) << group << " " << mesh.flags();
    }
  }
}

TEST(GroupCommunicator, AMeshLargerThanTheWorldIsRefused) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) GTEST_SKIP();
  auto comm = groupCommunicator("tp", ProcessMesh{2, 2, 2});
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(std::string(comm.status().message())
                .find("a world of 1 processes is not the mesh of --dp=2 --pp=2 --tp=2"),
            std::string::npos)
      << comm.status().message();
}

TEST(ProcessMesh, NamesItsFlags) {
  EXPECT_EQ((ProcessMesh{2, 1, 4}).flags(), "--dp=2 --tp=4");
  EXPECT_EQ((ProcessMesh{1, 1, 1}).flags(), "");
  EXPECT_EQ((ProcessMesh{2, 3, 4}).size(), 24);
  EXPECT_EQ((ProcessMesh{2, 3, 4}).dimensions(), 3);
  EXPECT_EQ((ProcessMesh{2, 3, 4}).sizeOf("pp"), 3);
}

TEST(CommTimeout, ReadsTheEnvironment) {
  ::setenv("TFC_COMM_TIMEOUT_S", "2.5", 1);
  EXPECT_DOUBLE_EQ(commTimeoutSeconds(), 2.5);
  ::setenv("TFC_COMM_TIMEOUT_S", "", 1);
  EXPECT_DOUBLE_EQ(commTimeoutSeconds(), 300.0);
  ::unsetenv("TFC_COMM_TIMEOUT_S");
  EXPECT_DOUBLE_EQ(commTimeoutSeconds(), 300.0);
}

// Issue 29: these were accepted silently (the default, or a rank that never times out).
TEST(CommTimeout, RefusesValuesThatAreNotSeconds) {
  for (const char* value : {"abc", "-5", "0", "nan", "inf", "5s", "1e300", " "}) {
    SCOPED_TRACE(value);
    ::setenv("TFC_COMM_TIMEOUT_S", value, 1);
    StatusOr<double> timeout = commTimeout();
    ASSERT_FALSE(timeout.ok());
    EXPECT_EQ(timeout.status().code(), TFC_INVALID_ARGUMENT);
    EXPECT_NE(std::string(timeout.status().message())
                  .find("TFC_COMM_TIMEOUT_S is '" + std::string(value) + "'"),
              std::string::npos)
        << timeout.status().message();
    // Every context reaches the world through worldCommunicator(): it refuses too.
    auto world = worldCommunicator();
    ASSERT_FALSE(world.ok());
    EXPECT_NE(std::string(world.status().message()).find("TFC_COMM_TIMEOUT_S"),
              std::string::npos);
  }
  ::unsetenv("TFC_COMM_TIMEOUT_S");
  EXPECT_TRUE(worldCommunicator().ok());
}

}  // namespace
}  // namespace tfc
