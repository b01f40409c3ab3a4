"""NumPy reference for the article's encoder-decoder transformer (seed 002).

Covers the forward pass, loss, data generators and greedy generation. There is no
backward pass: gradients are checked against autograd elsewhere. The spec is
docs/models/encdec.md. Parameter names (e.g. ``encoder.mha.wq``) are the ones the
spec defines. Each is mapped to the article's variable in PARAM_SPECS.

Article quirks (see /work/shared/seeds/README.md) and what this file does about them:
  * fit() restarts the step counter every epoch (warm-up never ends, Adam bias
    correction restarts). That is training-loop behaviour and is not implemented
    here; `lr_article_as_run` / `lr_article_code` / `lr_intended` document the
    three readings of the schedule for whoever writes the training loop.
  * backward_MHA swaps dQ/dK and transposes dWq/dWk/dWv. Irrelevant here (no
    backward); this forward is the true math, whose true gradient tfc must produce.
  * Generation (call() with Y=None) skips the final RMS norm (Norm6) before the output
    layer. `generate(..., article_skip_final_norm=False)` (the default) applies it,
    matching training. Pass True to reproduce the article's generation exactly.
  * No seed is set in the article. `init_params(seed)` reproduces the article's
    parameters exactly if `np.random.seed(seed)` had been called before its parameter
    cell (same legacy global-RNG draws, same order, same float32 rounding).
Everything is computed in float64 (the article uses float32).
"""
import random

import numpy as np

# ----------------------------------------------------------------------------- globals
BATCH = 64          # article: batch
STD = 0.1           # article: std (init scale)
HEADS = 4           # article: heads
D_MODEL = 32        # article: d_model
PART = D_MODEL // HEADS  # article: part_size = 8
FF_MULT = 4         # article: ff_multiply
VOCAB = 12          # article: vocab_size (digits 0..9 + Start + Finish)
MAX_TOKENS = 16     # article: max_tokens (encoder length, tokens generated)
START, FINISH = 10, 11
NORM_EPS = 1e-8     # normalize(eps=1e-8), inside the sqrt
CE_EPS = 1e-8       # SparseCrossEntropy(eps=1e-8), inside the log
NEG_INF = -1e9      # MHA(neg_inf=-1e9), additive causal mask
LEAKY = 0.1         # leakyrelu(rate=.1)
EMB_SEED = 13       # build_fixed_embeddings(random_state=13)

# name -> (shape, article variable, init). Order = the article's draw order for the
# normal-initialised tensors (MWQ, MWK, MWV, MWO, CWQ, CWK, CWV, CWO, FW1, FW2, WO).
# The Adam order of the article's `parameters` list is ADAM_ORDER below.
H, P, D, F, V = HEADS, PART, D_MODEL, D_MODEL * FF_MULT, VOCAB
PARAM_SPECS = {
    "encoder.mha.wq":  ((H, P, P), "MWQ[0]", "normal(0, 0.1)"),
    "encoder.mha.wk":  ((H, P, P), "MWK[0]", "normal(0, 0.1)"),
    "encoder.mha.wv":  ((H, P, P), "MWV[0]", "normal(0, 0.1)"),
    "encoder.mha.wo":  ((D, D),    "MWO[0]", "normal(0, 0.1)"),
    "decoder.mha.wq":  ((H, P, P), "MWQ[1]", "normal(0, 0.1)"),
    "decoder.mha.wk":  ((H, P, P), "MWK[1]", "normal(0, 0.1)"),
    "decoder.mha.wv":  ((H, P, P), "MWV[1]", "normal(0, 0.1)"),
    "decoder.mha.wo":  ((D, D),    "MWO[1]", "normal(0, 0.1)"),
    "decoder.mhca.wq": ((H, P, P), "CWQ",    "normal(0, 0.1)"),
    "decoder.mhca.wk": ((H, P, P), "CWK",    "normal(0, 0.1)"),
    "decoder.mhca.wv": ((H, P, P), "CWV",    "normal(0, 0.1)"),
    "decoder.mhca.wo": ((D, D),    "CWO",    "normal(0, 0.1)"),
    "encoder.ff.w1":   ((D, F),    "FW1[0]", "normal(0, 0.1)"),
    "encoder.ff.b1":   ((F,),      "FB1[0]", "zeros"),
    "encoder.ff.w2":   ((F, D),    "FW2[0]", "normal(0, 0.1)"),
    "encoder.ff.b2":   ((D,),      "FB2[0]", "zeros"),
    "decoder.ff.w1":   ((D, F),    "FW1[1]", "normal(0, 0.1)"),
    "decoder.ff.b1":   ((F,),      "FB1[1]", "zeros"),
    "decoder.ff.w2":   ((F, D),    "FW2[1]", "normal(0, 0.1)"),
    "decoder.ff.b2":   ((D,),      "FB2[1]", "zeros"),
    "output.w":        ((D, V),    "WO",     "normal(0, 0.1)"),
    "output.b":        ((V,),      "BO",     "zeros"),
}
ADAM_ORDER = [  # the article's `parameters` list, same order as its flattened grads
    "encoder.mha.wq", "encoder.mha.wk", "encoder.mha.wv", "encoder.mha.wo",
    "encoder.ff.w1", "encoder.ff.b1", "encoder.ff.w2", "encoder.ff.b2",
    "decoder.mha.wq", "decoder.mha.wk", "decoder.mha.wv", "decoder.mha.wo",
    "decoder.mhca.wq", "decoder.mhca.wk", "decoder.mhca.wv", "decoder.mhca.wo",
    "decoder.ff.w1", "decoder.ff.b1", "decoder.ff.w2", "decoder.ff.b2",
    "output.w", "output.b",
]


# ------------------------------------------------------------------ fixed tensors / init
def build_fixed_embeddings(vocab_size=VOCAB, d_model=D_MODEL, random_state=EMB_SEED):
    """Article build_fixed_embeddings: first `vocab_size` ROWS of the Q factor of the QR
    decomposition of a (d_model, d_model) standard-normal matrix drawn from
    np.random.default_rng(13). Rows are orthonormal. Cast to float32 like the
    article. Fixed (not trainable)."""
    rng = np.random.default_rng(random_state)
    mat = rng.standard_normal(size=(d_model, d_model))
    q, _ = np.linalg.qr(mat)
    return q[:vocab_size].astype(np.float32).astype(np.float64)


def positional_encoding_table(T, d_model=D_MODEL):
    """pe[t, 2i] = sin(t * 10000**(-2i/D)), pe[t, 2i+1] = cos(same), i = 0..D/2-1."""
    pos = np.arange(T, dtype=np.float64)[:, None]           # (T, 1)
    i = np.arange(d_model // 2, dtype=np.float64)           # (D/2,)
    ang = pos * 10000.0 ** (-2.0 * i / d_model)             # (T, D/2)
    pe = np.zeros((T, d_model))
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return pe


def init_params(seed=None):
    """Same draws as the article: legacy global-RNG np.random.normal(scale=0.1) for
    the stacked arrays MWQ(2,H,P,P), MWK, MWV, MWO(2,D,D), CWQ(H,P,P), CWK, CWV,
    CWO(D,D), FW1(2,D,4D), FW2(2,4D,D), WO(D,V), in that order, each cast to float32.
    Biases FB1, FB2, BO are zeros. Here a RandomState(seed) stands in for the global
    state after np.random.seed(seed)."""
    rs = np.random.RandomState(seed)

    def normal(shape):
        return rs.normal(size=shape, scale=STD).astype(np.float32).astype(np.float64)

    MWQ, MWK, MWV = normal((2, H, P, P)), normal((2, H, P, P)), normal((2, H, P, P))
    MWO = normal((2, D, D))
    CWQ, CWK, CWV = normal((H, P, P)), normal((H, P, P)), normal((H, P, P))
    CWO = normal((D, D))
    FW1, FW2 = normal((2, D, F)), normal((2, F, D))
    WO = normal((D, V))
    p = {}
    for i, side in enumerate(("encoder", "decoder")):
        p[f"{side}.mha.wq"], p[f"{side}.mha.wk"] = MWQ[i].copy(), MWK[i].copy()
        p[f"{side}.mha.wv"], p[f"{side}.mha.wo"] = MWV[i].copy(), MWO[i].copy()
        p[f"{side}.ff.w1"], p[f"{side}.ff.b1"] = FW1[i].copy(), np.zeros(F)
        p[f"{side}.ff.w2"], p[f"{side}.ff.b2"] = FW2[i].copy(), np.zeros(D)
    p["decoder.mhca.wq"], p["decoder.mhca.wk"] = CWQ, CWK
    p["decoder.mhca.wv"], p["decoder.mhca.wo"] = CWV, CWO
    p["output.w"], p["output.b"] = WO, np.zeros(V)
    for k, (shape, _, _) in PARAM_SPECS.items():
        assert p[k].shape == shape, (k, p[k].shape, shape)
    return p


EMBED = build_fixed_embeddings()  # buffer "embed.table" (12, 32), non-trainable


# ------------------------------------------------------------------------- primitives
def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def rms_norm(x, eps=NORM_EPS):
    """Article normalize(): x / sqrt(mean(x**2, last axis) + eps). No gain, no bias."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def leaky_relu(x, rate=LEAKY):
    return np.where(x > 0, x, rate * x)


def embed(tokens):
    """(B, T) int -> (B, T, D): fixed embedding lookup + sinusoidal positions."""
    return EMBED[tokens] + positional_encoding_table(tokens.shape[1])[None]


def attention(p, prefix, x, ctx=None, causal=False):
    """Article MHA (ctx None) / MHCA (ctx = encoder output).
    x (B,Tq,D) -> split heads (B,Tq,H,P), head h = features [h*P,(h+1)*P);
    per-head P x P projections (no bias); scores / sqrt(P); additive -1e9 causal mask;
    softmax over keys; merge heads (B,Tq,D); @ wo (D,D), no bias."""
    kv = x if ctx is None else ctx
    B, Tq, _ = x.shape
    Tk = kv.shape[1]
    xh = x.reshape(B, Tq, H, P)
    kvh = kv.reshape(B, Tk, H, P)
    q = np.einsum("bthd,hdp->bhtp", xh, p[prefix + ".wq"])   # (B,H,Tq,P)
    k = np.einsum("bthd,hdp->bhtp", kvh, p[prefix + ".wk"])  # (B,H,Tk,P)
    v = np.einsum("bthd,hdp->bhtp", kvh, p[prefix + ".wv"])  # (B,H,Tk,P)
    s = np.einsum("bhtp,bhfp->bhtf", q, k) / np.sqrt(P)      # (B,H,Tq,Tk)
    if causal:
        s = s + np.triu(np.full((Tq, Tk), NEG_INF), k=1)     # j > i masked
    a = softmax(s)
    z = np.einsum("bhtf,bhfp->bhtp", a, v)                   # (B,H,Tq,P)
    z = z.transpose(0, 2, 1, 3).reshape(B, Tq, D)            # (B,Tq,D)
    return z @ p[prefix + ".wo"]                             # (B,Tq,D)


def feed_forward(p, prefix, x):
    h = leaky_relu(x @ p[prefix + ".w1"] + p[prefix + ".b1"])  # (B,T,4D)
    return h @ p[prefix + ".w2"] + p[prefix + ".b2"]           # (B,T,D)


# ----------------------------------------------------------------------------- model
def encode(p, src):
    """src (B, Te) int -> Z (B, Te, D). Pre-norm, no final norm on Z."""
    r = embed(src)
    r = r + attention(p, "encoder.mha", rms_norm(r))
    return r + feed_forward(p, "encoder.ff", rms_norm(r))


def decode(p, dec_in, z, final_norm=True):
    """dec_in (B, Td) int (starts with START), z (B, Te, D) -> logits (B, Td, V)."""
    r = embed(dec_in)
    r = r + attention(p, "decoder.mha", rms_norm(r), causal=True)
    r = r + attention(p, "decoder.mhca", rms_norm(r), ctx=z)
    r = r + feed_forward(p, "decoder.ff", rms_norm(r))
    h = rms_norm(r) if final_norm else r  # Norm6. Article generation skips it (quirk)
    return h @ p["output.w"] + p["output.b"]


def add_start_token(y):
    return np.concatenate([np.full((y.shape[0], 1), START, y.dtype), y], axis=1)


def add_finish_token(y):
    return np.concatenate([y, np.full((y.shape[0], 1), FINISH, y.dtype)], axis=1)


def forward(p, src, tgt):
    """Teacher-forced training forward (article call(X, Y)). src, tgt (B, 16) ints.
    Returns logits (B, 17, V) for decoder input [START, tgt]."""
    return decode(p, add_start_token(tgt), encode(p, src))


def sparse_cross_entropy(logits, labels, eps=CE_EPS):
    """Article SparseCrossEntropy: -sum(log(softmax(logits)[label] + eps)) / (B*T).
    eps=0 gives the plain mean log-softmax CE. The article's hand gradient
    (probs - onehot)/(B*T) is the exact gradient of the eps=0 form. The difference is
    negligible (the factor p/(p+1e-8))."""
    probs = softmax(logits)
    B, T, _ = probs.shape
    pc = probs[np.arange(B)[:, None], np.arange(T)[None, :], labels]
    return -np.sum(np.log(pc + eps)) / (B * T)


def loss_fn(p, src, tgt):
    """Training loss for one batch: labels are [tgt, FINISH] (B, 17)."""
    return sparse_cross_entropy(forward(p, src, tgt), add_finish_token(tgt))


def generate(p, src, max_tokens=MAX_TOKENS, article_skip_final_norm=False):
    """Greedy generation (article call(X)). Re-runs the decoder on the whole prefix
    each step (no KV cache), takes argmax of the last position, appends it. Always
    runs max_tokens steps (no early stop on FINISH). Returns (B, 1+max_tokens)
    including the leading START."""
    z = encode(p, src)
    seq = np.full((src.shape[0], 1), START, dtype=np.int64)
    for _ in range(max_tokens):
        logits = decode(p, seq, z, final_norm=not article_skip_final_norm)
        nxt = np.argmax(softmax(logits)[:, -1, :], axis=-1)[:, None]
        seq = np.concatenate([seq, nxt], axis=1)
    return seq


# --------------------------------------------------------------------------- schedule
EPOCHS, STEPS_PER_EPOCH, LR_START, LR_FINISH, WARMUP = 10, 64, 1e-2, 1e-5, 128
TOTAL_STEPS = EPOCHS * STEPS_PER_EPOCH - WARMUP  # article total_steps = 512


def lr_article_code(step):
    """Article sheduler(step) literally. After warm-up it uses `step` rather than
    `step - warmup`, jumps to ~7.5e-3 at step 129, reaches 0 at 512 and is negative
    after that. finish_rate only enters as (start - finish)."""
    if step <= WARMUP:
        return LR_START * step / WARMUP
    return (LR_START - LR_FINISH) * (TOTAL_STEPS - step) / TOTAL_STEPS


def lr_article_as_run(epoch_step):
    """What actually ran: fit() passes the per-epoch step 1..64, so
    lr = 1e-2 * s / 128 (<= 5e-3), a saw-tooth repeated each epoch."""
    return lr_article_code(epoch_step)


def lr_intended(global_step):
    """The text's intent: linear warm-up to 1e-2 over 128 steps, then linear decay to
    1e-5 at the last step (640). This is one reading of the text. The article never
    writes this formula."""
    if global_step <= WARMUP:
        return LR_START * global_step / WARMUP
    frac = (global_step - WARMUP) / TOTAL_STEPS
    return LR_START + (LR_FINISH - LR_START) * frac


def adam_update(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Article optimizer(), one parameter, in place. t is the bias-correction step
    (per-epoch in the article as run)."""
    m[...] = b1 * m + (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * g * g
    p -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


# ------------------------------------------------------------------------------ data
def _split(data, test_size, rng):
    idx = rng.permutation(len(data))          # article: np.random.permutation
    data = data[idx]
    cut = int(len(data) * (1 - test_size))    # int(256 * 0.67) = 171
    return data[:cut], data[cut:]


def palindrome(batch_size=BATCH, number_tokens=MAX_TOKENS, number_batch=256,
               test_size=0.33, py_rng=None, np_rng=None):
    """Article Generator.palindrome. half = 8-digit decimal string of
    random.randint(10**7, 10**8 - 1) (first digit 1..9, no leading zero);
    src = half+half, tgt = half+reversed(half). Returns train (171,2,64,16) and
    valid (85,2,64,16) int arrays; [:,0] is src, [:,1] is tgt."""
    py_rng = py_rng or random.Random()
    np_rng = np_rng or np.random.RandomState()
    n = number_tokens // 2
    data = np.empty((number_batch, 2, batch_size, number_tokens), dtype=np.int64)
    for b in range(number_batch):
        for s in range(batch_size):
            half = str(py_rng.randint(10 ** (n - 1), 10 ** n - 1))
            data[b, 0, s] = [int(c) for c in half + half]
            data[b, 1, s] = [int(c) for c in half + half[::-1]]
    return _split(data, test_size, np_rng)


def pointer_index(batch_size=BATCH, number_tokens=MAX_TOKENS, number_batch=256,
                  test_size=0.33, np_rng=None):
    """Article Generator.pointer_index: x ~ randint(0, 10, size=T) (0..9), y = x[x]
    (y_i = x_{x_i}). Requires T >= 10."""
    np_rng = np_rng or np.random.RandomState()
    if number_tokens < 10:
        raise ValueError("seq_len must be >= 10")
    data = np.empty((number_batch, 2, batch_size, number_tokens), dtype=np.int64)
    for b in range(number_batch):
        for s in range(batch_size):
            x = np_rng.randint(0, 10, size=number_tokens)
            data[b, 0, s], data[b, 1, s] = x, x[x]
    return _split(data, test_size, np_rng)


EXAMPLES = np.array([
    [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8],
    [8, 7, 6, 5, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1],
    [0, 1, 0, 2, 0, 3, 0, 4, 0, 1, 0, 2, 0, 3, 0, 4],
    [1, 1, 2, 3, 1, 1, 4, 5, 1, 1, 2, 3, 1, 1, 4, 5],
    [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1],
    [5, 5, 4, 4, 3, 3, 2, 2, 5, 5, 4, 4, 3, 3, 2, 2],
    [7, 7, 7, 7, 8, 8, 9, 9, 7, 7, 7, 7, 8, 8, 9, 9],
    [1, 5, 3, 7, 9, 2, 4, 6, 1, 5, 3, 7, 9, 2, 4, 6],
    [3, 9, 2, 6, 1, 2, 5, 6, 3, 9, 2, 6, 1, 2, 5, 6],
])
# Expected (article's printed output): START then the first half then its reverse.
EXPECTED = np.concatenate(
    [np.full((9, 1), START), EXAMPLES[:, :8], EXAMPLES[:, 7::-1]], axis=1)


if __name__ == "__main__":
    params = init_params(0)
    n_params = sum(v.size for v in params.values())
    train, valid = palindrome(py_rng=random.Random(0), np_rng=np.random.RandomState(0))
    src, tgt = train[0]
    logits = forward(params, src, tgt)
    print("train", train.shape, "valid", valid.shape, "params", n_params)
    print("logits", logits.shape)
    print("loss", loss_fn(params, src, tgt), "(ln 12 =", np.log(VOCAB), ")")
    print("generate", generate(params, EXAMPLES).shape)
