// One entry point bound to buffers of its own: every input and output is allocated once (in
// the entry's order, zeroed) and reused by each call(), so a loop that calls an entry many
// times (decode, train_step) allocates nothing per call. Inputs and outputs are found by
// name; an expected signature is checked once, at binding, with a message that shows the
// entry's signature next to the one the caller needs.
//
//   TFC_ASSIGN_OR_RETURN(tfc::BoundEntry decode,
//                        tfc::BoundEntry::create(artifact, "decode",
//                                                {{"token", TFC_DTYPE_I32, 2},
//                                                 {"pos", TFC_DTYPE_I32, 0}},
//                                                {{"logits", TFC_DTYPE_F32, 2}}, "generate"));
//   *decode.input("pos").mutableDataAs<int32_t>() = 5;
//   TFC_RETURN_IF_ERROR(decode.call(context));
//   const float* logits = decode.output("logits").dataAs<float>();
//
// Thread-safety: none; a BoundEntry is used by one thread at a time (as its Context is).
// Moving a BoundEntry keeps its buffers where they are.
#ifndef TFC_RUNTIME_BOUND_ENTRY_HPP_
#define TFC_RUNTIME_BOUND_ENTRY_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tensor.hpp"

namespace tfc {

// What a caller expects of one input or output of an entry: its name, dtype and rank (the
// dimensions are the model's and are read from the bound buffers).
struct TensorExpectation {
  std::string name;
  tfc_dtype_t dtype;
  int32_t rank;
};

// "decode(token i32[1, 1], pos i32[]) -> (logits f32[1, 50257])".
std::string entrySignature(const tfc_entry_t& entry);

class BoundEntry {
 public:
  // Whether create() allocates the input buffers, or the caller points the inputs at its
  // own memory with useInputs() before the first call.
  enum class Inputs { kAllocate, kCallerProvided };

  BoundEntry() = default;

  // Binds entry |name| of |artifact| (NOT_FOUND, naming the entry and listing the model's,
  // when it has none).
  static StatusOr<BoundEntry> create(const Artifact& artifact, const std::string& name,
                                     Inputs inputs = Inputs::kAllocate);
  // Binds entry |name| and checks that its inputs and outputs are exactly |inputs| and
  // |outputs| (by name, in any order, with those dtypes and ranks). A mismatch is
  // INVALID_ARGUMENT: "entry 'NAME' does not have the signature USER needs: it is ...,
  // USER expects ...".
  static StatusOr<BoundEntry> create(const Artifact& artifact, const std::string& name,
                                     const std::vector<TensorExpectation>& inputs,
                                     const std::vector<TensorExpectation>& outputs,
                                     const std::string& user);

  const std::string& name() const { return name_; }
  int32_t index() const { return index_; }
  const tfc_entry_t& desc() const { return *desc_; }
  std::string signature() const { return entrySignature(*desc_); }

  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return outputs_.size(); }
  // The position of input / output |name| in the entry's order, if it has one.
  std::optional<size_t> findInput(std::string_view name) const;
  std::optional<size_t> findOutput(std::string_view name) const;

  // The buffer of input / output |i| (in the entry's order) or |name|, which must exist
  // (create() with expectations has checked it; otherwise use findInput first).
  HostTensor& input(size_t i) { return inputs_[i]; }
  HostTensor& input(std::string_view name) { return inputs_[*findInput(name)]; }
  const HostTensor& output(size_t i) const { return outputs_[i]; }
  const HostTensor& output(std::string_view name) const { return outputs_[*findOutput(name)]; }

  // Replaces input |i|'s buffer by |tensor|, which must have the entry's dtype and shape
  // (INVALID_ARGUMENT naming the entry and the input otherwise).
  Status setInput(size_t i, HostTensor tensor);
  // Makes calls read the inputs from |views| (in the entry's order) instead of the bound
  // buffers; the views (their shapes and data) must outlive those calls. Their count, dtypes
  // and shapes are checked by each call, as tfc_context_call checks them.
  void useInputs(const std::vector<TensorView>& views);

  // Calls the entry on the bound buffers; the outputs are in output(...) afterwards.
  Status call(Context& context);

  // Hands the output buffers over (the entry must be bound again before another call).
  std::vector<HostTensor> takeOutputs() && { return std::move(outputs_); }

 private:
  std::string name_;
  int32_t index_ = -1;
  const tfc_entry_t* desc_ = nullptr;  // owned by the artifact, which the Artifact keeps
  Artifact artifact_;
  // HostTensor keeps its data and shape on the heap, so the refs stay valid across moves.
  std::vector<HostTensor> inputs_, outputs_;
  std::vector<tfc_tensor_ref_t> inputRefs_, outputRefs_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_BOUND_ENTRY_HPP_
