#!/usr/bin/python3
"""Writes the checkpoint-format fixtures of tests/data/checkpoint_formats/ with the real writers:
SentencePiece models trained by Debian's python3-sentencepiece, .bin files written by
torch.save of Debian's python3-torch. Each .bin has a twin in the format the program read
before (model.safetensors, tokenizer.json) holding the same values, written here by hand from
the same tensors, so that a test can run the program on both and compare the outputs.

Run it with Debian's interpreter (the packages are not in other Pythons):
    /usr/bin/python3 tests/data/checkpoint_formats/make_fixtures.py
It rewrites every fixture in place; PROVENANCE.md records what each one is.
"""
import base64
import collections
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zipfile

import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE = "\u2581"

# The command the hostile pickles name: it would create this file. The tests delete it, run
# the program on the pickle, and check that it is still absent.
TRACE = "/tmp/clp-transfer-pickle-ran-{}"


def made_up_words(seed, count, syllables):
    rng = random.Random(seed)
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))))
    return sorted(words)


SHARED = made_up_words(1, 220, ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "zo", "pa"])
SOURCE_ONLY = made_up_words(2, 120, ["the", "ing", "and", "wor", "ld", "ish", "er"])
HELPER_ONLY = made_up_words(3, 120, ["der", "ung", "sch", "ei", "ä", "ö", "ü", "ß"])


def corpus(path, words, seed, lines=3000):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "\n")


def train(destination, text, **options):
    """Trains on `text` (a file in the working folder, named relatively: the model records the
    names it was trained with) and moves the model to `destination`."""
    spm.SentencePieceTrainer.train(input=text, model_prefix="trained", normalization_rule_name="identity",
                                   character_coverage=1.0, num_threads=1, minloglevel=2, **options)
    os.remove("trained.vocab")
    os.replace("trained.model", destination)
    return spm.SentencePieceProcessor(model_file=destination)


def piece_type(sp, i):
    for name, test in [("unknown", sp.is_unknown), ("control", sp.is_control), ("unused", sp.is_unused),
                       ("byte", sp.is_byte)]:
        if test(i):
            return name
    return "normal"  # or user-defined: the Python API does not tell them apart


def write_pieces(sp, path):
    """The oracle of the protobuf reader: every piece, its score and its type, by the library."""
    pieces = [[sp.id_to_piece(i), sp.get_score(i), piece_type(sp, i)] for i in range(sp.get_piece_size())]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(pieces, f, ensure_ascii=False, indent=0)
        f.write("\n")


def sentencepiece_tokenizer_json(sp):
    """The tokenizer.json transformers' LlamaConverter writes for a BPE SentencePiece model with
    byte fallback: the vocabulary is the model's pieces, id for id."""
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    added = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": []}}


def wordpiece_tokens(sp):
    """A BERT-style WordPiece vocabulary from a SentencePiece model's pieces: '▁x' starts a word
    (x), any other piece continues one (##x); special tokens first, as BERT's are."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for i in range(sp.get_piece_size()):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i):
            continue
        piece = sp.id_to_piece(i)
        if piece.startswith("<"):  # a user-defined symbol such as <mask>
            continue
        token = piece[1:] if piece.startswith(SPACE) else "##" + piece
        if token and token not in tokens:
            tokens.append(token)
    return tokens


def wordpiece_tokenizer_json(tokens):
    """The tokenizer.json of transformers' BertTokenizerFast for the vocab.txt `tokens`."""
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(tokens[:5])],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": False},
        "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(tokens)}}}


SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """A safetensors file by the format's definition, tensors in the order given."""
    header, data = {}, b""
    for name, t in tensors.items():
        b = tensor_bytes(t)
        header[name] = {"dtype": SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=2)
        f.write("\n")


def values(generator, rows, cols, dtype, scale=0.5):
    return (torch.randn(rows, cols, generator=generator) * scale + 0.3).to(dtype)


def write_sharded(folder, shards, torch_format):
    """Shards of a state dict, named and indexed as transformers names them."""
    count, weight_map, total = len(shards), {}, 0
    for n, shard in enumerate(shards, 1):
        stem = "pytorch_model" if torch_format else "model"
        name = f"{stem}-{n:05d}-of-{count:05d}." + ("bin" if torch_format else "safetensors")
        if torch_format:
            torch.save(shard, os.path.join(folder, name))
        else:
            write_safetensors(os.path.join(folder, name), shard)
        for key, t in shard.items():
            weight_map[key] = name
            total += t.numel() * t.element_size()
    index = "pytorch_model.bin.index.json" if torch_format else "model.safetensors.index.json"
    write_json(os.path.join(folder, index),
               {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})


def make_source(g):
    folder = os.path.join(HERE, "source")
    os.makedirs(folder, exist_ok=True)
    corpus("source.txt", SHARED + SOURCE_ONLY, 10)
    sp = train(os.path.join(folder, "tokenizer.model"), "source.txt", model_type="bpe",
               vocab_size=420, byte_fallback=True)
    write_json(os.path.join(folder, "tokenizer.json"), sentencepiece_tokenizer_json(sp))
    rows, width = sp.get_piece_size(), 8
    write_json(os.path.join(folder, "config.json"), {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": width,
        "intermediate_size": 16, "num_attention_heads": 2, "num_hidden_layers": 1, "vocab_size": rows,
        "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False, "torch_dtype": "bfloat16"})
    shards = [collections.OrderedDict([
                  ("model.embed_tokens.weight", values(g, rows, width, torch.bfloat16)),
                  ("model.layers.0.self_attn.q_proj.weight", values(g, width, width, torch.bfloat16)),
                  ("model.position_ids", torch.arange(16, dtype=torch.int64).reshape(1, 16))]),
              collections.OrderedDict([
                  ("model.norm.weight", values(g, 1, width, torch.bfloat16).reshape(width)),
                  ("lm_head.weight", values(g, rows, width, torch.bfloat16, scale=1.5))])]
    write_sharded(folder, shards, torch_format=False)
    os.makedirs(os.path.join(HERE, "source_bin"), exist_ok=True)
    write_sharded(os.path.join(HERE, "source_bin"), shards, torch_format=True)


def make_helpers(g):
    corpus("helper.txt", SHARED + HELPER_ONLY, 20)
    folder = os.path.join(HERE, "helper_sentencepiece")
    os.makedirs(folder, exist_ok=True)
    sp = train(os.path.join(folder, "tokenizer.model"), "helper.txt", model_type="bpe",
               vocab_size=400, byte_fallback=True, pad_id=3, user_defined_symbols=["<mask>"])
    write_pieces(sp, os.path.join(folder, "tokenizer.pieces.json"))
    write_json(os.path.join(folder, "tokenizer.json"), sentencepiece_tokenizer_json(sp))
    rows, width = sp.get_piece_size(), 6
    write_json(os.path.join(folder, "config.json"), {
        "model_type": "llama", "hidden_size": width, "vocab_size": rows, "bos_token_id": 1, "eos_token_id": 2,
        "pad_token_id": 3})
    weights = collections.OrderedDict([("model.embed_tokens.weight", values(g, rows, width, torch.float32)),
                                       ("model.norm.weight", values(g, 1, width, torch.float32).reshape(width))])
    torch.save(weights, os.path.join(folder, "pytorch_model.bin"))
    write_safetensors(os.path.join(folder, "model.safetensors"), weights)

    folder = os.path.join(HERE, "helper_wordpiece")
    os.makedirs(folder, exist_ok=True)
    tokens = wordpiece_tokens(sp)
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in tokens)
    write_json(os.path.join(folder, "tokenizer.json"), wordpiece_tokenizer_json(tokens))
    rows = len(tokens)
    write_json(os.path.join(folder, "config.json"), {
        "model_type": "bert", "hidden_size": width, "vocab_size": rows, "pad_token_id": 0})
    # Saved as transformers saves a model: torch.save of a module's state_dict(), whose pickle
    # carries the modules' _metadata (versions) as the OrderedDict's attributes.
    model = torch.nn.Module()
    model.bert = torch.nn.Module()
    model.bert.embeddings = torch.nn.Module()
    model.bert.embeddings.word_embeddings = torch.nn.Embedding(rows, width)
    model.bert.embeddings.LayerNorm = torch.nn.LayerNorm(width)
    model.half()
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight.copy_(values(g, rows, width, torch.float16))
        model.bert.embeddings.LayerNorm.weight.copy_(values(g, 1, width, torch.float16).reshape(width))
        model.bert.embeddings.LayerNorm.bias.copy_(values(g, 1, width, torch.float16).reshape(width))
    weights = model.state_dict()
    torch.save(weights, os.path.join(folder, "pytorch_model.bin"))
    write_safetensors(os.path.join(folder, "model.safetensors"), weights)


def make_unigram():
    """spiece.model as T5 ships it: Unigram, pad 0, eos 1, unk 2, no bos, no byte fallback."""
    folder = os.path.join(HERE, "spiece")
    os.makedirs(folder, exist_ok=True)
    sp = train(os.path.join(folder, "spiece.model"), "source.txt", model_type="unigram",
               vocab_size=150, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, control_symbols=["<extra_id_0>"])
    write_pieces(sp, os.path.join(folder, "spiece.pieces.json"))


class Named:
    """An object whose pickle calls `function(argument)` when it is loaded."""

    def __init__(self, function, argument):
        self.function, self.argument = function, argument

    def __reduce__(self):
        return (self.function, (self.argument,))


def hostile(path, function, argument, trace, protocol):
    """A state dict whose pickle runs `function(argument)` on load, written by torch.save with
    pickle protocol `protocol`; checked here to be as hostile as it claims (loading its pickle
    with Python's own pickle, torch's functions stubbed, creates `trace`), then the trace is
    removed."""
    torch.save(collections.OrderedDict([("weight", torch.zeros(2, 2)), ("payload", Named(function, argument))]),
               path, pickle_protocol=protocol)
    with zipfile.ZipFile(path) as archive:
        pickled = archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))
    if os.path.exists(trace):
        os.remove(trace)
    subprocess.run([sys.executable, "-c", "import pickle, sys\n"
                    "class P(pickle.Unpickler):\n"
                    "    def persistent_load(self, pid): return None\n"
                    "    def find_class(self, module, name):\n"
                    "        if module.startswith('torch'): return lambda *a: None\n"
                    "        return super().find_class(module, name)\n"
                    "try: P(sys.stdin.buffer).load()\n"
                    "except Exception: pass\n"], input=pickled, check=True)
    assert os.path.exists(trace), f"{path}: loading it did not run {function.__name__}"
    os.remove(trace)


def make_refusals():
    folder = os.path.join(HERE, "refusals")
    os.makedirs(folder, exist_ok=True)
    # os.system is posix.system, which pickle would name by its own module: named as os.system
    # here, as a pickle written to attack a loader would name it.
    os.system.__module__ = "os"
    hostile(os.path.join(folder, "os_system.bin"), os.system, "touch " + TRACE.format("os-system"),
            TRACE.format("os-system"), protocol=2)
    # Protocol 4 names builtins.eval as such (protocol 2 writes __builtin__.eval), with STACK_GLOBAL.
    hostile(os.path.join(folder, "builtins_eval.bin"), eval,
            f"open({TRACE.format('builtins-eval')!r}, 'w').close()", TRACE.format("builtins-eval"), protocol=4)
    torch.save(collections.OrderedDict([("weight", torch.arange(6.0).reshape(2, 3))]),
               os.path.join(folder, "legacy.bin"), _use_new_zipfile_serialization=False)
    torch.save(collections.OrderedDict([("weight", torch.arange(6.0).reshape(2, 3).t())]),
               os.path.join(folder, "transposed.bin"))
    whole = torch.arange(6.0).reshape(2, 3)
    torch.save(collections.OrderedDict([("weight", whole), ("row", whole[1])]), os.path.join(folder, "view.bin"))
    tied = torch.arange(6.0).reshape(2, 3)
    torch.save(collections.OrderedDict([("embed.weight", tied), ("head.weight", tied.detach())]),
               os.path.join(folder, "tied.bin"))
    # tiktoken's text format, as Llama 3's original/tokenizer.model holds it.
    with open(os.path.join(folder, "tiktoken.model"), "w") as f:
        for rank, token in enumerate([b"!", b"\"", b" the", b"ing", b"\xc3\xa4"]):
            f.write(base64.b64encode(token).decode() + " " + str(rank) + "\n")


def main():
    g = torch.Generator().manual_seed(36)
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)  # the corpora and the trainer's files
        make_source(g)
        make_helpers(g)
        make_unigram()
        make_refusals()
        os.chdir(HERE)
    print("sentencepiece", spm.__version__, "torch", torch.__version__)


if __name__ == "__main__":
    main()
