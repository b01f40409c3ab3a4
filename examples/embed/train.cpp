// tfc-train-example MODEL.so DATA.bin CHECKPOINT: the C++ API's trainer. Trains a
// decoder-only model compiled with an optimizer (`tfc model.mlir --optimizer=adamw`) for 20
// steps on a token file (`tfc-run tokenize` writes one), printing the loss as it goes, and
// saves a checkpoint; run it again and it resumes from the checkpoint up to step 40.
#include <cstdio>
#include <string>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/trainer.hpp"

namespace {

tfc::Status run(const std::string& model, const std::string& data, const std::string& ckpt) {
  TFC_ASSIGN_OR_RETURN(tfc::Artifact artifact, tfc::Artifact::open(model));
  TFC_ASSIGN_OR_RETURN(tfc::Params params, tfc::Params::create(artifact));
  TFC_RETURN_IF_ERROR(params.init(/*seed=*/0));
  TFC_ASSIGN_OR_RETURN(tfc::Context context, tfc::Context::create(artifact, params));

  tfc::TrainerOptions options;
  options.dataPath = data;
  options.savePath = ckpt;
  options.hyper.lr = 1e-2;
  options.hyper.warmup = 5;
  options.hyper.schedule = 2;  // warm-up, then cosine decay
  std::FILE* existing = std::fopen(ckpt.c_str(), "rb");
  options.steps = existing ? 40 : 20;
  options.totalSteps = 40;  // one schedule across both runs
  if (existing) std::fclose(existing);
  TFC_ASSIGN_OR_RETURN(tfc::Trainer trainer, tfc::Trainer::create(context, options));
  if (existing) {
    auto metadata = trainer.resume(ckpt);  // the checkpoint's metadata, if wanted
    if (!metadata.ok()) return std::move(metadata).takeStatus();
    std::printf("resumed at step %lld\n", static_cast<long long>(trainer.step()));
  }
  TFC_ASSIGN_OR_RETURN(tfc::TrainOutcome outcome,
                       trainer.run([](const tfc::TrainProgress& progress) {
                         const tfc::TrainLogRow& row = progress.row;
                         if (progress.event == tfc::TrainProgress::Event::kStep &&
                             row.step % 5 == 0) {
                           std::printf("step %lld loss %.4f lr %.2e\n",
                                       static_cast<long long>(row.step), row.loss, row.lr);
                         }
                         return tfc::Status();  // an error status stops the run with it
                       }));
  std::printf("trained steps %lld..%lld in %.2f s; saved %s\n",
              static_cast<long long>(outcome.firstStep), static_cast<long long>(outcome.lastStep),
              outcome.seconds, ckpt.c_str());
  return tfc::Status();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.so DATA.bin CHECKPOINT.safetensors\n", argv[0]);
    return 2;
  }
  tfc::Status status = run(argv[1], argv[2], argv[3]);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message());
    return 1;
  }
  return 0;
}
