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
// Training
//===----------------------------------------------------------------------===//

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

#endif // TFC_PASSES_TD
