//===- TfcOps.td - tfc dialect operations -----------------------------------===//
//
// Every op: summary, a description with an example, typed operands, a
// declarative assembly format and a verifier whose messages name the operand
// and the expected vs. found shape. Ops whose result type follows from their
// operands infer it (InferTypeOpAdaptor); the inference is the verifier.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_OPS_TD
#define TFC_OPS_TD

include "TfcBase.td"
include "TfcInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class TFC_Op<string mnemonic, list<Trait> traits = []>
    : Op<TFC_Dialect, mnemonic, traits>;

// A pure op whose result type is computed from its operands and attributes.
class TFC_InferOp<string mnemonic, list<Trait> traits = []>
    : TFC_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)>;

// The op states its vector-Jacobian product (TfcVJPs.cpp).
def TFC_VJP : DeclareOpInterfaceMethods<TFC_DifferentiableOpInterface>;

//===----------------------------------------------------------------------===//
// Module-level parameters and state
//===----------------------------------------------------------------------===//

def TFC_ParamOp : TFC_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a named, trainable model parameter";
  let description = [{
    Declares a parameter of the model at module level. Its name is the name
    the ecosystem uses (a Hugging Face checkpoint key) so that a real
    checkpoint binds by name. `init` records how fresh weights are drawn:
    `zeros`, `ones`, `constant(v)`, `normal(mean, std)`, `uniform(lo, hi)`,
    `orthogonal(gain)`. A `frozen` parameter is never updated by training.

    ```mlir
    tfc.param @"h.0.attn.c_attn.weight" : tensor<768x2304xf32> = "normal(0.0, 0.02)"
    tfc.param @"tok_emb" : tensor<12x32xf32> = "orthogonal(1.0)" frozen
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<TFC_Tensor>:$type,
                       StrAttr:$init,
                       UnitAttr:$frozen);
  let assemblyFormat = [{
    $sym_name `:` $type `=` $init (`frozen` $frozen^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def TFC_StateOp : TFC_Op<"state", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "named mutable module state (optimizer moments, KV caches)";
  let description = [{
    Declares state that persists across calls of the entry functions: a KV
    cache, an optimizer moment, a step counter. The runtime owns it and
    initializes it from `init` (same grammar as `tfc.param`).

    ```mlir
    tfc.state @"kv.0.k" : tensor<1x12x1024x64xf32> = "zeros"
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<TFC_Tensor>:$type,
                       StrAttr:$init);
  let assemblyFormat = "$sym_name `:` $type `=` $init attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def TFC_LoadOp : TFC_Op<"load", [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
                                 MemoryEffects<[MemRead]>]> {
  let summary = "reads a parameter or a state";
  let description = [{
    Reads the current value of the `tfc.param` or `tfc.state` named by
    `name`. The result type must equal the declared type.

    ```mlir
    %w = tfc.load @"wte.weight" : tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def TFC_StoreOp : TFC_Op<"store", [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
                                   MemoryEffects<[MemWrite]>]> {
  let summary = "writes a state (or, in a training step, a parameter)";
  let description = [{
    Replaces the value of the `tfc.state` or `tfc.param` named by `name` from
    the next op on. Used for KV caches, optimizer moments and parameter
    updates. The value's type must equal the declared type.

    ```mlir
    tfc.store %k_new, @"kv.0.k" : tensor<1x12x1024x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$value, FlatSymbolRefAttr:$name);
  let assemblyFormat = "$value `,` $name attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Constants and index generation
//===----------------------------------------------------------------------===//

def TFC_ConstantOp : TFC_InferOp<"constant", [ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = tfc.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def TFC_IotaOp : TFC_Op<"iota", [Pure]> {
  let summary = "0, 1, 2, ... along one dimension";
  let description = [{
    Fills the result with its index along `dim`, broadcast over the other
    dimensions. Positions for learned position embeddings are an iota plus an
    offset.

    ```mlir
    %pos = tfc.iota dim = 1 : tensor<1x64xi32>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class TFC_BinaryOp<string mnemonic, list<Trait> traits = []>
    : TFC_InferOp<mnemonic, !listconcat([TFC_VJP], traits)> {
  let description = [{
    Elementwise with NumPy broadcasting: shapes are aligned from the right and
    each pair of dimensions must be equal or 1. Both operands have the same
    element type; the result has the broadcast shape.

    ```mlir
    %y = tfc.}] # mnemonic # [{ %a, %b : tensor<4x64x768xf32>, tensor<768xf32> -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$lhs, TFC_Tensor:$rhs);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def TFC_AddOp : TFC_BinaryOp<"add", [Commutative]> { let summary = "elementwise a + b"; }
def TFC_SubOp : TFC_BinaryOp<"sub"> { let summary = "elementwise a - b"; }
def TFC_MulOp : TFC_BinaryOp<"mul", [Commutative]> { let summary = "elementwise a * b"; }
def TFC_DivOp : TFC_BinaryOp<"div"> { let summary = "elementwise a / b"; }
def TFC_MaxOp : TFC_BinaryOp<"max", [Commutative]> { let summary = "elementwise maximum"; }
def TFC_MinOp : TFC_BinaryOp<"min", [Commutative]> { let summary = "elementwise minimum"; }
def TFC_PowOp : TFC_BinaryOp<"pow"> { let summary = "elementwise a ** b (floats)"; }

class TFC_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = [TFC_VJP]>
    : TFC_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let description = [{
    Elementwise; the result has the operand's type.

    ```mlir
    %y = tfc.}] # mnemonic # [{ %x : tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins operandType:$x);
  let results = (outs operandType:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def TFC_ExpOp : TFC_UnaryOp<"exp", TFC_FloatTensor> { let summary = "e ** x"; }
def TFC_LogOp : TFC_UnaryOp<"log", TFC_FloatTensor> { let summary = "natural logarithm"; }
def TFC_SqrtOp : TFC_UnaryOp<"sqrt", TFC_FloatTensor> { let summary = "square root"; }
def TFC_RsqrtOp : TFC_UnaryOp<"rsqrt", TFC_FloatTensor> { let summary = "1 / sqrt(x)"; }
def TFC_TanhOp : TFC_UnaryOp<"tanh", TFC_FloatTensor> { let summary = "hyperbolic tangent"; }
def TFC_SinOp : TFC_UnaryOp<"sin", TFC_FloatTensor> { let summary = "sine"; }
def TFC_CosOp : TFC_UnaryOp<"cos", TFC_FloatTensor> { let summary = "cosine"; }
def TFC_SigmoidOp : TFC_UnaryOp<"sigmoid", TFC_FloatTensor> { let summary = "1 / (1 + e ** -x)"; }
def TFC_StepOp : TFC_UnaryOp<"step", TFC_FloatTensor, []> {
  let summary = "1 where x > 0, else 0 (the derivative of relu)";
}
def TFC_NegOp : TFC_UnaryOp<"neg", TFC_SignedTensor> {
  let summary = "-x";
  let hasFolder = 1;
}
def TFC_AbsOp : TFC_UnaryOp<"abs", TFC_SignedTensor> { let summary = "|x|"; }
def TFC_ReluOp : TFC_UnaryOp<"relu", TFC_FloatTensor> { let summary = "max(x, 0)"; }
def TFC_SiluOp : TFC_UnaryOp<"silu", TFC_FloatTensor> { let summary = "x * sigmoid(x) (SwiGLU's gate)"; }

def TFC_GeluOp : TFC_Op<"gelu", [Pure, SameOperandsAndResultType, TFC_VJP]> {
  let summary = "Gaussian error linear unit, exact or tanh-approximated";
  let description = [{
    `approximate = none`: x * Phi(x) with the Gaussian CDF (erf).
    `approximate = tanh`: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as
    GPT-2 uses.

    ```mlir
    %y = tfc.gelu %x approximate = tanh : tensor<4x64x3072xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, TFC_GeluApproximationAttr:$approximate);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = "$x `approximate` `=` `` $approximate attr-dict `:` type($x)";
}

def TFC_LeakyReluOp : TFC_Op<"leaky_relu", [Pure, SameOperandsAndResultType, TFC_VJP]> {
  let summary = "x if x > 0 else alpha * x";
  let description = [{
    ```mlir
    %y = tfc.leaky_relu %x alpha = 1.000000e-01 : tensor<64x16x128xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, F32Attr:$alpha);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = "$x `alpha` `=` $alpha attr-dict `:` type($x)";
}

def TFC_CastOp : TFC_Op<"cast", [Pure, TFC_VJP]> {
  let summary = "converts the element type; the shape is unchanged";
  let description = [{
    Float to float rounds to nearest even; float to int truncates toward zero;
    int to float rounds to nearest.

    ```mlir
    %h = tfc.cast %x : tensor<4x768xf32> -> tensor<4x768xbf16>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TFC_DropoutOp : TFC_InferOp<"dropout", [TFC_VJP]> {
  let summary = "zeroes elements with probability `rate`, scales the rest";
  let description = [{
    Keeps each element with probability 1 - rate and scales it by
    1 / (1 - rate). The mask is a counter-based random function of (`seed`,
    element index), so the result does not depend on the number of threads or
    on the order in which elements are computed.

    ```mlir
    %y = tfc.dropout %x, %seed rate = 1.000000e-01 : tensor<4x64x768xf32>, tensor<i64> -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, TFC_I64Scalar:$seed, F32Attr:$rate);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $seed `rate` `=` $rate attr-dict `:` type($x) `,` type($seed) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def TFC_MatmulOp : TFC_InferOp<"matmul", [TFC_VJP]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `lhs` is [..., M, K] ([..., K, M] with `transpose_lhs`), `rhs` is
    [..., K, N] ([..., N, K] with `transpose_rhs`); the batch dimensions
    broadcast as in NumPy. The result is [...batch, M, N].

    ```mlir
    %s = tfc.matmul %q, %k transpose_rhs : tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$lhs, TFC_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def TFC_LinearOp : TFC_InferOp<"linear", [TFC_VJP]> {
  let summary = "x @ W (+ bias): a dense layer";
  let description = [{
    `x` is [..., K]. `weight` is [K, N] by default: the layout of GPT-2's
    Conv1D in Hugging Face checkpoints. With `transpose_weight` it is [N, K]:
    the layout of `torch.nn.Linear` (LLaMA). The optional `bias` is [N]. The
    result is [..., N].

    ```mlir
    %qkv = tfc.linear %x, %w bias %b : (tensor<4x64x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>) -> tensor<4x64x2304xf32>
    %q = tfc.linear %x, %wq transpose_weight : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, TFC_FloatTensor:$weight,
                       Optional<TFC_FloatTensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`bias` $bias^)? (`transpose_weight` $transpose_weight^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization, softmax, attention
//===----------------------------------------------------------------------===//

def TFC_LayerNormOp : TFC_InferOp<"layer_norm", [AttrSizedOperandSegments, TFC_VJP]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, with the mean and
    the (biased) variance over the last dimension. `weight` and `bias`, when
    present, have the shape of the last dimension.

    ```mlir
    %y = tfc.layer_norm %x weight %g bias %b eps = 9.99999974E-6 : (tensor<4x64x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, Optional<TFC_FloatTensor>:$weight,
                       Optional<TFC_FloatTensor>:$bias, F32Attr:$eps);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? (`bias` $bias^)? `eps` `=` $eps attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_RmsNormOp : TFC_InferOp<"rms_norm", [TFC_VJP]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    y = x / sqrt(mean(x^2) + eps) * weight. Without `weight` the op is
    parameter-free (as in the seed article's encoder–decoder, eps 1e-8).

    ```mlir
    %y = tfc.rms_norm %x weight %g eps = 9.99999997E-7 : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, Optional<TFC_FloatTensor>:$weight,
                       F32Attr:$eps);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? `eps` `=` $eps attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_SoftmaxOp : TFC_InferOp<"softmax", [TFC_VJP]> {
  let summary = "softmax along one dimension";
  let description = [{
    exp(x - max) / sum(exp(x - max)) along `dim` (negative counts from the
    end).

    ```mlir
    %p = tfc.softmax %s dim = -1 : tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, I64Attr:$dim);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($result)";
}

def TFC_LogSoftmaxOp : TFC_InferOp<"log_softmax", [TFC_VJP]> {
  let summary = "log of softmax along one dimension, computed stably";
  let description = [{
    ```mlir
    %lp = tfc.log_softmax %logits dim = -1 : tensor<4x64x50257xf32> -> tensor<4x64x50257xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, I64Attr:$dim);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($result)";
}

def TFC_AttentionOp : TFC_InferOp<"attention", [TFC_VJP]> {
  let summary = "scaled dot-product attention, optionally causal, with GQA";
  let description = [{
    `query` is [B, H, Tq, D], `key` is [B, Hkv, Tk, D], `value` is
    [B, Hkv, Tk, Dv], where Hkv divides H (grouped-query attention: query head
    h reads key/value head h / (H / Hkv)). Tq and Tk are independent, which
    covers cross-attention and attention over a KV cache. The result is
    [B, H, Tq, Dv] = softmax(scale * Q K^T + mask) V. `scale` defaults to
    1 / sqrt(D).

    With `causal`, key j is visible to query i iff j <= i + offset. The
    optional `offset` operand (a 0-d i32: the position of the first query) is
    used with a KV cache; without it, offset = Tk - Tq (the last query sees
    every key). A 1-d `offset` [B] gives each row of the batch its own
    position: independent sequences decoded together (serving); the key and
    value may then have more rows than the query (a KV cache of which the
    query's B rows are the first), rows past B unread.

    ```mlir
    %o = tfc.attention %q, %k, %v causal : (tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>) -> tensor<4x12x64x64xf32>
    %d = tfc.attention %q1, %kc, %vc offset %pos causal : (tensor<1x12x1x64xf32>, tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>, tensor<i32>) -> tensor<1x12x1x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$query, TFC_FloatTensor:$key,
                       TFC_FloatTensor:$value, Optional<TFC_I32Positions>:$offset,
                       UnitAttr:$causal, OptionalAttr<F32Attr>:$scale);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`offset` $offset^)? (`causal` $causal^)?
    (`scale` `=` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    // The scale actually applied: the attribute, or 1 / sqrt(head dim).
    float getEffectiveScale();
  }];
}

def TFC_RotaryOp : TFC_InferOp<"rotary", [AttrSizedOperandSegments, TFC_VJP]> {
  let summary = "rotary position embedding (rotate-half convention)";
  let description = [{
    `x` is [B, H, T, D] with D even. Token t has position p = offset + t
    (offset defaults to 0; a 1-d offset [B] is one per row). For i < D/2, with f = theta^(-2i/D):
    y[i] = x[i] cos(p f) - x[i + D/2] sin(p f),
    y[i + D/2] = x[i + D/2] cos(p f) + x[i] sin(p f),
    matching Hugging Face's LLaMA (`rotate_half`). With `inverse` the
    rotation is by -p f: the transpose, which is rotary's VJP.

    `frequencies`, a [D/2] f32 tensor, replaces theta^(-2i/D) by its entry i:
    the frequencies of a scaled rotary embedding (Hugging Face's
    `rope_scaling`, e.g. LLaMA 3's), computed by the frontend. theta then
    only documents the base they came from.

    ```mlir
    %qr = tfc.rotary %q offset %pos theta = 1.000000e+04 : (tensor<1x8x1x16xf32>, tensor<i32>) -> tensor<1x8x1x16xf32>
    %kr = tfc.rotary %k frequencies %f theta = 5.000000e+05 : (tensor<1x8x4x16xf32>, tensor<8xf32>) -> tensor<1x8x4x16xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, Optional<TFC_I32Positions>:$offset,
                       Optional<TFC_FloatTensor>:$frequencies,
                       F32Attr:$theta, UnitAttr:$inverse);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`offset` $offset^)? (`frequencies` $frequencies^)? `theta` `=` $theta (`inverse` $inverse^)? attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_EmbeddingOp : TFC_InferOp<"embedding", [TFC_VJP]> {
  let summary = "gathers rows of a table by integer ids";
  let description = [{
    `table` is [V, D], `ids` any shape of i32/i64; the result is
    ids.shape + [D]. Ids outside [0, V) are a run-time error reported by the
    runtime (never an out-of-bounds read).

    ```mlir
    %e = tfc.embedding %wte, %tokens : tensor<50257x768xf32>, tensor<4x64xi32> -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$table, TFC_IntTensor:$ids);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def TFC_ReshapeOp : TFC_Op<"reshape", [Pure, TFC_VJP]> {
  let summary = "same elements, new static shape";
  let description = [{
    Row-major reinterpretation; the element count is unchanged.

    ```mlir
    %h = tfc.reshape %x : tensor<4x64x768xf32> -> tensor<4x64x12x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def TFC_TransposeOp : TFC_InferOp<"transpose", [TFC_VJP]> {
  let summary = "permutes dimensions";
  let description = [{
    result.shape[i] = x.shape[perm[i]].

    ```mlir
    %t = tfc.transpose %x perm = [0, 2, 1, 3] : tensor<4x64x12x64xf32> -> tensor<4x12x64x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$x `perm` `=` $perm attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def TFC_ConcatOp : TFC_InferOp<"concat", [TFC_VJP]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    All inputs have the same rank and element type and agree on every
    dimension except `dim`.

    ```mlir
    %c = tfc.concat %a, %b dim = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<TFC_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$inputs `dim` `=` $dim attr-dict `:` functional-type($inputs, results)";
  let hasFolder = 1;
}

def TFC_SliceOp : TFC_InferOp<"slice", [TFC_VJP]> {
  let summary = "a static strided window";
  let description = [{
    For each dimension d: elements start[d], start[d] + stride[d], ... below
    limit[d]. 0 <= start < limit <= size, stride >= 1.

    ```mlir
    %q = tfc.slice %qkv start = [0, 0, 0] limit = [4, 64, 768] stride = [1, 1, 1] : tensor<4x64x2304xf32> -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{
    $x `start` `=` $start `limit` `=` $limit `stride` `=` $stride attr-dict `:` type($x) `->` type($result)
  }];
  let hasFolder = 1;
}

def TFC_DynamicSliceOp : TFC_Op<"dynamic_slice", [Pure]> {
  let summary = "a window along one dimension starting at a run-time index";
  let description = [{
    Takes result.shape[dim] consecutive elements along `dim` starting at
    `start` (a 0-d i32); the other dimensions are kept whole. The runtime
    clamps start to [0, size - length] as XLA does.

    ```mlir
    %last = tfc.dynamic_slice %h[%n_minus_1] dim = 1 : (tensor<1x128x768xf32>, tensor<i32>) -> tensor<1x1x768xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x, TFC_I32Scalar:$start, I64Attr:$dim);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{
    $x `[` $start `]` `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TFC_BroadcastToOp : TFC_Op<"broadcast_to", [Pure, TFC_VJP]> {
  let summary = "broadcasts to a larger shape (NumPy rules)";
  let description = [{
    ```mlir
    %b = tfc.broadcast_to %x : tensor<768xf32> -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class TFC_ReduceOp<string mnemonic, Type operandType> : TFC_InferOp<mnemonic, [TFC_VJP]> {
  let description = [{
    Reduces over `dims` (distinct, negative counts from the end). With
    `keepdim` the reduced dimensions stay as size 1.

    ```mlir
    %s = tfc.}] # mnemonic # [{ %x dims = [2] keepdim : tensor<4x64x768xf32> -> tensor<4x64x1xf32>
    ```
  }];
  let arguments = (ins operandType:$x, DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $x `dims` `=` $dims (`keepdim` $keepdim^)? attr-dict `:` type($x) `->` type($result)
  }];
}

def TFC_ReduceSumOp : TFC_ReduceOp<"reduce_sum", TFC_Tensor> { let summary = "sum over dimensions"; }
def TFC_ReduceMeanOp : TFC_ReduceOp<"reduce_mean", TFC_FloatTensor> { let summary = "mean over dimensions"; }
def TFC_ReduceMaxOp : TFC_ReduceOp<"reduce_max", TFC_Tensor> { let summary = "maximum over dimensions"; }

def TFC_ArgmaxOp : TFC_InferOp<"argmax"> {
  let summary = "index of the largest element along one dimension";
  let description = [{
    The first index on ties. The dimension is removed; the result is i32.

    ```mlir
    %next = tfc.argmax %logits dim = -1 : tensor<1x50257xf32> -> tensor<1xi32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x, I64Attr:$dim);
  let results = (outs TFC_TensorOf<[I32], "i32">:$result);
  let assemblyFormat = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Losses and sampling
//===----------------------------------------------------------------------===//

def TFC_CrossEntropyOp : TFC_InferOp<"cross_entropy", [TFC_VJP]> {
  let summary = "sparse softmax cross-entropy, averaged over counted targets";
  let description = [{
    `logits` is [..., V], `targets` has the leading shape of `logits` (i32 or
    i64). The result is a 0-d f32: the mean over all positions whose target is
    not `ignore_index` of -log softmax(logits)[target] (0 when none counts).

    ```mlir
    %loss = tfc.cross_entropy %logits, %targets ignore_index = -100 : tensor<4x64x50257xf32>, tensor<4x64xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$logits, TFC_IntTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs TFC_ScalarOf<F32, "f32">:$result);
  let assemblyFormat = [{
    $logits `,` $targets `ignore_index` `=` $ignore_index attr-dict `:` type($logits) `,` type($targets) `->` type($result)
  }];
}

def TFC_SampleOp : TFC_InferOp<"sample"> {
  let summary = "draws token ids from logits with temperature, top-k and top-p";
  let description = [{
    `logits` is [B, V]; the result is [B] i32. All knobs are run-time 0-d
    tensors so that one compiled artifact serves every setting:
    `temperature` <= 0 means greedy (argmax); `top_k` <= 0 keeps all; `top_p`
    >= 1 keeps all. The draw is a counter-based random function of (`seed`,
    row), so a fixed seed reproduces the same tokens.

    ```mlir
    %ids = tfc.sample %logits, %t, %k, %p, %seed : (tensor<1x50257xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$logits, TFC_F32Scalar:$temperature,
                       TFC_I32Scalar:$top_k, TFC_F32Scalar:$top_p,
                       TFC_I64Scalar:$seed);
  let results = (outs TFC_TensorOf<[I32], "i32">:$result);
  let assemblyFormat = [{
    $logits `,` $temperature `,` $top_k `,` $top_p `,` $seed attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_KvCacheUpdateOp : TFC_InferOp<"kv_cache_update"> {
  let summary = "writes new keys or values into a cache at a position";
  let description = [{
    `cache` has the maximum context length along `dim`; `update` has the same
    shape except a length L <= that along `dim`. The result is the cache with
    positions [pos, pos + L) along `dim` replaced by `update`. A position
    past the end is a run-time error reported by the runtime. A 1-d `position`
    [B] (with `dim` > 0) gives each row b of dimension 0 its own position:
    row b's slots [pos[b], pos[b] + L) are replaced. The update may then have
    fewer rows than the cache: it writes the first B, the others unchanged.

    With `blocks` the cache is paged (as vLLM's PagedAttention): `cache` is a
    pool of NB blocks [NB, Hkv, S, D] of S positions each, `update` is
    [B, Hkv, L, D], `position` is 1-d [B] and `blocks` [B, M] i32 is each
    row's block table: row b's logical position p lives in block
    blocks[b, p / S] at slot p % S (dim must be 2). A table entry < 0 is no
    block: writes there are dropped (an idle row of the batch). A position
    past M * S or a block id >= NB is a run-time error.

    ```mlir
    %k2 = tfc.kv_cache_update %kc, %k, %pos dim = 2 : (tensor<1x12x1024x64xf32>, tensor<1x12x1x64xf32>, tensor<i32>) -> tensor<1x12x1024x64xf32>
    %k3 = tfc.kv_cache_update %kc4, %k4, %rows dim = 2 : (tensor<4x12x1024x64xf32>, tensor<4x12x1x64xf32>, tensor<4xi32>) -> tensor<4x12x1024x64xf32>
    %k4 = tfc.kv_cache_update %pool, %k4, %rows blocks %table dim = 2 : (tensor<256x12x16x64xf32>, tensor<4x12x1x64xf32>, tensor<4xi32>, tensor<4x64xi32>) -> tensor<256x12x16x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$cache, TFC_Tensor:$update,
                       TFC_I32Positions:$position,
                       Optional<TFC_TensorOf<[I32], "i32">>:$blocks, I64Attr:$dim);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{
    $cache `,` $update `,` $position (`blocks` $blocks^)? `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_PagedAttentionOp : TFC_InferOp<"paged_attention"> {
  let summary = "causal attention over a paged KV cache, each row at its own position";
  let description = [{
    `query` is [B, H, Tq, D]; `key_pool` [NB, Hkv, S, D] and `value_pool`
    [NB, Hkv, S, Dv] are pools of NB blocks of S positions (written by
    `tfc.kv_cache_update` with `blocks`); `blocks` [B, M] i32 is each row's
    block table and `position` [B] i32 the position of each row's first
    query. Row b's key at logical position p is key_pool[blocks[b, p / S], :,
    p % S]; its query i sees keys p <= position[b] + i (and p < M * S). The
    result is [B, H, Tq, Dv], each row computed on its own (as
    `tfc.attention` with that row's keys laid out in order and `offset`
    position[b]). A row reads its table up to the first entry < 0 (no
    block): keys from there on are not seen (a row with no visible key gives
    0). A block id >= NB is a run-time error.
    `scale` defaults to 1 / sqrt(D). Inference only (no gradient).

    ```mlir
    %o = tfc.paged_attention %q, %kp, %vp, %table, %pos : (tensor<4x12x1x64xf32>, tensor<256x12x16x64xf32>, tensor<256x12x16x64xf32>, tensor<4x64xi32>, tensor<4xi32>) -> tensor<4x12x1x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$query, TFC_FloatTensor:$key_pool,
                       TFC_FloatTensor:$value_pool,
                       TFC_TensorOf<[I32], "i32">:$blocks,
                       TFC_TensorOf<[I32], "i32">:$position,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key_pool `,` $value_pool `,` $blocks `,` $position
    (`scale` `=` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    // The scale actually applied: the attribute, or 1 / sqrt(head dim).
    float getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts (Mixtral's sparse MoE block)
//===----------------------------------------------------------------------===//

def TFC_MoeRouteOp : TFC_InferOp<"moe_route"> {
  let summary = "the top-k experts of each token under its router logits";
  let description = [{
    `logits` is [N, E] (16-bit logits are widened). The result [N, k] i32 lists, per row, the k
    experts with the largest softmax probability (softmax in f32, as
    Hugging Face's MixtralTopKRouter), the largest first and the lower
    index first on equal probabilities. The ids are not differentiable; the
    routing weights are a softmax over the chosen logits, which the frontend
    composes from differentiable ops.

    ```mlir
    %ids = tfc.moe_route %logits top_k = 2 : tensor<32x8xf32> -> tensor<32x2xi32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$logits, I64Attr:$top_k);
  let results = (outs TFC_TensorOf<[I32], "i32">:$result);
  let assemblyFormat = "$logits `top_k` `=` $top_k attr-dict `:` type($logits) `->` type($result)";
}

def TFC_MoeFfnOp : TFC_InferOp<"moe_ffn", [TFC_VJP]> {
  let summary = "dropless SwiGLU experts, computed only for the tokens routed to them";
  let description = [{
    `x` is [N, D]; `ids` [N, k] i32 are each token's experts (distinct per
    row, in [0, E)); `weights` [N, E] are the routing weights (only the
    entries of the chosen experts are read); `experts` are 3E tensors, per
    expert e in order: gate w1 [F, D], up w3 [F, D], down w2 [D, F] (the
    layout of torch.nn.Linear, as Hugging Face's Mixtral checkpoints store
    `block_sparse_moe.experts.{e}.w1/w3/w2.weight`). The result [N, D] is

      y[n] = sum_j weights[n, e] * w2_e (silu(w1_e x[n]) * (w3_e x[n])),
      e = ids[n, j].

    Tokens are grouped by expert and each expert runs its three products on
    its own rows only: the work grows with N * k, not with E, and no token
    is dropped whatever the load.

    Expert parallelism (tfc-expert-parallel): `experts` may hold E' < E
    experts, those of ids `first_expert` ... `first_expert` + E' - 1 of the E
    = weights' second dimension; a (token, expert) pair of another expert is
    skipped (its rank computes it). By default all E, from 0.

    ```mlir
    %y = tfc.moe_ffn %x, %ids, %w experts %g0, %u0, %d0, %g1, %u1, %d1 : (tensor<32x64xf32>, tensor<32x1xi32>, tensor<32x2xf32>, tensor<176x64xf32>, tensor<176x64xf32>, tensor<64x176xf32>, tensor<176x64xf32>, tensor<176x64xf32>, tensor<64x176xf32>) -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, TFC_TensorOf<[I32], "i32">:$ids,
                       TFC_FloatTensor:$weights,
                       Variadic<TFC_FloatTensor>:$experts,
                       DefaultValuedAttr<I64Attr, "0">:$first_expert);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $ids `,` $weights `experts` $experts attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    int64_t getNumExperts() { return getExperts().size() / 3; }
  }];
}

def TFC_MoeFfnGradOp : TFC_Op<"moe_ffn_grad", [Pure]> {
  let summary = "gradients of tfc.moe_ffn w.r.t. x, the weights and the experts";
  let description = [{
    Given the operands of a `tfc.moe_ffn` and the gradient `grad` of its
    result, computes the gradients of x [N, D], of weights [N, E] (zero
    outside each token's chosen experts) and of the 3E expert matrices,
    recomputing each expert's hidden activations on its own rows. Results
    have the types of the corresponding operands. With `first_expert` and
    fewer experts than weights' columns (as tfc.moe_ffn), only the pairs of
    the experts given contribute.

    ```mlir
    %dx, %dw, %dg0, %du0, %dd0 = tfc.moe_ffn_grad %x, %ids, %w, %dy experts %g0, %u0, %d0 : (tensor<8x16xf32>, tensor<8x1xi32>, tensor<8x1xf32>, tensor<8x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>)
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, TFC_TensorOf<[I32], "i32">:$ids,
                       TFC_FloatTensor:$weights, TFC_FloatTensor:$grad,
                       Variadic<TFC_FloatTensor>:$experts,
                       DefaultValuedAttr<I64Attr, "0">:$first_expert);
  let results = (outs Variadic<TFC_FloatTensor>:$results);
  let assemblyFormat = [{
    $x `,` $ids `,` $weights `,` $grad `experts` $experts attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward ops: what VJPs use where a decomposition would lose a fusion that
// every framework makes (softmax + cross-entropy, FlashAttention backward,
// scatter-add of embedding rows).
//===----------------------------------------------------------------------===//

def TFC_EmbeddingGradOp : TFC_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-adds gradient rows into a table-shaped gradient";
  let description = [{
    The VJP of `tfc.embedding` with respect to the table: the result [V, D]
    is zero, or `init` when given, except that row ids[i] accumulates
    grad[i] for every position i (in position order, so the sum is
    deterministic). Ids out of [0, V) are a run-time error.

    With `into %init` the scatter adds onto a gradient the table already has
    (a tied input embedding and output projection, GPT-2's `wte`): one
    kernel instead of a zeroed [V, D] buffer and an add of two of them.
    tfc-autodiff forms it; a target may write the result over `init`.

    ```mlir
    %dw = tfc.embedding_grad %dy, %tokens : (tensor<4x64x768xf32>, tensor<4x64xi32>) -> tensor<50257x768xf32>
    %dt = tfc.embedding_grad %dy, %tokens into %dw_head : (tensor<4x64x768xf32>, tensor<4x64xi32>, tensor<50257x768xf32>) -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$grad, TFC_IntTensor:$ids,
                       Optional<TFC_FloatTensor>:$init);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $ids (`into` $init^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def TFC_CrossEntropyGradOp : TFC_InferOp<"cross_entropy_grad"> {
  let summary = "gradient of the mean sparse cross-entropy w.r.t. the logits";
  let description = [{
    (softmax(logits) - onehot(target)) * grad / count at every position whose
    target is not `ignore_index`, 0 elsewhere; count is the number of counted
    positions. `grad` is the 0-d gradient of the loss.

    ```mlir
    %dl = tfc.cross_entropy_grad %logits, %targets, %g ignore_index = -100 : (tensor<4x64x50257xf32>, tensor<4x64xi32>, tensor<f32>) -> tensor<4x64x50257xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$logits, TFC_IntTensor:$targets,
                       TFC_F32Scalar:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad `ignore_index` `=` $ignore_index attr-dict `:` functional-type(operands, results)
  }];
}

def TFC_AttentionGradOp : TFC_InferOp<"attention_grad"> {
  let summary = "gradients of attention w.r.t. query, key and value";
  let description = [{
    Given the operands of a `tfc.attention`, its result `out` and the
    gradient `grad_out`, computes (dQ, dK, dV) of the same shapes as Q, K, V,
    recomputing the attention probabilities block by block (FlashAttention's
    backward) instead of reading a saved T x T matrix. With grouped-query
    attention, dK and dV sum over the query heads that share a key head.

    ```mlir
    %dq, %dk, %dv = tfc.attention_grad %q, %k, %v, %o, %do causal : (tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>) -> (tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>, tensor<4x12x64x64xf32>)
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$query, TFC_FloatTensor:$key,
                       TFC_FloatTensor:$value, TFC_FloatTensor:$out,
                       TFC_FloatTensor:$grad_out,
                       Optional<TFC_I32Scalar>:$offset,
                       UnitAttr:$causal, OptionalAttr<F32Attr>:$scale);
  let results = (outs TFC_FloatTensor:$grad_query, TFC_FloatTensor:$grad_key,
                      TFC_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $grad_out (`offset` $offset^)? (`causal` $causal^)?
    (`scale` `=` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    float getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// Fusion (made by tfc-fuse, not by the frontend)
//===----------------------------------------------------------------------===//

def TFC_FusedOp : TFC_Op<"fused", [Pure, IsolatedFromAbove, SingleBlock]> {
  let summary = "a group of ops compiled as one kernel";
  let description = [{
    Made by `tfc-fuse`: the ops of the body run as one kernel that reads the
    operands once and writes the results once; values defined and used only
    inside the body never reach memory. The body is isolated from above: its
    block arguments are the operands, and `tfc.yield` gives the results.

    `kind` says how the kernel is generated:
    - `pointwise`: every op of the body has the shape of the results (the
      iteration space); operands broadcast into it as in NumPy. Several
      results are written in the same loop.
    - `reduction`: a pointwise prologue over the input of the last op, a
      `reduce_sum`, `reduce_mean` or `reduce_max`, computed in one pass:
      the prologue's values are reduced as they are produced.
    - `row`: a pointwise prologue, then `layer_norm`, `rms_norm`, `softmax`
      or `log_softmax` over the last dimension of its value (f32): per row,
      the prologue (a residual add, say) is written once and normalized in
      place while the row is in cache. Prologue values read elsewhere (the
      residual stream) are results too.
    - `linear`: a `tfc.linear` (f32), then optionally a gelu (tanh), relu,
      silu or leaky_relu of its result, then optionally an add of a residual
      of the result's shape: the kernel library applies them to each output
      tile while it is in cache.

    ```mlir
    %m, %p = tfc.fused "pointwise" (%g, %m0, %p0, %lr) : (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<f32>) -> (tensor<768xf32>, tensor<768xf32>) {
    ^bb0(%a: tensor<768xf32>, %b: tensor<768xf32>, %c: tensor<768xf32>, %d: tensor<f32>):
      %0 = tfc.add %a, %b : tensor<768xf32>, tensor<768xf32> -> tensor<768xf32>
      %1 = tfc.mul %0, %d : tensor<768xf32>, tensor<f32> -> tensor<768xf32>
      %2 = tfc.sub %c, %1 : tensor<768xf32>, tensor<768xf32> -> tensor<768xf32>
      tfc.yield %0, %2 : tensor<768xf32>, tensor<768xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$kind, Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def TFC_YieldOp : TFC_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusedOp">]> {
  let summary = "the results of a tfc.fused body";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = [{ ($values^ `:` type($values))? attr-dict }];
}

//===----------------------------------------------------------------------===//
// Collectives across processes (data parallel; issue 12)
//===----------------------------------------------------------------------===//

def TFC_AllReduceOp : TFC_Op<"all_reduce", [Pure, SameOperandsAndResultType, TFC_VJP]> {
  let summary = "sum or mean of a tensor over the ranks of a process group";
  let description = [{
    Every rank of the group named `group` ("dp": the data-parallel ranks)
    contributes `x`; each gets back the elementwise `reduce` ("sum" or
    "mean") of all the contributions. The CPU target lowers it to a call into
    the runtime's communicator (tfc_host_api_t.collective: MPI under
    mpirun, a copy in one process). Every rank runs the same compiled graph,
    so the collectives happen in the same order on every rank; that is why
    the op may be Pure (CSE and DCE act alike on every rank).

    Gradient (Megatron's conventions): the op is Megatron's `g`, an
    all-reduce in the forward whose result is replicated, so the gradient
    that reaches it is the same on every rank and is passed back as is
    ("sum"), or divided by the group's size ("mean"): identity in the
    backward. Megatron's `f` (identity forward, all-reduce backward) is
    tfc.copy_to_group. tfc-data-parallel inserts this op after autodiff, on the
    gradients, so its own VJP is not used there.

    ```mlir
    %g = tfc.all_reduce %grad {group = "dp", reduce = "mean", size = 2 : i64} : tensor<768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, StrAttr:$group, StrAttr:$reduce,
                       I64Attr:$size);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) }];
  let hasVerifier = 1;
}

def TFC_ReduceScatterOp : TFC_InferOp<"reduce_scatter", [TFC_VJP]> {
  let summary = "sum or mean over the ranks of a group, each rank keeping one block";
  let description = [{
    Every rank of the group named `group` contributes `x`, whose leading
    dimension is `size` blocks of equal length; rank r gets back block r of
    the elementwise `reduce` ("sum" or "mean") of all the contributions, so
    the result's leading dimension is x's divided by `size`. With
    `tfc.all_gather` it is the two halves of a ring all-reduce; ZeRO
    (tfc-zero-shard) uses it for the gradients so that each rank holds the
    averaged gradient of its own shard only. Lowered like tfc.all_reduce
    (TFC_COLLECTIVE_REDUCE_SCATTER through the runtime's communicator).

    Gradient: every rank's block r of x reaches rank r's result, so dL/dx is
    the all-gather of every rank's dL/dresult ("sum"), divided by `size`
    ("mean").

    ```mlir
    %s = tfc.reduce_scatter %g {group = "dp", reduce = "mean", size = 2 : i64} : tensor<768xf32> -> tensor<384xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, StrAttr:$group, StrAttr:$reduce,
                       I64Attr:$size);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) `->` type($result) }];
  let hasVerifier = 1;
}

def TFC_AllGatherOp : TFC_InferOp<"all_gather", [TFC_VJP]> {
  let summary = "the blocks of every rank of a group, concatenated in rank order";
  let description = [{
    Every rank of the group named `group` contributes `x`; each gets back the
    concatenation along the leading dimension of all the contributions, rank
    0's first, so the result's leading dimension is x's times `size`. ZeRO
    (tfc-zero-shard) uses it to rebuild every parameter from the shards each
    rank updated. Lowered like tfc.all_reduce (TFC_COLLECTIVE_ALL_GATHER).

    Gradient: the result is replicated, so dL/dresult is the same on every
    rank and rank r's dL/dx is its own block r of it; written as the
    reduce-scatter of dL/dresult with "mean" (the mean of `size` equal
    blocks is the block), so that its own gradient is again an all-gather.

    ```mlir
    %p = tfc.all_gather %shard {group = "dp", size = 2 : i64} : tensor<384xf32> -> tensor<768xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, StrAttr:$group, I64Attr:$size);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) `->` type($result) }];
  let hasVerifier = 1;
}

def TFC_AllToAllOp : TFC_Op<"all_to_all", [Pure, SameOperandsAndResultType, TFC_VJP]> {
  let summary = "every rank sends block s of its tensor to rank s";
  let description = [{
    The leading dimension of `x` is `size` blocks of equal length; block s of
    rank r's result is block r of rank s's `x` (a transpose of the blocks
    over the ranks of the group `group`). This is the exchange of expert
    parallelism (each rank sends every expert's tokens to the rank that holds
    that expert, and the answers back) and of the switch between sequence-
    and head-parallel layouts. Lowered like tfc.all_reduce
    (TFC_COLLECTIVE_ALL_TO_ALL through the runtime's communicator).

    Gradient: dL/d(block r of rank s's x) is dL/d(block s of rank r's
    result), so dL/dx is the all-to-all of dL/dresult.

    ```mlir
    %y = tfc.all_to_all %x {group = "ep", size = 2 : i64} : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, StrAttr:$group, I64Attr:$size);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) }];
  let hasVerifier = 1;
}

def TFC_CopyToGroupOp : TFC_Op<"copy_to_group", [Pure, SameOperandsAndResultType, TFC_VJP]> {
  let summary = "identity; its gradient is summed over the ranks of a group (Megatron's f)";
  let description = [{
    Megatron-LM's `f`, placed by tfc-tensor-parallel on the replicated input
    of a column-parallel linear: each rank of `group` ("tp") multiplies it by
    its own columns of the weight, so each rank's gradient with respect to
    the input is only its part of the whole; the VJP sums them
    (tfc.all_reduce{reduce = "sum"} of the cotangent over `group`). The
    forward is the identity: lowered as a view of `x`, no kernel, no
    communication. Its partner `g` (all-reduce forward, identity backward)
    is tfc.all_reduce.

    ```mlir
    %x1 = tfc.copy_to_group %x {group = "tp", size = 2 : i64} : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins TFC_FloatTensor:$x, StrAttr:$group, I64Attr:$size);
  let results = (outs TFC_FloatTensor:$result);
  let assemblyFormat = [{ $x attr-dict `:` type($x) }];
  let hasVerifier = 1;
}

def TFC_AllReduceStartOp : TFC_Op<"all_reduce_start"> {
  let summary = "starts the all-reduce of a bucket of tensors as one collective";
  let description = [{
    The first half of a gradient bucket (tfc-data-parallel with
    `bucket-mb`): the elementwise `reduce` ("sum" or "mean") over the ranks
    of the group `group` of every tensor in `xs`, done as ONE collective on
    their concatenation, started here and not waited for. The results
    (`pending`, one per operand, of its type) must go to the
    `tfc.all_reduce_wait` of the same `bucket` only, which completes the
    collective and gives the reduced tensors; between the two, the program
    goes on computing (the rest of the backward) while the bytes move.

    The CPU target lowers it to `tfc_host_api_t.collective_start`: the
    runtime copies the operands into one flat buffer of its own (so the
    operands' bytes may be reused at once) and hands it to its
    communication thread. `bucket` names the collective between the pair;
    it is unique within an entry. Not Pure: it must not be moved, merged or
    dropped (every rank starts the same buckets in the same order).

    ```mlir
    %p:2 = tfc.all_reduce_start %g0, %g1 {bucket = 0 : i64, group = "dp", reduce = "mean", size = 2 : i64} : tensor<64xf32>, tensor<8x8xf32> -> tensor<64xf32>, tensor<8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<TFC_TensorOf<[F32], "f32">>:$xs, StrAttr:$group,
                       StrAttr:$reduce, I64Attr:$size, I64Attr:$bucket);
  let results = (outs Variadic<TFC_TensorOf<[F32], "f32">>:$pending);
  let assemblyFormat = [{ $xs attr-dict `:` type($xs) `->` type($pending) }];
  let hasVerifier = 1;
}

def TFC_AllReduceWaitOp : TFC_Op<"all_reduce_wait"> {
  let summary = "waits for a bucket's all-reduce and gives the reduced tensors";
  let description = [{
    The second half of `tfc.all_reduce_start` with the same `bucket`: its
    operands are that op's `pending` results, in order; it blocks until the
    collective completed and returns the reduced tensors (tfc-data-parallel
    places it just before their first use). The CPU target lowers it to
    `tfc_host_api_t.collective_wait`, which copies the reduced flat buffer
    into the results; a result may take its operand's bytes (the operand
    holds nothing the wait reads).

    ```mlir
    %r:2 = tfc.all_reduce_wait %p#0, %p#1 {bucket = 0 : i64} : tensor<64xf32>, tensor<8x8xf32> -> tensor<64xf32>, tensor<8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<TFC_TensorOf<[F32], "f32">>:$pending, I64Attr:$bucket);
  let results = (outs Variadic<TFC_TensorOf<[F32], "f32">>:$results);
  let assemblyFormat = [{ $pending attr-dict `:` type($pending) `->` type($results) }];
  let hasVerifier = 1;
}

def TFC_SendOp : TFC_Op<"send"> {
  let summary = "sends a tensor to one rank of a process group (pipeline stages)";
  let description = [{
    Point-to-point: the bytes of `x` go to rank `peer` of the group `group`
    ("pp": the pipeline stages), where the `tfc.recv` with the same `tag`
    and this rank as its peer receives them. The send does not wait for the
    receiver: the runtime copies the bytes (so the operand's buffer may be
    reused at once) and moves them while the program goes on
    (tfc_host_api_t.p2p). Within one call of an entry each message between
    two ranks has its own tag, so sends and receives match whatever order
    each rank runs them in, and no order of a rank's sends can deadlock a
    program whose data flows one way (the compiler's split of one program
    into stages, tfc-pipeline-split, which inserts both ops after
    differentiation: they have no VJP). Not Pure: never moved across other
    effects, merged or dropped.

    ```mlir
    tfc.send %h {group = "pp", peer = 1 : i64, tag = 7 : i64} : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins TFC_Tensor:$x, StrAttr:$group, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = [{ $x attr-dict `:` type($x) }];
  let hasVerifier = 1;
}

def TFC_RecvOp : TFC_Op<"recv"> {
  let summary = "receives a tensor from one rank of a process group";
  let description = [{
    The other half of `tfc.send`: blocks until the message with `tag` from
    rank `peer` of the group `group` has arrived and gives it as a tensor
    of the result type (which must be the sent tensor's type; the runtime
    checks the byte count). A peer that died or stalls ends the wait with an
    error after the communicator's timeout (TFC_COMM_TIMEOUT_S).

    ```mlir
    %h = tfc.recv {group = "pp", peer = 0 : i64, tag = 7 : i64} : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$group, I64Attr:$peer, I64Attr:$tag);
  let results = (outs TFC_Tensor:$result);
  let assemblyFormat = [{ attr-dict `:` type($result) }];
  let hasVerifier = 1;
}

#endif // TFC_OPS_TD
