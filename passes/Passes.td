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

#endif // TFC_PASSES_TD
