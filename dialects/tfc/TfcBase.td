//===- TfcBase.td - tfc dialect, type constraints and enums ---------------===//
//
// The dialect definition, the tensor type constraints every op shares, and the
// enums used as op attributes.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_BASE_TD
#define TFC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TFC_Dialect : Dialect {
  let name = "tfc";
  let cppNamespace = "::tfc";
  let summary = "Whole-model graph ops for transformer compilation.";
  let description = [{
    The `tfc` dialect holds a transformer model as a graph of ops on ranked,
    statically shaped tensors: matmuls, attention, normalizations, pointwise
    math, losses and sampling. Parameters and mutable state (optimizer moments,
    KV caches) live at module level as named symbols (`tfc.param`,
    `tfc.state`); entry functions (`forward`, `loss`, `prefill`, `decode`,
    `train_step`) read them with `tfc.load` and write state with `tfc.store`.
    Every other op is pure.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Ranked, static, every dimension >= 1. Zero-sized and dynamic dims are
// refused at the type constraint so that no pass has to consider them.
def TFC_StaticShapePred : CPred<"::tfc::isValidTensorShape($_self)">;

class TFC_TensorOf<list<Type> allowed, string what> : Type<
    And<[RankedTensorOf<allowed>.predicate, TFC_StaticShapePred]>,
    "tensor of " # what # " with static, positive dimensions",
    "::mlir::RankedTensorType">;

def TFC_AnyElement : AnyTypeOf<[F32, BF16, F16, I32, I64]>;
def TFC_Tensor : TFC_TensorOf<[F32, BF16, F16, I32, I64], "f32/bf16/f16/i32/i64">;
def TFC_FloatTensor : TFC_TensorOf<[F32, BF16, F16], "f32/bf16/f16">;
def TFC_IntTensor : TFC_TensorOf<[I32, I64], "i32/i64">;
def TFC_SignedTensor : TFC_TensorOf<[F32, BF16, F16, I32, I64], "f32/bf16/f16/i32/i64">;

// 0-d tensors used as run-time scalars (positions, seeds, sampling knobs).
class TFC_ScalarOf<Type t, string what> : Type<
    And<[RankedTensorOf<[t]>.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 0">]>,
    "0-d tensor of " # what, "::mlir::RankedTensorType">;
def TFC_I32Scalar : TFC_ScalarOf<I32, "i32">;
def TFC_I64Scalar : TFC_ScalarOf<I64, "i64">;
def TFC_F32Scalar : TFC_ScalarOf<F32, "f32">;
// Positions in a KV cache: one for every row of the batch (0-d), or one per row (1-d, [B]:
// sequences of a serving batch at their own positions).
def TFC_I32Positions : Type<
    And<[RankedTensorOf<[I32]>.predicate,
         CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() <= 1">]>,
    "0-d or 1-d tensor of i32", "::mlir::RankedTensorType">;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def TFC_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu is computed", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let cppNamespace = "::tfc";
  let genSpecializedAttr = 0;
}
def TFC_GeluApproximationAttr : EnumAttr<TFC_Dialect, TFC_GeluApproximation,
                                         "gelu_approximation">;

#endif // TFC_BASE_TD
