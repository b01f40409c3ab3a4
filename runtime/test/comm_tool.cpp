// A check of the world communicator under mpirun (test/Tools/comm): every collective on
// random data that each rank can recompute for every other rank (a seeded generator per rank),
// compared with the reduction in double precision; one verdict line per rank.
//
//   mpirun -np 2 tfc-comm-tool check            # exit 0 and "rank r: PASS ..." on every rank
//                                               # (also without mpirun: a world of one)
//   mpirun -np 2 tfc-comm-tool stall R          # rank R stops answering (sleeps); the others
//                                               # must fail within TFC_COMM_TIMEOUT_S
//   mpirun -np 4 tfc-comm-tool groups M        # the process groups of --dp x --tp (M = tp
//                                               # size): an all-reduce in each, against the
//                                               # sum over the world ranks it should hold
//   mpirun -np 2 tfc-comm-tool bench N          # the median time of an all-reduce of N floats
//                                               # (docs/performance.md)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tfc/runtime/communicator.hpp"

namespace {

std::vector<float> randomData(int rank, size_t n, uint32_t salt) {
  std::mt19937 gen(1234u + 7919u * static_cast<uint32_t>(rank) + salt);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

int failures = 0;

void expectNear(int rank, const char* what, const std::vector<float>& got,
                const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  bool ok = got.size() == want.size() && worst <= 1e-6;
  std::printf("rank %d: %s %s (max rel diff %.2e)\n", rank, ok ? "ok  " : "FAIL", what, worst);
  if (!ok) ++failures;
}

int check(tfc::Communicator* comm) {
  const int rank = comm->rank(), n = comm->size();
  const size_t count = 1000;  // per block
  // all-reduce, sum and mean, out of place and in place.
  for (int mean = 0; mean < 2; ++mean) {
    std::vector<float> in = randomData(rank, count, 1), out(count);
    std::vector<double> want(count, 0.0);
    for (int r = 0; r < n; ++r) {
      std::vector<float> other = randomData(r, count, 1);
      for (size_t i = 0; i < count; ++i) want[i] += other[i];
    }
    if (mean) for (double& w : want) w /= n;
    tfc::ReduceOp op = mean ? tfc::ReduceOp::kMean : tfc::ReduceOp::kSum;
    tfc::Status s = comm->allReduce(in.data(), out.data(), count, op, "test");
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    expectNear(rank, mean ? "all_reduce mean" : "all_reduce sum", out, want);
    s = comm->allReduce(in.data(), in.data(), count, op, "test in place");
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    expectNear(rank, mean ? "all_reduce mean in place" : "all_reduce sum in place", in, want);
  }
  {  // reduce-scatter: block `rank` of the sum
    std::vector<float> in = randomData(rank, count * n, 2), out(count);
    std::vector<double> want(count, 0.0);
    for (int r = 0; r < n; ++r) {
      std::vector<float> other = randomData(r, count * n, 2);
      for (size_t i = 0; i < count; ++i) want[i] += other[rank * count + i];
    }
    tfc::Status s = comm->reduceScatter(in.data(), out.data(), count, tfc::ReduceOp::kSum);
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    expectNear(rank, "reduce_scatter sum", out, want);
  }
  {  // all-gather: block r from rank r
    std::vector<float> in = randomData(rank, count, 3), out(count * n);
    std::vector<double> want;
    for (int r = 0; r < n; ++r) for (float x : randomData(r, count, 3)) want.push_back(x);
    tfc::Status s = comm->allGather(in.data(), out.data(), count);
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    expectNear(rank, "all_gather", out, want);
  }
  {  // all-to-all: block s of my recv is block `rank` of rank s's send
    std::vector<float> in = randomData(rank, count * n, 4), out(count * n);
    std::vector<double> want;
    for (int s = 0; s < n; ++s) {
      std::vector<float> other = randomData(s, count * n, 4);
      for (size_t i = 0; i < count; ++i) want.push_back(other[rank * count + i]);
    }
    tfc::Status s = comm->allToAll(in.data(), out.data(), count);
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    expectNear(rank, "all_to_all", out, want);
  }
  {  // broadcast from the last rank, then a barrier
    std::vector<float> data = randomData(rank, count, 5);
    tfc::Status s = comm->broadcast(data.data(), count * sizeof(float), n - 1);
    if (s.ok()) s = comm->barrier();
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    std::vector<float> root = randomData(n - 1, count, 5);
    expectNear(rank, "broadcast", data, std::vector<double>(root.begin(), root.end()));
  }
  {  // gradient buckets: two in flight at once (sizes 3 and 2 buffers, one empty), a
     // blocking all-reduce issued between their start and wait, the sources overwritten
     // right after the start (the communicator holds its own copy)
    const int64_t counts0[3] = {700, 1, 299}, counts1[2] = {0, 5000};
    std::vector<std::vector<float>> in0, in1, out0, out1;
    std::vector<const float*> send0, send1;
    std::vector<float*> recv0, recv1;
    for (int i = 0; i < 3; ++i) in0.push_back(randomData(rank, counts0[i], 10 + i));
    for (int i = 0; i < 2; ++i) in1.push_back(randomData(rank, counts1[i], 20 + i));
    for (auto& v : in0) { send0.push_back(v.data()); out0.emplace_back(v.size()); }
    for (auto& v : in1) { send1.push_back(v.data()); out1.emplace_back(v.size()); }
    for (auto& v : out0) recv0.push_back(v.data());
    for (auto& v : out1) recv1.push_back(v.data());
    tfc::Status s = comm->startAllReduce(7, 3, send0.data(), counts0, tfc::ReduceOp::kMean);
    if (s.ok()) s = comm->startAllReduce(8, 2, send1.data(), counts1, tfc::ReduceOp::kSum);
    for (auto& v : in0) std::fill(v.begin(), v.end(), 1e9f);
    std::vector<float> mid = randomData(rank, 10, 30), midOut(10);
    if (s.ok()) s = comm->allReduce(mid.data(), midOut.data(), 10, tfc::ReduceOp::kSum);
    if (s.ok()) s = comm->waitAllReduce(8, 2, recv1.data(), counts1);
    if (s.ok()) s = comm->waitAllReduce(7, 3, recv0.data(), counts0);
    if (!s.ok()) { std::printf("rank %d: FAIL %s\n", rank, s.message()); return 1; }
    auto reduced = [&](size_t elements, uint32_t salt, bool mean) {
      std::vector<double> want(elements, 0.0);
      for (int r = 0; r < n; ++r) {
        std::vector<float> other = randomData(r, elements, salt);
        for (size_t i = 0; i < elements; ++i) want[i] += other[i];
      }
      if (mean) for (double& w : want) w /= n;
      return want;
    };
    for (int i = 0; i < 3; ++i) expectNear(rank, "bucket mean", out0[i], reduced(counts0[i], 10 + i, true));
    for (int i = 0; i < 2; ++i) expectNear(rank, "bucket sum", out1[i], reduced(counts1[i], 20 + i, false));
    expectNear(rank, "all_reduce between a bucket's start and wait", midOut, reduced(10, 30, false));
    s = comm->waitAllReduce(7, 3, recv0.data(), counts0);
    bool refused = !s.ok() && std::string(s.message()).find("not started") != std::string::npos;
    std::printf("rank %d: %s a wait without a start is refused: %s\n", rank,
                refused ? "ok  " : "FAIL", s.ok() ? "(accepted)" : s.message());
    if (!refused) ++failures;
  }
  std::printf("rank %d of %d (%s): %s\n", rank, n, comm->transport(),
              failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}

// The groups of a mesh (groupCommunicator): world rank r = (d x S + s) x M + t; "tp" is the M
// ranks of (d, s), "pp" the S ranks of (d, t), "dp" the N ranks of (s, t). Each rank
// all-reduces (sum) its world rank's data in each and compares with the sum over the world
// ranks that the mesh puts in its group.
int checkGroups(tfc::Communicator* world, const tfc::ProcessMesh& mesh) {
  const int rank = world->rank(), M = static_cast<int>(mesh.tp), S = static_cast<int>(mesh.pp);
  const int t = rank % M, s = rank / M % S, d = rank / (M * S);
  const size_t count = 100;
  for (const char* name : {"tp", "pp", "dp", "tp"}) {
    auto group = tfc::groupCommunicator(name, mesh);
    if (!group.ok()) {
      std::printf("rank %d: FAIL %s\n", rank, group.status().message());
      return 1;
    }
    const std::string axis = name;
    std::vector<int> members;
    for (int i = 0; i < mesh.sizeOf(axis); ++i) {
      members.push_back(axis == "tp"   ? (d * S + s) * M + i
                        : axis == "pp" ? (d * S + i) * M + t
                                       : (i * S + s) * M + t);
    }
    const int expectedRank = axis == "tp" ? t : axis == "pp" ? s : d;
    std::vector<float> in = randomData(rank, count, 40), out(count);
    std::vector<double> want(count, 0.0);
    for (int r : members) {
      std::vector<float> other = randomData(r, count, 40);
      for (size_t i = 0; i < count; ++i) want[i] += other[i];
    }
    tfc::Status st = (*group)->allReduce(in.data(), out.data(), count, tfc::ReduceOp::kSum, "test");
    if (!st.ok()) {
      std::printf("rank %d: FAIL %s\n", rank, st.message());
      return 1;
    }
    std::string what = "group " + axis + " of " + std::to_string((*group)->size()) +
                       " ranks, rank " + std::to_string((*group)->rank()) + ": " + (*group)->name();
    if ((*group)->size() != static_cast<int>(members.size()) ||
        (*group)->rank() != expectedRank) {
      std::printf("rank %d: FAIL %s: size or rank not the mesh's\n", rank, what.c_str());
      ++failures;
    }
    expectNear(rank, what.c_str(), out, want);
  }
  auto other = tfc::groupCommunicator("ep", mesh);
  bool refused =
      !other.ok() && std::string(other.status().message()).find("'ep'") != std::string::npos;
  std::printf("rank %d: %s group 'ep' is refused\n", rank, refused ? "ok  " : "FAIL");
  if (!refused) ++failures;
  tfc::ProcessMesh otherMesh = mesh;
  otherMesh.dp *= 2;
  {
    auto again = tfc::groupCommunicator("tp", otherMesh);
    refused = !again.ok() &&
              std::string(again.status().message()).find("one process runs artifacts of one "
                                                         "layout") != std::string::npos;
    std::printf("rank %d: %s another mesh is refused\n", rank, refused ? "ok  " : "FAIL");
    if (!refused) ++failures;
  }
  std::printf("rank %d of %d groups (%s): %s\n", rank, world->size(), world->transport(),
              failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string mode = argc > 1 ? argv[1] : "check";
  auto world = tfc::worldCommunicator();
  if (!world.ok()) {
    std::fprintf(stderr, "tfc-comm-tool: %s\n", world.status().message());
    return 1;
  }
  tfc::Communicator* comm = *world;
  if (mode == "check") return check(comm);
  if (mode == "stall" && argc > 2) {
    int stalled = std::atoi(argv[2]);
    if (comm->rank() == stalled) {
      // Stops answering: never joins the collective (as a hung or stopped process would).
      sleep(static_cast<unsigned>(3 * tfc::commTimeoutSeconds() + 30));
      return 0;
    }
    std::vector<float> v(16, 1.0f);
    tfc::Status s = comm->allReduce(v.data(), v.data(), v.size(), tfc::ReduceOp::kSum, "test");
    std::fprintf(stderr, "tfc-comm-tool: rank %d: %s\n", comm->rank(),
                 s.ok() ? "the all-reduce completed without the stalled rank" : s.message());
    return 1;
  }
  if (mode == "groups" && argc > 4) {
    return checkGroups(comm, tfc::ProcessMesh{std::atoi(argv[2]), std::atoi(argv[3]),
                                              std::atoi(argv[4])});
  }
  if (mode == "bench" && argc > 2) {
    const size_t n = std::strtoull(argv[2], nullptr, 10);
    std::vector<float> v = randomData(comm->rank(), n, 6);
    std::vector<double> seconds;
    for (int i = 0; i < 25; ++i) {
      tfc::Status s = comm->barrier();
      auto start = std::chrono::steady_clock::now();
      if (s.ok()) s = comm->allReduce(v.data(), v.data(), n, tfc::ReduceOp::kMean, "bench");
      if (!s.ok()) {
        std::fprintf(stderr, "tfc-comm-tool: %s\n", s.message());
        return 1;
      }
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    const double sent = 2.0 * (comm->size() - 1) / comm->size() * n * sizeof(float);
    if (comm->rank() == 0) {
      std::printf("all_reduce of %zu floats (%.2f MB) over %d ranks: median %.3f ms, min %.3f ms; "
                  "%.2f MB sent per rank (ring), %.2f GB/s\n",
                  n, n * 4e-6, comm->size(), median * 1e3, seconds[0] * 1e3, sent * 1e-6,
                  sent / median * 1e-9);
    }
    return 0;
  }
  std::fprintf(stderr, "usage: tfc-comm-tool check | stall RANK | groups TP_SIZE | bench COUNT\n");
  return 2;
}
