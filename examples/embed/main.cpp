// tfc-embed-example MODEL.so [ENTRY] [SEED]: opens a compiled model, initializes its
// parameters from their initializers, calls ENTRY (default "forward") with every input
// filled with ones (floats) or zeros (integers), and prints the first values of each output.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tfc/runtime/runtime.hpp"

namespace {

tfc::Status run(const std::string& modelPath, const std::string& entryName, uint64_t seed) {
  TFC_ASSIGN_OR_RETURN(tfc::Artifact artifact, tfc::Artifact::open(modelPath));
  std::printf("model %s (%s), target %s\n", modelPath.c_str(),
              std::string(artifact.compilerVersion()).c_str(),
              std::string(artifact.target()).c_str());

  TFC_ASSIGN_OR_RETURN(tfc::Params params, tfc::Params::create(artifact));
  TFC_RETURN_IF_ERROR(params.init(seed));
  TFC_ASSIGN_OR_RETURN(tfc::Context context, tfc::Context::create(artifact, params));

  TFC_ASSIGN_OR_RETURN(int32_t index, artifact.findEntry(entryName));
  const tfc_entry_t& entry = artifact.entry(index);
  std::vector<tfc::HostTensor> inputs;
  std::vector<tfc::TensorView> views;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    const tfc_tensor_desc_t& desc = entry.inputs[i];
    TFC_ASSIGN_OR_RETURN(tfc::HostTensor tensor,
                         tfc::HostTensor::allocate(static_cast<tfc_dtype_t>(desc.dtype),
                                                   tfc::shapeOf(desc)));
    if (desc.dtype == TFC_ABI_F32) {
      float* data = tensor.mutableDataAs<float>();
      for (int64_t k = 0; k < tensor.numElements(); ++k) data[k] = 1.0f;
    }
    views.push_back(tensor.view());
    inputs.push_back(std::move(tensor));
  }

  TFC_ASSIGN_OR_RETURN(std::vector<tfc::HostTensor> outputs, context.call(entryName, views));
  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    const tfc::HostTensor& output = outputs[static_cast<size_t>(i)];
    std::printf("output '%s' %s %s:", entry.outputs[i].name, tfc_dtype_name(output.dtype()),
                tfc::formatShape(output.shape()).c_str());
    for (int64_t k = 0; k < output.numElements() && k < 8; ++k) {
      if (output.dtype() == TFC_DTYPE_F32) std::printf(" %g", output.dataAs<float>()[k]);
      if (output.dtype() == TFC_DTYPE_I32) std::printf(" %d", output.dataAs<int32_t>()[k]);
      if (output.dtype() == TFC_DTYPE_I64) {
        std::printf(" %lld", static_cast<long long>(output.dataAs<int64_t>()[k]));
      }
    }
    std::printf("%s\n", output.numElements() > 8 ? " ..." : "");
  }
  return tfc::Status();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s MODEL.so [ENTRY] [SEED]\n", argv[0]);
    return 2;
  }
  std::string entry = argc > 2 ? argv[2] : "forward";
  uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  tfc::Status status = run(argv[1], entry, seed);
  if (!status.ok()) {
    std::fprintf(stderr, "tfc-embed-example: error: %s\n", status.message());
    return 1;
  }
  return 0;
}
