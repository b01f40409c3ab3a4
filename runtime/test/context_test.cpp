// Tests of params and contexts with the fake model: binding weights from safetensors,
// calling entry points with shape/dtype checks, state updates and resets, errors reported
// by compiled code, lazy arenas and concurrent contexts.
#include <atomic>
#include <climits>
#include <functional>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_artifacts.hpp"
#include "test_util.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/safetensors.hpp"

namespace tfc {
namespace {

using testing::fakeArtifact;
using testing::isError;
using testing::TempDir;

HostTensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  auto tensor = HostTensor::allocate(TFC_DTYPE_F32, std::move(shape));
  EXPECT_OK(tensor);
  EXPECT_EQ(static_cast<size_t>(tensor->numElements()), values.size());
  std::memcpy(tensor->mutableData(), values.data(), values.size() * sizeof(float));
  return std::move(tensor).value();
}

HostTensor i32Scalar(int32_t value) {
  auto tensor = HostTensor::allocate(TFC_DTYPE_I32, {});
  EXPECT_OK(tensor);
  *tensor->mutableDataAs<int32_t>() = value;
  return std::move(tensor).value();
}

std::vector<float> floats(const HostTensor& tensor) {
  const float* data = tensor.dataAs<float>();
  return std::vector<float>(data, data + tensor.numElements());
}

std::vector<float> floats(const tfc_tensor_ref_t& ref) {
  const float* data = static_cast<const float*>(ref.data);
  return std::vector<float>(data, data + ref.byte_size / sizeof(float));
}

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto artifact = Artifact::open(fakeArtifact("fake_model"));
    ASSERT_OK(artifact);
    artifact_ = *artifact;
    auto params = Params::create(artifact_);
    ASSERT_OK(params);
    params_ = *params;
    ASSERT_OK(params_.init(42));
    tfc_context_options_t options;
    tfc_context_options_initialize(&options);
    options.num_threads = 2;
    auto context = Context::create(artifact_, params_, &options);
    ASSERT_OK(context);
    context_ = *context;
  }

  Status callStatus(const std::string& entry, const std::vector<TensorView>& inputs) {
    auto outputs = context_.call(entry, inputs);
    if (outputs.ok()) return Status();
    return std::move(outputs).takeStatus();
  }

  Artifact artifact_;
  Params params_;
  Context context_;
  TempDir dir_;
};

TEST_F(ContextTest, ForwardComputesFromParamsAndState) {
  HostTensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto outputs = context_.call("forward", {x.view()});
  ASSERT_OK(outputs);
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ((*outputs)[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(floats((*outputs)[0]), floats(x));  // scale = ones, bias = zeros, acc = zeros
  EXPECT_EQ(context_.numThreads(), 2);
}

TEST_F(ContextTest, EntryUpdatesParamsInPlace) {
  HostTensor delta = f32({4}, {1, 1, 1, 1});
  auto sum = context_.call("update", {delta.view()});
  ASSERT_OK(sum);
  EXPECT_EQ((*sum)[0].rank(), 0u);
  EXPECT_EQ(*(*sum)[0].dataAs<float>(), 8.0f);
  auto scale = params_.tensor(0);
  ASSERT_OK(scale);
  EXPECT_EQ(floats(*scale), (std::vector<float>{2, 2, 2, 2}));
  HostTensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto y = context_.call("forward", {x.view()});
  ASSERT_OK(y);
  EXPECT_EQ(floats((*y)[0]), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
}

TEST_F(ContextTest, DecodeUpdatesStateAndResetClearsIt) {
  HostTensor x = f32({4}, {1, 2, 3, 4});
  HostTensor pos = i32Scalar(0);
  ASSERT_OK(callStatus("decode", {pos.view(), x.view()}));
  auto y = context_.call("decode", {pos.view(), x.view()});
  ASSERT_OK(y);
  EXPECT_EQ(floats((*y)[0]), (std::vector<float>{2, 4, 6, 8}));
  auto steps = context_.state(1);
  ASSERT_OK(steps);
  EXPECT_EQ(*static_cast<const int64_t*>(steps->data), 2);
  // forward sees the state (acc).
  HostTensor zeros = f32({2, 4}, std::vector<float>(8, 0.0f));
  auto forward = context_.call("forward", {zeros.view()});
  ASSERT_OK(forward);
  EXPECT_EQ(floats((*forward)[0]), (std::vector<float>{2, 4, 6, 8, 2, 4, 6, 8}));

  ASSERT_OK(context_.resetState());
  EXPECT_EQ(*static_cast<const int64_t*>(steps->data), 0);
  auto acc = context_.state(0);
  ASSERT_OK(acc);
  EXPECT_EQ(floats(*acc), (std::vector<float>{0, 0, 0, 0}));
}

TEST_F(ContextTest, ReportedErrorBecomesAStatusAndStateIsUntouched) {
  HostTensor x = f32({4}, {1, 2, 3, 4});
  HostTensor pos = i32Scalar(17);
  Status status = callStatus("decode", {pos.view(), x.view()});
  EXPECT_EQ(status.code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(status.message()),
            fakeArtifact("fake_model") + ": entry 'decode': position 17 is out of range [0, 16)");
  auto steps = context_.state(1);
  ASSERT_OK(steps);
  EXPECT_EQ(*static_cast<const int64_t*>(steps->data), 0);
  // The next call starts clean.
  HostTensor good = i32Scalar(3);
  EXPECT_OK(callStatus("decode", {good.view(), x.view()}));
  EXPECT_TRUE(isError(callStatus("fail", {}), TFC_INVALID_ARGUMENT, "entry 'fail'",
                      "token id 99 is out of range [0, 50)"));
  EXPECT_TRUE(isError(callStatus("fail_silent", {}), TFC_INTERNAL, "entry 'fail_silent'",
                      "failed (returned 3) without reporting an error"));
}

TEST_F(ContextTest, InputsAreCheckedAgainstTheEntry) {
  HostTensor wrongShape = f32({2, 5}, std::vector<float>(10, 0.0f));
  Status status = callStatus("forward", {wrongShape.view()});
  EXPECT_EQ(status.code(), TFC_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(status.message()),
            fakeArtifact("fake_model") +
                ": entry 'forward' input 'x' has shape [2, 5], expected [2, 4]");

  auto wrongDtype = HostTensor::allocate(TFC_DTYPE_I32, {2, 4});
  ASSERT_OK(wrongDtype);
  EXPECT_TRUE(isError(callStatus("forward", {wrongDtype->view()}), TFC_INVALID_ARGUMENT,
                      "entry 'forward' input 'x'", "has dtype I32, expected F32"));

  HostTensor x = f32({4}, {1, 2, 3, 4});
  EXPECT_TRUE(isError(callStatus("decode", {x.view()}), TFC_INVALID_ARGUMENT, "entry 'decode'",
                      "takes 2 inputs (pos, x), got 1"));
  EXPECT_TRUE(isError(callStatus("forwrd", {x.view()}), TFC_NOT_FOUND, "no entry 'forwrd'",
                      "did you mean 'forward'?"));

  // Caller-provided outputs are checked too.
  HostTensor input = f32({2, 4}, std::vector<float>(8, 1.0f));
  HostTensor badOutput = f32({8}, std::vector<float>(8, 0.0f));
  TensorView inputView = input.view(), badOutputView = badOutput.view();
  EXPECT_TRUE(isError(context_.call("forward", {tensorRef(inputView)},
                                    {tensorRef(badOutputView)}),
                      TFC_INVALID_ARGUMENT, "entry 'forward' output 'y'",
                      "has shape [8], expected [2, 4]"));
  EXPECT_TRUE(isError(context_.call("forward", {tensorRef(inputView)}, {}),
                      TFC_INVALID_ARGUMENT, "entry 'forward'", "has 1 output (y), got 0"));
}

TEST_F(ContextTest, AliasingBuffersAreRefused) {
  HostTensor buffer = f32({2, 4}, std::vector<float>(8, 1.0f));
  TensorView view = buffer.view();  // tensorRef borrows the view's shape
  tfc_tensor_ref_t ref = tensorRef(view);
  EXPECT_TRUE(isError(context_.call("forward", {ref}, {ref}), TFC_INVALID_ARGUMENT,
                      "entry 'forward'", "input 'x' and output 'y' overlap in memory"));
  // An output may not be a parameter's storage either.
  auto scale = params_.tensor(0);
  ASSERT_OK(scale);
  HostTensor delta = f32({4}, {1, 1, 1, 1});
  TensorView deltaView = delta.view();
  EXPECT_TRUE(isError(context_.call("update", {tensorRef(deltaView)}, {*scale}),
                      TFC_INVALID_ARGUMENT, "entry 'update'", "has shape [4], expected []"));
  auto acc = context_.state(0);
  ASSERT_OK(acc);
  HostTensor sum = f32({}, {0});
  TensorView sumView = sum.view();
  EXPECT_TRUE(isError(context_.call("update", {*acc}, {tensorRef(sumView)}),
                      TFC_INVALID_ARGUMENT, "entry 'update'", "overlap in memory"));
}

TEST_F(ContextTest, ParallelForRunsThroughTheHostApi) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  HostTensor x = f32({1000}, values);
  auto y = context_.call("double", {x.view()});
  ASSERT_OK(y);
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(floats((*y)[0])[i], 2.0f * values[i]);
}

TEST_F(ContextTest, ProfilingTimesEachKernelLaunch) {
  int32_t forward = *artifact_.findEntry("forward");
  double seconds[3] = {-1, -1, -1};
  uint64_t calls = 99;
  // Off: no totals to read.
  EXPECT_TRUE(isError(Status(tfc_context_kernel_times(context_.get(), forward, seconds, 3,
                                                       &calls)),
                      TFC_FAILED_PRECONDITION, "profiling is off", "tfc_context_set_profiling"));
  ASSERT_OK(Status(tfc_context_set_profiling(context_.get(), true)));
  HostTensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  for (int i = 0; i < 3; ++i) ASSERT_OK(context_.call("forward", {x.view()}));
  ASSERT_OK(Status(tfc_context_kernel_times(context_.get(), forward, seconds, 3, &calls)));
  EXPECT_EQ(calls, 3u);
  // The fake's second launch spins for 1 ms per call; the first only fills 256 bytes.
  EXPECT_GE(seconds[1], 3 * 1e-3);
  EXPECT_LT(seconds[1], 3.0);
  EXPECT_GE(seconds[0], 0.0);
  EXPECT_LT(seconds[0], seconds[1]);
  EXPECT_EQ(seconds[2], 0.0);  // past the entry's launches: zeroed
  // Too little room, an index outside the table, an entry without a kernel table.
  EXPECT_TRUE(isError(Status(tfc_context_kernel_times(context_.get(), forward, seconds, 1,
                                                       nullptr)),
                      TFC_INVALID_ARGUMENT, "2 kernel launches", "room was given for 1"));
  EXPECT_TRUE(isError(Status(tfc_context_kernel_times(context_.get(), 1000, seconds, 3,
                                                       nullptr)),
                      TFC_INVALID_ARGUMENT, "entry index 1000", "outside"));
  int32_t decode = *artifact_.findEntry("decode");
  ASSERT_OK(Status(tfc_context_kernel_times(context_.get(), decode, seconds, 3, &calls)));
  EXPECT_EQ(calls, 0u);
  // Enabling again clears the totals; disabling stops the timers.
  ASSERT_OK(Status(tfc_context_set_profiling(context_.get(), true)));
  ASSERT_OK(Status(tfc_context_kernel_times(context_.get(), forward, seconds, 3, &calls)));
  EXPECT_EQ(calls, 0u);
  EXPECT_EQ(seconds[1], 0.0);
  ASSERT_OK(Status(tfc_context_set_profiling(context_.get(), false)));
  ASSERT_OK(context_.call("forward", {x.view()}));
  EXPECT_TRUE(isError(Status(tfc_context_kernel_times(context_.get(), forward, seconds, 3,
                                                       nullptr)),
                      TFC_FAILED_PRECONDITION, "profiling is off", "first"));
}

TEST(ContextParamsTest, UnsetParametersAreRefusedAtCallTime) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  auto context = Context::create(*artifact, *params);
  ASSERT_OK(context);
  auto outputs = context->call("fail_silent", {});
  ASSERT_FALSE(outputs.ok());
  EXPECT_TRUE(isError(outputs.status(), TFC_FAILED_PRECONDITION, "fake_model.so",
                      "parameters 'scale', 'bias', 'proj.weight', 'embed' were never set"));
  HostTensor ones = f32({4}, {1, 1, 1, 1});
  ASSERT_OK(params->set(0, ones.view()));
  EXPECT_TRUE(params->isSet(0));
  EXPECT_FALSE(params->isSet(1));
  EXPECT_TRUE(isError(params->set(1, f32({3}, {1, 2, 3}).view()), TFC_INVALID_ARGUMENT,
                      "parameter 'bias'", "has shape [3], expected [4]"));
}

TEST(ContextParamsTest, ParamsOfAnotherArtifactAreRefused) {
  auto a = Artifact::open(fakeArtifact("fake_model"));
  auto b = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(a);
  ASSERT_OK(b);
  auto params = Params::create(*a);
  ASSERT_OK(params);
  auto context = Context::create(*b, *params);
  ASSERT_FALSE(context.ok());
  EXPECT_TRUE(isError(context.status(), TFC_INVALID_ARGUMENT, "fake_model.so", "params belong to"));
}

// Writes a safetensors file with the fake model's parameters, edited by |edit|.
void writeWeights(const std::string& path, const Params& params, const Artifact& artifact,
                  const std::function<void(std::vector<NamedTensorView>&)>& edit) {
  std::vector<NamedTensorView> tensors;
  for (int32_t i = 0; i < artifact.paramCount(); ++i) {
    auto ref = params.tensor(i);
    ASSERT_OK(ref);
    tensors.push_back({artifact.param(i).name, tensorView(*ref)});
  }
  edit(tensors);
  ASSERT_OK(writeSafetensors(path, tensors));
}

TEST_F(ContextTest, ParamsRoundTripThroughSafetensors) {
  std::string path = dir_.file("w.safetensors");
  ASSERT_OK(params_.saveSafetensors(path));
  auto file = SafetensorsFile::open(path);
  ASSERT_OK(file);
  EXPECT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->metadata().at("format"), "pt");

  auto loaded = Params::create(artifact_);
  ASSERT_OK(loaded);
  ASSERT_OK(loaded->loadSafetensors(path));
  for (int32_t i = 0; i < artifact_.paramCount(); ++i) {
    auto a = params_.tensor(i);
    auto b = loaded->tensor(i);
    ASSERT_OK(a);
  ASSERT_OK(b);
    EXPECT_EQ(std::memcmp(a->data, b->data, a->byte_size), 0) << artifact_.param(i).name;
  }
  EXPECT_OK(loaded->checkAllSet());
}

TEST_F(ContextTest, BindingErrorsNameTheFileAndTheTensor) {
  std::string path = dir_.file("bad.safetensors");
  // Missing.
  writeWeights(path, params_, artifact_, [](auto& t) { t.erase(t.begin() + 3); });
  auto fresh = Params::create(artifact_);
  ASSERT_OK(fresh);
  EXPECT_TRUE(isError(fresh->loadSafetensors(path), TFC_NOT_FOUND, path,
                      "missing parameter 'embed' (F32 [8, 4])"));
  // Misnamed: an unexpected tensor with a suggestion, plus the missing one.
  writeWeights(path, params_, artifact_, [](auto& t) { t[2].name = "proj.weigth"; });
  Status misnamed = fresh->loadSafetensors(path);
  EXPECT_TRUE(isError(misnamed, TFC_NOT_FOUND, path, "2 problems"));
  EXPECT_NE(std::string(misnamed.message())
                .find("unexpected tensor 'proj.weigth' (no parameter of that name; did you mean "
                      "'proj.weight'?)"),
            std::string::npos)
      << misnamed.message();
  // Extra.
  HostTensor extra = f32({1}, {1});
  writeWeights(path, params_, artifact_, [&](auto& t) { t.push_back({"lm_head.bias", extra.view()}); });
  EXPECT_TRUE(isError(fresh->loadSafetensors(path), TFC_INVALID_ARGUMENT, path,
                      "unexpected tensor 'lm_head.bias'"));
  tfc_params_load_options_t lenient;
  tfc_params_load_options_initialize(&lenient);
  lenient.allow_unexpected = true;
  EXPECT_OK(fresh->loadSafetensors(path, &lenient));
  // Wrong shape.
  HostTensor wrong = f32({4, 8}, std::vector<float>(32, 0.0f));
  writeWeights(path, params_, artifact_, [&](auto& t) { t[3].tensor = wrong.view(); });
  EXPECT_TRUE(isError(fresh->loadSafetensors(path), TFC_INVALID_ARGUMENT, path,
                      "tensor 'embed' has shape [4, 8], expected [8, 4]"));
  // Wrong dtype.
  auto half = HostTensor::allocate(TFC_DTYPE_F16, {4});
  ASSERT_OK(half);
  writeWeights(path, params_, artifact_, [&](auto& t) { t[1].tensor = half->view(); });
  EXPECT_TRUE(isError(fresh->loadSafetensors(path), TFC_INVALID_ARGUMENT, path,
                      "tensor 'bias' has dtype F16, expected F32"));
  // A missing file.
  EXPECT_TRUE(isError(fresh->loadSafetensors(dir_.file("nope.safetensors")), TFC_NOT_FOUND,
                      "nope.safetensors", ""));
}

TEST_F(ContextTest, FailedLoadChangesNothing) {
  std::string path = dir_.file("partial.safetensors");
  HostTensor wrong = f32({4, 8}, std::vector<float>(32, 0.0f));
  HostTensor sevens = f32({4}, {7, 7, 7, 7});
  writeWeights(path, params_, artifact_, [&](auto& t) {
    t[0].tensor = sevens.view();
    t[3].tensor = wrong.view();
  });
  ASSERT_FALSE(params_.loadSafetensors(path).ok());
  auto scale = params_.tensor(0);
  ASSERT_OK(scale);
  EXPECT_EQ(floats(*scale), (std::vector<float>{1, 1, 1, 1}));

  tfc_params_load_options_t partial;
  tfc_params_load_options_initialize(&partial);
  partial.allow_missing = true;
  writeWeights(path, params_, artifact_, [&](auto& t) {
    t[0].tensor = sevens.view();
    t.erase(t.begin() + 1, t.end());
  });
  auto fresh = Params::create(artifact_);
  ASSERT_OK(fresh);
  ASSERT_OK(fresh->loadSafetensors(path, &partial));
  EXPECT_TRUE(fresh->isSet(0));
  EXPECT_FALSE(fresh->isSet(1));
  EXPECT_TRUE(isError(fresh->saveSafetensors(dir_.file("out.safetensors")),
                      TFC_FAILED_PRECONDITION, "fake_model.so", "never set"));
  EXPECT_EQ(dir_.list(), (std::vector<std::string>{"partial.safetensors"}));
}

TEST_F(ContextTest, StateRoundTripsThroughSafetensors) {
  HostTensor x = f32({4}, {1, 2, 3, 4});
  HostTensor pos = i32Scalar(0);
  ASSERT_OK(callStatus("decode", {pos.view(), x.view()}));
  std::string path = dir_.file("state.safetensors");
  ASSERT_OK(context_.saveStateSafetensors(path));
  ASSERT_OK(context_.resetState());
  ASSERT_OK(context_.loadStateSafetensors(path));
  auto acc = context_.state(0);
  ASSERT_OK(acc);
  EXPECT_EQ(floats(*acc), (std::vector<float>{1, 2, 3, 4}));
  // The weights file is not a state file.
  std::string weights = dir_.file("w.safetensors");
  ASSERT_OK(params_.saveSafetensors(weights));
  EXPECT_TRUE(isError(context_.loadStateSafetensors(weights), TFC_NOT_FOUND, weights,
                      "missing state tensor 'acc'"));
}

// Counts the bytes it hands out, to see when the runtime allocates.
struct CountingAllocator {
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> live{0};
  static void* allocate(void* self, size_t size, size_t alignment) {
    auto* counter = static_cast<CountingAllocator*>(self);
    void* memory = nullptr;
    if (posix_memalign(&memory, alignment, size) != 0) return nullptr;
    counter->bytes += size;
    ++counter->live;
    return memory;
  }
  static void deallocate(void* self, void* pointer) {
    --static_cast<CountingAllocator*>(self)->live;
    std::free(pointer);
  }
  tfc_allocator_t allocator() { return tfc_allocator_t{this, allocate, deallocate}; }
};

TEST(ContextArenaTest, ArenasAreAllocatedLazilyAndReused) {
  CountingAllocator counter;
  {
    auto artifact = Artifact::open(fakeArtifact("fake_model"));
    ASSERT_OK(artifact);
    tfc_params_options_t paramsOptions;
    tfc_params_options_initialize(&paramsOptions);
    paramsOptions.allocator = counter.allocator();
    auto params = Params::create(*artifact, &paramsOptions);
    ASSERT_OK(params);
    ASSERT_OK(params->init(0));
    tfc_context_options_t options;
    tfc_context_options_initialize(&options);
    options.allocator = counter.allocator();
    options.num_threads = 1;
    auto context = Context::create(*artifact, *params, &options);
    ASSERT_OK(context);
    EXPECT_LT(counter.bytes.load(), 4096u);  // params and state only
    EXPECT_EQ(context->arenaBytesAllocated(), 0u);
    EXPECT_EQ(context->numThreads(), 1);
    HostTensor x = f32({1}, {41});
    for (int i = 0; i < 3; ++i) {
      auto y = context->call("big_arena", {x.view()});
      ASSERT_OK(y);
      EXPECT_EQ(*(*y)[0].dataAs<float>(), 42.0f);
    }
    EXPECT_EQ(context->arenaBytesAllocated(), 64u << 20);
    EXPECT_LT(counter.bytes.load(), (64u << 20) + 8192u);  // once, not three times
  }
  EXPECT_EQ(counter.live.load(), 0);
}

TEST(ContextArenaTest, FailingAllocatorGivesOutOfMemory) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  ASSERT_OK(params->init(0));
  tfc_context_options_t options;
  tfc_context_options_initialize(&options);
  options.allocator.allocate = [](void*, size_t size, size_t alignment) -> void* {
    if (size > (1u << 20)) return nullptr;
    void* memory = nullptr;
    return posix_memalign(&memory, alignment, size) == 0 ? memory : nullptr;
  };
  auto context = Context::create(*artifact, *params, &options);
  ASSERT_OK(context);
  HostTensor x = f32({1}, {1});
  auto y = context->call("big_arena", {x.view()});
  ASSERT_FALSE(y.ok());
  EXPECT_TRUE(isError(y.status(), TFC_OUT_OF_MEMORY, "entry 'big_arena'",
                      "cannot allocate 67108864 bytes"));
}

TEST(ContextThreadsTest, DistinctContextsRunConcurrently) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  ASSERT_OK(params->init(3));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      tfc_context_options_t options;
      tfc_context_options_initialize(&options);
      options.num_threads = 2;
      auto context = Context::create(*artifact, *params, &options);
      if (!context.ok()) {
        ++failures;
        return;
      }
      HostTensor x = f32({4}, {1, 1, 1, static_cast<float>(t)});
      HostTensor pos = i32Scalar(1);
      std::vector<float> values(1000, 1.5f);
      HostTensor big = f32({1000}, values);
      for (int i = 0; i < 50; ++i) {
        auto y = context->call("decode", {pos.view(), x.view()});
        auto z = context->call("double", {big.view()});
        if (!y.ok() || !z.ok() || (*y)[0].dataAs<float>()[3] != static_cast<float>(t * (i + 1)) ||
            (*z)[0].dataAs<float>()[999] != 3.0f) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ContextOptionsTest, BadOptionsAreRefused) {
  auto artifact = Artifact::open(fakeArtifact("fake_model"));
  ASSERT_OK(artifact);
  auto params = Params::create(*artifact);
  ASSERT_OK(params);
  tfc_context_options_t options;
  tfc_context_options_initialize(&options);
  options.num_threads = -2;
  auto context = Context::create(*artifact, *params, &options);
  EXPECT_TRUE(isError(context.status(), TFC_INVALID_ARGUMENT, "num_threads", "-2"));
  // Issue 29: 10**6 started threads until the system refused one (an abort).
  for (int32_t threads : {TFC_CONTEXT_MAX_THREADS + 1, 1000000, INT32_MAX}) {
    options.num_threads = threads;
    context = Context::create(*artifact, *params, &options);
    EXPECT_TRUE(isError(context.status(), TFC_INVALID_ARGUMENT,
                        "num_threads is " + std::to_string(threads),
                        "at most " + std::to_string(TFC_CONTEXT_MAX_THREADS) + " threads"));
  }
  options.num_threads = 3;
  context = Context::create(*artifact, *params, &options);
  ASSERT_OK(context);
  EXPECT_EQ(context->numThreads(), 3);
  tfc_context_options_initialize(&options);
  options.allocator.allocate = nullptr;
  context = Context::create(*artifact, *params, &options);
  EXPECT_TRUE(isError(context.status(), TFC_INVALID_ARGUMENT, "allocator", "null"));
}

}  // namespace
}  // namespace tfc
