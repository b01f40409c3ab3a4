#!/usr/bin/env python3
"""Writes the seed corpora of the runtime's fuzz targets (runtime/fuzz/corpus/<target>/):
a handful of small valid files per parser and the edge cases next to them. The corpora
are committed; rerun this from the repository root after changing it. Inputs that
crashed a fuzzer are added to the corpus by hand, under their crash-<sha1> name."""
import json, struct, os, io, random
import numpy as np
root = 'runtime/fuzz/corpus'
def w(sub, name, data):
    with open(os.path.join(root, sub, name), 'wb') as f: f.write(data)

# safetensors
def st(tensors, meta=None, extra=b''):
    header = {}
    data = b''
    if meta is not None: header['__metadata__'] = meta
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    return struct.pack('<Q', len(h)) + h + data + extra
w('safetensors', 'two_tensors', st({'wte': ('F32', [2, 2], np.arange(4, dtype='<f4').tobytes()),
                                    'step': ('I64', [], struct.pack('<q', 7))}, {'format': 'pt'}))
w('safetensors', 'all_dtypes', st({d: (d, [2], b'\x01' * (2 * s)) for d, s in
      [('F64', 8), ('F32', 4), ('F16', 2), ('BF16', 2), ('I64', 8), ('I32', 4), ('I16', 2), ('I8', 1),
       ('U8', 1), ('U16', 2), ('U32', 4), ('U64', 8), ('BOOL', 1)]}))
w('safetensors', 'empty_tensor', st({'e': ('F32', [0, 3], b''), 'x': ('U8', [1], b'\x05')}))
w('safetensors', 'no_tensors', st({}, {'k': 'v'}))
w('safetensors', 'trailing_bytes', st({'x': ('U8', [1], b'\x05')}, extra=b'\0\0\0'))
w('safetensors', 'empty_file', b'')
w('safetensors', 'header_past_end', struct.pack('<Q', 1 << 20) + b'{}')

# safetensors_index: model.safetensors.index.json as save_pretrained writes it, and refusals
def index(weight_map, meta=None, indent=2):
    return json.dumps({'metadata': meta if meta is not None else {'total_size': 1024},
                       'weight_map': weight_map}, indent=indent).encode()
w('safetensors_index', 'two_shards', index({
    'lm_head.weight': 'model-00002-of-00002.safetensors',
    'model.embed_tokens.weight': 'model-00001-of-00002.safetensors',
    'model.layers.0.self_attn.q_proj.weight': 'model-00001-of-00002.safetensors'}))
w('safetensors_index', 'nested_metadata', index({'w': 'sub/a.safetensors'},
    {'total_size': 1.5e3, 'x': [None, True, False, {'k': 'v'}], 's': '\u00e9'}, indent=None))
w('safetensors_index', 'escaping_shard', index({'w': '../other/model.safetensors'}))
w('safetensors_index', 'duplicate_tensor',
  b'{"weight_map": {"w": "a.safetensors", "w": "b.safetensors"}}')
w('safetensors_index', 'no_weight_map', b'{"metadata": {"total_size": 0}}')
w('safetensors_index', 'truncated', index({'w': 'a.safetensors'})[:-7])

# npy (NumPy writes them)
def npy(a, version=None):
    f = io.BytesIO()
    if version: np.lib.format.write_array(f, a, version=version)
    else: np.save(f, a)
    return f.getvalue()
w('npy', 'f32_2x3', npy(np.arange(6, dtype='<f4').reshape(2, 3)))
w('npy', 'i32_scalar', npy(np.array(5, dtype='<i4')))
w('npy', 'bool_vec', npy(np.array([True, False, True])))
w('npy', 'fortran_f64', npy(np.asfortranarray(np.arange(6, dtype='<f8').reshape(2, 3))))
w('npy', 'big_endian_i16', npy(np.arange(4, dtype='>i2')))
w('npy', 'version2_u8', npy(np.arange(3, dtype='u1'), version=(2, 0)))
w('npy', 'empty_0x4', npy(np.zeros((0, 4), dtype='<f2')))
w('npy', 'truncated', npy(np.arange(6, dtype='<f4'))[:-5])

# token files: a selector byte (bit 0 .npy, bit 1 uint32) and the file
toks = [i % 50 for i in range(40)]
w('token_file', 'u16_bin', b'\x00' + np.array(toks, dtype='<u2').tobytes())
w('token_file', 'u32_bin', b'\x02' + np.array(toks, dtype='<u4').tobytes())
def llmc(version, tokens, count=None):
    head = np.zeros(256, dtype='<i4'); head[0] = 20240520; head[1] = version
    head[2] = len(tokens) if count is None else count
    return head.tobytes() + np.array(tokens, dtype='<u2' if version == 1 else '<u4').tobytes()
w('token_file', 'llmc_v1', b'\x00' + llmc(1, toks))
w('token_file', 'llmc_v2', b'\x00' + llmc(2, toks))
w('token_file', 'llmc_wrong_count', b'\x00' + llmc(1, toks, count=1000))
w('token_file', 'npy_i32', b'\x01' + npy(np.array(toks, dtype='<i4')))
w('token_file', 'npy_i64_negative', b'\x01' + npy(np.array([1, -3, 2, 4, 5, 6, 7], dtype='<i8')))
w('token_file', 'npy_2d', b'\x01' + npy(np.zeros((2, 8), dtype='<u2')))
w('token_file', 'odd_size', b'\x00' + b'\x01\x00\x02')
w('token_file', 'too_short', b'\x00' + np.array([1, 2], dtype='<u2').tobytes())
w('token_file', 'out_of_vocab', b'\x02' + np.array([1, 2, 60000, 3, 4, 5, 6, 7], dtype='<u4').tobytes())

# tokenizer: vocab.json NUL merges.txt
def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]; n = 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, [chr(c) for c in cs]))
b2u = bytes_to_unicode()
base = [b2u[b] for b in range(256)]
def tokenizer(merges, eos=True, version=True):
    vocab = {t: i for i, t in enumerate(base)}
    lines = ['#version: 0.2'] if version else []
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab)); lines.append(a + ' ' + b)
    if eos: vocab['<|endoftext|>'] = len(vocab)
    return json.dumps(vocab, ensure_ascii=False).encode() + b'\0' + ('\n'.join(lines) + '\n').encode()
G = b2u[ord(' ')]
w('tokenizer', 'small', tokenizer([('h', 'e'), ('l', 'l'), ('he', 'll'), (G, 'w'), ('o', 'r'), (G + 'w', 'or')]))
w('tokenizer', 'no_eos_no_version', tokenizer([('a', 'b'), ('ab', 'c')], eos=False, version=False))
w('tokenizer', 'bytes_only', tokenizer([]))
bad = tokenizer([('a', 'b')]).replace(b'a b', b'a zz')
w('tokenizer', 'merge_part_missing', bad)
w('tokenizer', 'missing_byte_token', json.dumps({'a': 0}).encode() + b'\0')
w('tokenizer', 'duplicate_id', json.dumps({'a': 0, 'b': 0}).encode() + b'\0')
w('tokenizer', 'not_json', b'{"a": 0,\0a b\n')

# hf_tokenizer: tokenizer.json files in the shapes of real ones (small vocabularies), a NUL,
# then a text to encode; and the errors next to them.
def hf(model, normalizer=None, pre=None, decoder=None, added=(), post=None, text='Hello world'):
    doc = {'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': list(added),
           'normalizer': normalizer, 'pre_tokenizer': pre, 'post_processor': post,
           'decoder': decoder, 'model': model}
    return json.dumps(doc, ensure_ascii=False).encode() + b'\0' + text.encode()
def added(i, content, special=True, **options):
    token = {'id': i, 'content': content, 'single_word': False, 'lstrip': False, 'rstrip': False,
             'normalized': not special, 'special': special}
    token.update(options)
    return token
def bpe(merges, extra=(), pairs=False, **options):
    vocab = {t: i for i, t in enumerate(base)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    for t in extra:
        vocab.setdefault(t, len(vocab))
    model = {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': None,
             'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False,
             'ignore_merges': False, 'vocab': vocab,
             'merges': [[a, b] if pairs else a + ' ' + b for a, b in merges]}
    model.update(options)
    return model, vocab
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
byte_level = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True}
merges = [('h', 'e'), ('l', 'l'), ('he', 'll'), (G, 'w'), ('o', 'r'), (G + 'w', 'or')]
model, vocab = bpe(merges, extra=['<|endoftext|>'])
w('hf_tokenizer', 'gpt2', hf(model, pre=byte_level, decoder=byte_level,
                             added=[added(vocab['<|endoftext|>'], '<|endoftext|>')],
                             post={'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': True},
                             text="Hello world<|endoftext|> it's 12345 \u00e9\n\n  x"))
model, vocab = bpe(merges, extra=['<|begin_of_text|>', '<|end_of_text|>'], pairs=True,
                   ignore_merges=True)
split = lambda regex: {'type': 'Split', 'pattern': {'Regex': regex}, 'behavior': 'Isolated',
                       'invert': False}
bos = vocab['<|begin_of_text|>']
w('hf_tokenizer', 'llama3', hf(
    model, pre={'type': 'Sequence', 'pretokenizers': [split(LLAMA3_RE), dict(byte_level, use_regex=False)]},
    decoder=byte_level, added=[added(bos, '<|begin_of_text|>'), added(bos + 1, '<|end_of_text|>')],
    post={'type': 'TemplateProcessing',
          'single': [{'SpecialToken': {'id': '<|begin_of_text|>', 'type_id': 0}},
                     {'Sequence': {'id': 'A', 'type_id': 0}}],
          'pair': [], 'special_tokens': {'<|begin_of_text|>': {'id': '<|begin_of_text|>', 'ids': [bos],
                                                               'tokens': ['<|begin_of_text|>']}}},
    text='<|begin_of_text|>Hello WORLD\r\n 1234567 <tool>x'))
model, vocab = bpe(merges, extra=['<|im_end|>'])
w('hf_tokenizer', 'qwen2_nfc', hf(
    model, normalizer={'type': 'NFC'},
    pre={'type': 'Sequence', 'pretokenizers': [split(LLAMA3_RE.replace(r'\p{N}{1,3}', r'\p{N}')),
                                                dict(byte_level, use_regex=False)]},
    decoder=byte_level, added=[added(vocab['<|im_end|>'], '<|im_end|>')],
    text='e\u0301 \u1100\u1161 A\u030a\u0301 42<|im_end|>'))
sp_vocab = {'<unk>': 0, '<s>': 1, '</s>': 2}
for b in range(256):
    sp_vocab['<0x%02X>' % b] = len(sp_vocab)
for t in ['\u2581', 'a', 'b', 'c', 'H', 'e', 'l', 'o', '\u2581a', '\u2581ab', 'll', 'He', 'Hell']:
    sp_vocab[t] = len(sp_vocab)
sp_model = {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'fuse_unk': True,
            'byte_fallback': True, 'vocab': sp_vocab,
            'merges': ['\u2581 a', '\u2581a b', 'l l', 'H e', 'He ll']}
sp_decoder = {'type': 'Sequence', 'decoders': [
    {'type': 'Replace', 'pattern': {'String': '\u2581'}, 'content': ' '}, {'type': 'ByteFallback'},
    {'type': 'Fuse'}, {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}]}
sp_added = [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')]
sp_post = {'type': 'TemplateProcessing', 'single': [{'SpecialToken': {'id': '<s>', 'type_id': 0}},
                                                    {'Sequence': {'id': 'A', 'type_id': 0}}],
           'pair': [], 'special_tokens': {'<s>': {'id': '<s>', 'ids': [1], 'tokens': ['<s>']}}}
w('hf_tokenizer', 'llama2', hf(
    sp_model, normalizer={'type': 'Sequence', 'normalizers': [
        {'type': 'Prepend', 'prepend': '\u2581'},
        {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '\u2581'}]},
    decoder=sp_decoder, added=sp_added + [added(len(sp_vocab), 'hello world', special=False)],
    post=sp_post, text='Hello ab</s>c \u00e9\U0001F600'))
w('hf_tokenizer', 'metaspace', hf(
    sp_model, pre={'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first',
                   'split': True},
    decoder={'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': True},
    added=sp_added + [added(len(sp_vocab), '<tool>', special=False, lstrip=True, rstrip=True,
                            normalized=False)],
    post=sp_post, text='ab  ab <tool> c<s>a'))
w('hf_tokenizer', 'gemma_split_string', hf(
    sp_model, normalizer={'type': 'Replace', 'pattern': {'String': ' '}, 'content': '\u2581'},
    pre={'type': 'Sequence', 'pretokenizers': [
        {'type': 'Split', 'pattern': {'String': '\u2581'}, 'behavior': 'MergedWithPrevious',
         'invert': False},
        {'type': 'Punctuation', 'behavior': 'Contiguous'},
        {'type': 'Digits', 'individual_digits': True}]},
    decoder={'type': 'Sequence', 'decoders': sp_decoder['decoders'][:3]},
    added=sp_added, text='Hello,, ab  c!! 123'))
w('hf_tokenizer', 'wordpiece', hf({'type': 'WordPiece', 'vocab': {'[UNK]': 0}, 'unk_token': '[UNK]'},
                                  decoder={'type': 'WordPiece'}))
model, vocab = bpe([('a', 'b')])
model['merges'].append('b zz')
w('hf_tokenizer', 'merge_part_missing', hf(model, pre=byte_level, decoder=byte_level))
w('hf_tokenizer', 'unknown_regex', hf(bpe([])[0], pre=split(r'\w+'), decoder=byte_level))
w('hf_tokenizer', 'not_json', b'{"model": {"type": "BPE", "vocab": {"a": 0,\0a')

# artifact tables: bytes for FuzzedDataProvider (integers from the end, strings from the front)
rng = random.Random(13)
for i, n in enumerate([16, 64, 256, 512, 1024]):
    w('artifact_table', 'random_%d' % n, bytes(rng.randrange(256) for _ in range(n)))
w('artifact_table', 'zeros_256', b'\0' * 256)
w('artifact_table', 'ones_256', b'\xff' * 256)
