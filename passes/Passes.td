//===- Passes.td - tfc passes ---------------------------------------------===//
//
// Every tfc pass: summary, description with a before/after example, options.
// The flag is the pass name; the file is named after it.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_PASSES_TD
#define TFC_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Analyses and reports
//===----------------------------------------------------------------------===//

def TfcSummary : Pass<"tfc-summary", "mlir::ModuleOp"> {
  let summary = "Prints a summary of a tfc module: parameters, state, entries";
  let description = [{
    Prints, without changing the IR: the number of parameters and their total
    size in bytes (trainable and frozen), the module state, and for every entry
    function its signature, its op count and the ops it uses most. `tfc`
    prints the same summary after compiling.

    ```
    tfc-opt --tfc-summary model.mlir -o /dev/null
    ```
    prints, for example:
    ```
    module: 148 parameters, 124439808 values (497.8 MB), 0 frozen
    state: 24 tensors, 75497472 values (302.0 MB)
    entry @forward(tensor<1x64xi32>) -> tensor<1x64x50257xf32>: 412 ops
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' is stdout)">,
  ];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def TfcAutocast : Pass<"tfc-autocast", "mlir::ModuleOp"> {
  let summary = "Mixed-precision training: matmuls and attention in bf16/f16, the rest f32";
  let description = [{
    What `torch.autocast` does, on the `loss` and `loss_train` entries and
    before tfc-autodiff builds the backward from them: `tfc.matmul`,
    `tfc.linear` and `tfc.attention` (PyTorch's lower-precision list) take
    their f32 operands cast to `precision` and their results are cast back to
    f32; embeddings, norms, softmax, cross-entropy and the loss stay f32, and
    so do the parameters (f32 master weights) and the optimizer's moments.
    The backward gets the same split through `tfc.cast`'s VJP. Generation
    entries (`forward`, `prefill`, `decode`) are left in f32.

    With `precision=f16` the module also gets dynamic loss scaling
    (torch.cuda.amp.GradScaler): state `amp.loss_scale` (0-d f32, starts at
    `init-scale`) and `amp.good_steps`; tfc-autodiff then seeds the backward
    with the scale and divides the gradients by it, and tfc-train-step skips
    the update of a step whose gradients are not finite and halves the scale
    (doubling it after 2000 good steps).

    ```mlir
    func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
      %w = tfc.load @w : tensor<4x4xf32>
      %y = tfc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      ...
    ```
    becomes, with `precision=bf16`,
    ```mlir
      %w = tfc.load @w : tensor<4x4xf32>
      %xb = tfc.cast %x : tensor<2x4xf32> -> tensor<2x4xbf16>
      %wb = tfc.cast %w : tensor<4x4xf32> -> tensor<4x4xbf16>
      %yb = tfc.matmul %xb, %wb : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
      %y = tfc.cast %yb : tensor<2x4xbf16> -> tensor<2x4xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "The 16-bit type of matmuls and attention: bf16 or f16">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "f16 only: the initial dynamic loss scale (GradScaler's 2^16)">,
  ];
}

def TfcConvertPrecision : Pass<"tfc-convert-precision", "mlir::ModuleOp"> {
  let summary = "Stores parameters and state in bf16 or f16 and computes in it";
  let description = [{
    What `model.to(torch.bfloat16)` does for inference: every f32
    `tfc.param` and `tfc.state` (the KV cache) becomes `precision`, and every
    entry that loads or stores them computes in it. The ops accumulate in f32
    inside (dot products, sums, norms, softmax) and round once at their end;
    f32 operands that an op cannot mix with 16-bit ones (a scale constant)
    are cast to `precision`, and those it can (rotary's frequencies, sample's
    temperature) stay f32. Entries keep their signatures: f32 results (the
    logits, the loss) are cast back at the return, so callers and the
    runtime see the same entry points; entries that use neither parameters
    nor state (`sample`) are untouched. For generation artifacts: training
    entries are refused (mixed-precision training keeps f32 master weights,
    a different transformation).

    ```mlir
    tfc.param @w : tensor<4x4xf32> = "normal(0.0, 0.02)"
    func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %w = tfc.load @w : tensor<4x4xf32>
      %y = tfc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
    ```
    becomes, with `precision=bf16`,
    ```mlir
    tfc.param @w : tensor<4x4xbf16> = "normal(0.0, 0.02)"
    func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %xb = tfc.cast %x : tensor<2x4xf32> -> tensor<2x4xbf16>
      %w = tfc.load @w : tensor<4x4xbf16>
      %y = tfc.matmul %xb, %w : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
      %r = tfc.cast %y : tensor<2x4xbf16> -> tensor<2x4xf32>
      return %r : tensor<2x4xf32>
    }
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "The 16-bit type: bf16 or f16">,
  ];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def TfcMicrobatch : Pass<"tfc-microbatch", "mlir::ModuleOp"> {
  let summary = "Gradient accumulation: `<entry>_grad` over M micro-batches";
  let description = [{
    Run after `tfc-autodiff` and before `tfc-data-parallel` and
    `tfc-train-step` (`tfc --microbatches=M`). `<entry>_grad` (`entry`: by
    default `loss_train` when the module has one, else `loss`), built for
    the traced micro-batch of B rows, becomes an entry of M x B rows: every
    input is split along its first dimension into M slices, the traced
    forward and backward run on each slice in turn, and the entry returns
    the mean of the M losses and of each parameter's M gradients. In
    program order each micro-batch's backward follows its forward, and
    `tfc-schedule` sinks every op to just before its first reader, so the
    activations alive at once are one micro-batch's: one optimizer update
    for M x B rows with the activation memory of B rows. The module's
    `tfc.metadata` gets `"microbatches": M`; the other entries (`loss`,
    `forward`, generation) keep the traced batch.

    The loss equals one call at M x B rows when every micro-batch counts
    the same number of targets (none ignored), as PyTorch's and
    Megatron-LM's gradient accumulation; a loss that is not a mean over
    rows (MoE's load-balancing term) becomes the mean of its micro-batches'
    values. Refused: an input that is not batched along its first
    dimension, inputs of different batch sizes.

    ```mlir
    // before (M = 2)
    func.func @loss_grad(%t: tensor<2x16xi32>, %y: tensor<2x16xi32>) -> (tensor<f32>, tensor<64xf32>)
    // after
    func.func @loss_grad(%t: tensor<4x16xi32>, %y: tensor<4x16xi32>) -> (tensor<f32>, tensor<64xf32>) {
      %t0 = tfc.slice %t start = [0, 0] limit = [2, 16] stride = [1, 1] ...
      ...                  // forward and backward on rows 0..1: %l0, %g0
      %t1 = tfc.slice %t start = [2, 0] limit = [4, 16] stride = [1, 1] ...
      ...                  // forward and backward on rows 2..3: %l1, %g1
      %l = tfc.add %l0, %l1 ...
      %g = tfc.add %g0, %g1 ...
      %lm = tfc.mul %l, %half ...
      %gm = tfc.mul %g, %half ...
      return %lm, %gm : tensor<f32>, tensor<64xf32>
    }
    ```
  }];
  let options = [
    Option<"count", "count", "int64_t", /*default=*/"1",
           "The number of micro-batches M a step takes">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The loss entry (default: loss_train if the module has one, else "
           "loss)">,
  ];
}

def TfcAutodiff : Pass<"tfc-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of an entry w.r.t. its parameters";
  let description = [{
    Differentiates the entry function `entry` (which returns one 0-d float
    loss; by default `loss_train`, the loss with dropout, when the model has
    one, else `loss`) with respect to every trainable (not frozen) `tfc.param` it loads,
    and adds a public entry `<entry>_grad` with the same inputs that returns
    the loss followed by one gradient per trainable parameter of the module,
    in declaration order (zeros for parameters the loss does not reach).
    Each gradient result is named `grad.<param>` (`tfc.name`) and carries
    `tfc.grad_of = "<param>"`.

    The backward graph is built from each op's vector-Jacobian product
    (DifferentiableOpInterface, dialects/tfc/TfcVJPs.cpp) in reverse program
    order; gradients of values used several times (tied embeddings,
    residuals, parameters loaded twice) are summed. Integer values (token
    ids, targets) carry no gradient. The result is ordinary tfc IR.

    ```mlir
    // before
    func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
      %w = tfc.load @w : tensor<4xf32>
      %y = tfc.mul %x, %w : ...
      %l = tfc.reduce_sum %y dims = [0] : tensor<4xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    // after (added)
    func.func @loss_grad(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
      ... forward ...
      %one = tfc.constant dense<1.0> : tensor<f32>
      %g = tfc.broadcast_to ...      // reduce_sum's VJP
      %dw = tfc.mul %g, %x ...        // mul's VJP
      return %l, %dw : tensor<f32>, tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The entry function to differentiate (default: loss_train if the "
           "module has one, the loss with dropout on, else loss)">,
  ];
}

def TfcDataParallel : Pass<"tfc-data-parallel", "mlir::ModuleOp"> {
  let summary = "Averages the gradients over data-parallel ranks, in buckets";
  let description = [{
    Run between `tfc-autodiff` and `tfc-train-step` (`tfc --dp=N`). In every
    `<entry>_grad` entry, each gradient result (`tfc.grad_of`) and the loss
    (result 0) are averaged (reduce "mean") over the group `group` of `size`
    ranks; `train_step` then clips and applies the averaged gradients, so N
    ranks of batch B train as one process of batch N x B. The module's
    `tfc.metadata` gets `"world_size": N`, which the runtime checks; after
    `tfc-tensor-parallel` (`"tp_size": M`, `tfc --dp=N --tp=M`) it is
    N x M, ranks laid out as artifact_abi.h says (group "dp": every M-th).

    Buckets (`bucket-mb` >= 0, `tfc --dp-bucket-mb`, default 25 like PyTorch
    DDP): the values, in the order the backward makes them final, are
    grouped into buckets that close once they hold `bucket-mb` MB (0: one
    value per bucket). Each bucket is one collective on the concatenation
    of its values: `tfc.all_reduce_start` right after the op that makes its
    last value final, so that it moves while the rest of the backward runs,
    and `tfc.all_reduce_wait` just before the return, where the averaged
    values are first used (`overlap=false`: right after the start, for a
    blocking baseline). `bucket-mb` < 0: one blocking `tfc.all_reduce` per
    value instead, right after the op that makes it final.

    Before:
    ```mlir
    %g = tfc.matmul %x, %dy ...
    return %loss, %g : tensor<f32>, tensor<64x64xf32>
    ```
    After (size=2, the loss and the gradient in one bucket):
    ```mlir
    %g = tfc.matmul %x, %dy ...
    %p:2 = tfc.all_reduce_start %loss, %g {bucket = 0 : i64, group = "dp", reduce = "mean", size = 2 : i64} : ...
    ...
    %r:2 = tfc.all_reduce_wait %p#0, %p#1 {bucket = 0 : i64} : ...
    return %r#0, %r#1 : tensor<f32>, tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"1",
           "The number of data-parallel processes (mpirun -np N)">,
    Option<"group", "group", "std::string", /*default=*/"\"dp\"",
           "The name of the process group">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Bucket size in MB (0: one collective per value; negative: one "
           "blocking tfc.all_reduce per value)">,
    Option<"overlap", "overlap", "bool", /*default=*/"true",
           "Wait for each bucket just before the return (overlapping the "
           "rest of the backward) instead of right after its start">,
  ];
}

def TfcZeroShard : Pass<"tfc-zero-shard", "mlir::ModuleOp"> {
  let summary = "ZeRO-1: reduce-scatters the gradients so the optimizer runs on shards";
  let description = [{
    Run between `tfc-data-parallel` and `tfc-train-step` (`tfc --dp=N
    --zero=1`). In every `<entry>_grad` entry, each gradient result that
    `tfc-data-parallel` averaged with `tfc.all_reduce` becomes instead the
    flattened gradient, padded with zeros to a multiple of N elements, then
    `tfc.reduce_scatter` (mean): each rank keeps the averaged gradient of its
    own block of ceil(n / N) elements, and the result is marked
    `tfc.zero_shard = {group, size}`. `tfc-train-step` then keeps the
    optimizer's moments as shards of that size (optimizer state / N per
    rank), takes the clipping norm from the shards (one `tfc.all_reduce` of
    the sum of squares), updates the rank's block of each parameter and
    rebuilds the whole parameter with `tfc.all_gather`. The loss stays an
    all-reduce. `tfc-train-step` lists the sharded moments in the module's
    `tfc.metadata` (`"zero_shards"`); the runtime gathers them when it writes
    a checkpoint and takes its block when it reads one, so checkpoints hold
    the whole model and resume on any number of ranks.

    Before (size=2):
    ```mlir
    %g = tfc.matmul %x, %dy ...
    %r = tfc.all_reduce %g {group = "dp", reduce = "mean", size = 2 : i64} : tensor<3x3xf32>
    return %l, %r : tensor<f32>, tensor<3x3xf32>
    ```
    After:
    ```mlir
    %g = tfc.matmul %x, %dy ...
    %f = tfc.reshape %g : tensor<3x3xf32> -> tensor<9xf32>
    %p = tfc.concat %f, %zeros dim = 0 : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
    %s = tfc.reduce_scatter %p {group = "dp", reduce = "mean", size = 2 : i64} : tensor<10xf32> -> tensor<5xf32>
    return %l, %s : tensor<f32>, tensor<5xf32>
    ```
  }];
}

def TfcTensorParallel : Pass<"tfc-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Splits each layer over tensor-parallel ranks (Megatron-LM)";
  let description = [{
    Run before `tfc-autodiff` (`tfc --tp=M`). The model library marks weights
    with `tfc.shard`: "column" (QKV, the MLP's up-projection, LLaMA's gate:
    each rank its 1/M of the output features, so its heads) or "row" (the
    attention output, the MLP's down-projection: its 1/M of the input
    features); `tfc.shard_blocks` = 3 on GPT-2's fused [Q | K | V]. The pass
    narrows those parameters (and a column weight's bias) to one rank's slice
    (`tfc.shard_axis` on the param), re-types what flows from them (the heads
    of reshapes, transposes, attention, rotary, elementwise ops, the slices
    of a fused QKV), and inserts Megatron's `f` = `tfc.copy_to_group` on the
    input of each column-parallel linear and `g` = `tfc.all_reduce` (sum)
    after each row-parallel one, whose bias moves after the all-reduce. So
    each layer has two all-reduces in the forward and, from the VJP of `f`,
    two in the backward. Embeddings, norms and the loss stay whole. The
    module's `tfc.metadata` gets `"world_size": M`, `"tp_size": M` and
    `"tp_shards"`: the axis and blocks of each split parameter, by which the
    runtime slices a whole checkpoint (artifact_abi.h).

    Refused, naming the op or the parameter: an M that does not divide the
    heads (with GQA, the key/value heads too) or a weight's features; a split
    value reaching an op the pass does not know or a return.

    Generation entries (prefill, decode) keep working: the KV cache, a state
    of [batch, heads, positions, head dim] that `tfc.kv_cache_update` writes,
    is split along the heads like the attention that reads it and listed in
    `"tp_shards"` (so checkpoints hold it whole); the logits are whole on
    every rank after the last row-parallel all-reduce, so every rank samples
    the same token.

    Before (a column-parallel then a row-parallel linear, M = 2):
    ```mlir
    %h = tfc.linear %x, %w1 bias %b1 : (tensor<4x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<4x256xf32>
    %y = tfc.linear %h, %w2 bias %b2 : (tensor<4x256xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
    ```
    After:
    ```mlir
    %f = tfc.copy_to_group %x {group = "tp", size = 2 : i64} : tensor<4x64xf32>
    %h = tfc.linear %f, %w1 bias %b1 : (tensor<4x64xf32>, tensor<64x128xf32>, tensor<128xf32>) -> tensor<4x128xf32>
    %p = tfc.linear %h, %w2 : (tensor<4x128xf32>, tensor<128x64xf32>) -> tensor<4x64xf32>
    %g = tfc.all_reduce %p {group = "tp", reduce = "sum", size = 2 : i64} : tensor<4x64xf32>
    %y = tfc.add %g, %b2 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"1",
           "The number of tensor-parallel ranks M">,
    Option<"group", "group", "std::string", /*default=*/"\"tp\"",
           "The name of the process group">,
  ];
}

def TfcPipelineStages : Pass<"tfc-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Pipeline parallelism, first half: cuts the loss entry into stages";
  let description = [{
    Run before `tfc-autodiff` (`tfc --pp=S`). Cuts the loss entry's ops, in
    program order, into `stages` stages of about equal FLOPs (the cost
    model's) and marks each op with its stage (`tfc.stage`); `tfc-autodiff`
    gives the ops of each VJP its op's stage, and `tfc-pipeline-split` makes
    one program per stage of `train_step`.

    A cut falls only where the fewest bytes cross it: in a transformer,
    between two sublayers (after the embedding, after each attention's and
    each MLP's residual add), where the residual stream alone goes from one
    stage to the next. Values every stage can make itself do not count as crossing
    and are not marked: the entry's inputs, constants, parameter loads, and
    ops of those alone (positions, the causal mask, rotary tables). A
    parameter read on both sides of a cut (GPT-2's tied wte) is held by both
    stages. Among the candidate cuts, the `stages - 1` that minimize the
    largest stage's FLOPs (an exact dynamic program). The module's
    `tfc.metadata` gets `"pp_size"` and `"pp_stage_flops"` (each stage's
    forward FLOPs per micro-batch).

    Refused: more stages than the model has places to cut (about two a
    block), naming both numbers; a loss entry that writes state.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "The number of pipeline stages S">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The loss entry (default: loss_train if the module has one, else "
           "loss)">,
  ];
}

def TfcPipelineSplit : Pass<"tfc-pipeline-split", "mlir::ModuleOp"> {
  let summary = "Pipeline parallelism, second half: one train_step per stage";
  let description = [{
    Run after `tfc-train-step` (`tfc --pp=S`), on a module whose loss entry
    `tfc-pipeline-stages` cut into stages. `train_step` becomes `stages`
    entries `train_step.stage<s>` with its signature, one for each rank of
    the group `group`:

    - every op runs on its stage; an op without one runs on the stage of its
      largest operand that has one, the latest made among equals (a
      parameter's update where its gradient is made, the clipping norm's sum
      stage after stage), or, when
      none has one, on every stage that needs it (constants, the
      learning-rate schedule, the step counter);
    - a value made on stage t and read on stage u is sent by `tfc.send` right
      after it is made and received by `tfc.recv` right before its first
      reader, each message with its own tag; every stage receives the step's
      results (loss, grad_norm);
    - a parameter read by several stages (a tied embedding) is updated where
      its summed gradient is made, and its new value is sent to and stored by
      the others;
    - each stage orders its micro-batches' forwards and backwards
      (`tfc-microbatch` marks them) by `schedule`: `1f1b` (PipeDream-Flush:
      S - 1 - s forwards, then a backward after each forward) or `gpipe` (all
      forwards, then all backwards), each op after what it reads.

    The ops are those of one process's `train_step`, so each stage computes
    its values exactly as one process would. Sends never wait for their
    receiver, so no stage order can deadlock. The module's metadata gets
    `"pp_owner"` (the parameters and states whose current value lives on one
    stage, which checkpoints gather), `"pp_held"` (the stages whose entries
    touch each tensor, for those that some stage does not: the runtime gives
    a tensor storage on those stages' ranks only), `"pp_schedule"` and
    `"world_size"` (S, times the tensor-parallel size); every other entry is
    dropped.

    ```mlir
    // stage 0 of a two-layer model, one micro-batch
    func.func @train_step.stage0(%tokens: ..., %targets: ..., ...) -> (...) {
      ...                                  // the first layer's forward
      tfc.send %h {group = "pp", peer = 1 : i64, tag = 0 : i64} : tensor<2x16x64xf32>
      %dh = tfc.recv {group = "pp", peer = 1 : i64, tag = 5 : i64} : tensor<2x16x64xf32>
      ...                                  // its backward and its update
    }
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "The number of pipeline stages S">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "The order of each stage's micro-batches: 1f1b or gpipe">,
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The training entry to split">,
    Option<"group", "group", "std::string", /*default=*/"\"pp\"",
           "The name of the process group of the stages">,
  ];
}

def TfcExpertParallel : Pass<"tfc-expert-parallel", "mlir::ModuleOp"> {
  let summary = "Expert parallelism: each rank its share of every layer's experts";
  let description = [{
    Run after `tfc-train-step` (`tfc --ep=N`), on a mixture-of-experts model
    whose gradients `tfc-data-parallel` averages over the same N ranks (each
    reads its slice of the batch). `train_step` becomes `size` entries
    `train_step.ep<r>`, rank r's, in which:

    - each `tfc.moe_ffn` computes rank r's E/N experts (`first_expert` =
      r E/N) on every rank's tokens: the tokens, their expert ids and their
      routing weights are all-gathered over the group `group` and the partial
      outputs reduce-scattered back (Megatron-Core's all-gather dispatcher:
      static shapes, dropless); its `tfc.moe_ffn_grad` likewise;
    - another rank's experts get a zero gradient, so the data-parallel mean
      gives each rank the owner's gradient divided by N (the mean loss's) and
      the same clipping norm;
    - another rank's experts and their optimizer state are neither loaded nor
      stored.

    The module's metadata gets `"ep_size"`, `"ep_owner"` (the rank of each
    expert's tensors) and `"ep_held"` (the runtime gives a tensor storage on
    its holders only); every other entry is dropped.

    ```mlir
    // rank 1 of 2, 4 experts: experts 2 and 3 on both ranks' tokens
    %xs = tfc.all_gather %x {group = "ep", size = 2 : i64} : tensor<32x64xf32> -> tensor<64x64xf32>
    %ys = tfc.moe_ffn %xs, %ids, %w experts %g2, %u2, %d2, %g3, %u3, %d3 {first_expert = 2 : i64} : ...
    %y = tfc.reduce_scatter %ys {group = "ep", reduce = "sum", size = 2 : i64} : tensor<64x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"2",
           "The number of ranks N that share the experts">,
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "The training entry to split">,
    Option<"group", "group", "std::string", /*default=*/"\"ep\"",
           "The name of the process group of the ranks">,
  ];
}

def TfcTrainStep : Pass<"tfc-train-step", "mlir::ModuleOp"> {
  let summary = "Builds `train_step`: forward, loss, backward, clipping, optimizer";
  let description = [{
    From the gradient entry `<entry>_grad` that `tfc-autodiff` writes, adds
    the public entry `train_step`: the same inputs, then the run-time
    hyper-parameters as 0-d f32 inputs (`lr`, `min_lr`, `warmup`,
    `total_steps`, `schedule`, `weight_decay`, `grad_clip`, and `beta1`,
    `beta2`, `eps` for AdamW or `momentum` for SGD), so that one artifact
    serves every setting. It computes the loss and the gradients, clips them
    to a global norm when `grad_clip` > 0 (PyTorch's clip_grad_norm_), reads
    the step counter `train.step` (module state, i64), computes the learning
    rate of the step inside the graph, updates every trainable parameter with
    the optimizer and writes parameters, moments and the counter back with
    `tfc.store`. It returns (loss, lr, grad_norm).

    Schedules (`schedule`): 0 constant; 1 linear warm-up to `lr` over
    `warmup` steps, then linear decay to `min_lr` at `total_steps`; 2 the same
    warm-up, then cosine decay to `min_lr`. The seed article's warm-up +
    linear decay is schedule 1.

    AdamW (PyTorch's semantics): m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
    p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + lr wd p, where
    weight decay applies to the parameters of a per-parameter mask: by
    default those of rank >= 2 (matrices and embedding tables), not biases
    and norm weights; `no-decay` and `decay` (names or `prefix*` patterns)
    override it, e.g. `no-decay=wte.weight,wpe.weight`. SGD with momentum: g += wd p
    (same mask), buf = momentum buf + g, p -= lr buf. Moments are module state
    `opt.m.<param>`, `opt.v.<param>` (AdamW) or `opt.buf.<param>` (SGD).
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The loss entry whose `<entry>_grad` tfc-autodiff wrote (default: "
           "loss_train if the module has one, else loss)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw or sgd">,
    ListOption<"noDecay", "no-decay", "std::string",
               "Parameters that get no weight decay although they are "
               "matrices: names, or prefixes ending in '*'">,
    ListOption<"decay", "decay", "std::string",
               "Parameters that get weight decay although they are not "
               "matrices: names, or prefixes ending in '*'">,
  ];
}

//===----------------------------------------------------------------------===//
// Graph optimization
//===----------------------------------------------------------------------===//

def TfcFuse : Pass<"tfc-fuse", "mlir::ModuleOp"> {
  let summary = "Groups ops into kernels (tfc.fused) so that intermediates stay in registers";
  let description = [{
    Every public function's ops are grouped, producer into consumer, into
    `tfc.fused` ops, each compiled as one kernel (see the op's description):

    - `pointwise`: chains and trees of elementwise ops (and broadcast_to,
      splat constants) over one shape. A value whose every use is inside the
      group is never written to memory; values used outside become results
      of the group (multi-output: AdamW's m, v and the new parameter are
      written by one loop that reads p, g, m and v once).
    - `reduction`: a reduce_sum/reduce_mean/reduce_max with the pointwise
      group that computes its input (sum of squares for the gradient norm,
      the row sums of layer_norm's and softmax's backward), when nothing
      else reads that group.
    - `row`: layer_norm, rms_norm, softmax or log_softmax (last dimension)
      with the pointwise group that computes its input, e.g. the residual
      add before a norm: the sum is written once (it is also a result when
      the residual stream reads it) and normalized while in cache.
    - `linear`: a linear with the gelu (tanh), relu, silu or leaky_relu
      and the residual add that only it feeds, applied by the kernel library
      to each output tile (as the target's supportsLinearEpilogue allows).
    - The unfused attention sequence (scores, scale, causal mask, softmax,
      values) becomes one `tfc.attention` (FlashAttention).

    The cost model (passes/CostModel.h): a kernel moves its operands and
    results once; a fused group saves 2 x the bytes of every value it keeps
    inside (one write, one read) and, since no op is duplicated, costs no
    extra arithmetic. A merge is legal when it creates no cycle (every value
    of the group that is read outside is read after the group's last op). It
    is refused when the group would read more than `max-inputs` distinct
    tensors (each is a stream the core must prefetch, while a scalar is one
    register: too many streams evict
    each other from L1 and the TLB) or hold more than `max-ops` ops (register
    pressure and code size).

    linear carries its bias and cross_entropy computes its softmax inside,
    as single ops already.

    Each function records `tfc.fusion = {kernels_before, kernels_after,
    groups, bytes_before, bytes_after}` (kernels and the bytes they move by the
    cost model); `print` prints every group: its kind, ops and bytes saved.

    ```mlir
    // before
    %0 = tfc.add %x, %r : tensor<4x768xf32>, tensor<4x768xf32> -> tensor<4x768xf32>
    %1 = tfc.gelu %0 approximate = tanh : tensor<4x768xf32>
    %2 = tfc.mul %1, %s : tensor<4x768xf32>, tensor<f32> -> tensor<4x768xf32>
    // after: one kernel, %0 and %1 never reach memory
    %2 = tfc.fused "pointwise" (%x, %r, %s) : (...) -> tensor<4x768xf32> {
    ^bb0(%a: tensor<4x768xf32>, %b: tensor<4x768xf32>, %c: tensor<f32>):
      %0 = tfc.add %a, %b ...
      %1 = tfc.gelu %0 ...
      %2 = tfc.mul %1, %c ...
      tfc.yield %2 : tensor<4x768xf32>
    }
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "The target whose kernels the groups become: only the kinds and "
           "linear epilogues it supports are formed">,
    Option<"maxInputs", "max-inputs", "unsigned", /*default=*/"12",
           "Most distinct tensors (scalars not counted) one fused kernel reads">,
    Option<"maxOps", "max-ops", "unsigned", /*default=*/"64",
           "Most ops in one fused kernel">,
    Option<"print", "print", "bool", /*default=*/"false",
           "Print every fusion decision and the bytes it saves to stderr">,
  ];
}

//===----------------------------------------------------------------------===//
// Memory: what the backward keeps, and the order of execution
//===----------------------------------------------------------------------===//

def TfcRemat : Pass<"tfc-remat", "mlir::ModuleOp"> {
  let summary = "Chooses the activations the backward saves and those it recomputes (min cut)";
  let description = [{
    In every public entry with a backward pass (`train_step`, `*_grad`),
    decides which forward values the backward keeps (saved activations) and
    which it recomputes, as a minimum cut over the joint forward/backward
    graph weighted by bytes, as PyTorch's min-cut rematerialization
    partitioner does.

    Forward ops are those the loss (the first result) depends on; every other
    op is backward. Each forward value is an edge of capacity its bytes; data
    edges are infinite; values the backward reads connect to the sink.
    Compute-bound ops (matmul, linear, attention), ops with effects and ops
    with regions must run in the forward: they are fed from the source, so
    their results are saved or cut further down. Parameters, inputs,
    constants and the entry's results are resident anyway: free to read
    anywhere, never saved nor recomputed. A reshape is a view: the cut never
    falls on it. The minimum cut is what the backward saves (of the cuts of
    least bytes, the one that recomputes least); what the backward reads
    beyond that is cloned into the backward, just before its first reader
    (in topological order). Run it after the last `cse`: the clones are
    identical to forward ops and CSE would merge them back.

    With `memory-budget` (bytes), when the saved bytes exceed it,
    compute-bound ops may be recomputed too, one at a time, the most result
    bytes per FLOP first (the LM head's logits, the MLP's up-projection),
    each kept only if the cut shrinks, until the saved bytes fit.

    Records `tfc.remat = {saved_bytes_before, saved_bytes, recomputed_ops,
    recomputed_flops, forward_flops, total_flops, memory_budget}` on the
    function (FLOPs by passes/CostModel.h; total_flops after the rewrite);
    `print` also prints every saved value and recomputed op.

    ```mlir
    // before: the backward reads the gelu's output %g (saved)
    %h = tfc.linear %x, %w1 : ...
    %g = tfc.gelu %h approximate = tanh : tensor<8x256xf32>
    %y = tfc.linear %g, %w2 : ...
    ...                                    // loss, start of the backward
    %dw2 = tfc.matmul %g, %dy transpose_lhs : ...
    // after: only the linear's output %h is saved; %g is recomputed
    %g2 = tfc.gelu %h approximate = tanh : tensor<8x256xf32>
    %dw2 = tfc.matmul %g2, %dy transpose_lhs : ...
    ```
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"0",
           "Most bytes the backward may save (0: no budget); over it, "
           "compute-bound ops are recomputed too">,
    Option<"recomputeMatmuls", "recompute-matmuls", "bool", /*default=*/"false",
           "Let every compute-bound op (matmul, linear, attention) be "
           "recomputed when the cut finds it cheaper">,
    Option<"print", "print", "bool", /*default=*/"false",
           "Print the numbers and the cut (saved values, recomputed ops) of "
           "every entry to stderr">,
  ];
}

def TfcSchedule : Pass<"tfc-schedule", "mlir::ModuleOp"> {
  let summary = "Orders each entry's ops to lower the peak of live bytes";
  let description = [{
    Reorders the ops of every public entry (one block) without changing what
    it computes: a list scheduler over the data dependences, the order of
    `tfc.load`/`tfc.store` per symbol (readers of a loaded value stay on
    their side of every store of it) and the order of all other ops with
    effects. Among the ops whose inputs are ready it first runs one that
    frees more bytes (last reads of its operands) than it allocates, the most
    first; otherwise the one whose first reader comes earliest in the
    original order, so that each op sinks to just before its first reader.
    Ties keep the original order.

    Live bytes at an op: the bytes of every buffer defined at or before it
    and read at or after it (inputs, parameters, state and constants are
    resident and not counted; a reshape is a view of its operand; returned
    and stored values live to the end). The new order is kept only if its
    peak is not higher than the original's. Records `tfc.schedule =
    {peak_bytes_before, peak_bytes}` on each entry; `print` prints them.

    ```mlir
    // before: %a and %b (4 KiB each) are both live while %s and %t run
    %a = tfc.exp %x : tensor<1024xf32>
    %b = tfc.exp %y : tensor<1024xf32>
    %s = tfc.reduce_sum %a dims = [0] : tensor<1024xf32> -> tensor<f32>
    %t = tfc.reduce_sum %b dims = [0] : tensor<1024xf32> -> tensor<f32>
    // after: each reduction runs as soon as it can free its input
    %a = tfc.exp %x : tensor<1024xf32>
    %s = tfc.reduce_sum %a dims = [0] : tensor<1024xf32> -> tensor<f32>
    %b = tfc.exp %y : tensor<1024xf32>
    %t = tfc.reduce_sum %b dims = [0] : tensor<1024xf32> -> tensor<f32>
    ```
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "Print each entry's peak live bytes before and after to stderr">,
  ];
}

#endif // TFC_PASSES_TD
