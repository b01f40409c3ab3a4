//===- TfcInterfaces.td - what passes ask of tfc ops ------------------------===//
#ifndef TFC_INTERFACES_TD
#define TFC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def TFC_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::tfc";
  let description = [{
    An op that states its vector-Jacobian product, for reverse-mode
    differentiation (`tfc-autodiff`). Given the gradient of the loss with
    respect to each result, the op builds ordinary tfc IR computing the
    gradient with respect to each operand. Operands that carry no gradient
    (integer ids, seeds, positions) get a null Value.

    The VJPs live in TfcVJPs.cpp, in the order of TfcOps.td: adding a
    differentiable op means declaring this interface on it and writing its
    VJP there.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands at the builder's insertion point.
        `resultGrads` has one non-null Value per result (the pass materializes
        zeros for results that receive no gradient). Fills `operandGrads` with
        one Value per operand, null where no gradient flows. Fails, with a
        diagnostic on the op, when the op cannot be differentiated as
        configured.
      }], "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // TFC_INTERFACES_TD
