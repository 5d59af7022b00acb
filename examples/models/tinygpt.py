"""tinygpt: a minimal GPT-2 + byte-level BPE toolkit in plain torch/numpy.

Used to build (and reuse) the tiny Hugging Face style GPT-2 model folders
shipped in examples/models/ (see make_tiny_models.py).  Nothing here needs
`transformers`, `tokenizers` or `safetensors`: the formats are written and
read by hand.

Public API
----------
    corpus(language, cache_dir=None) -> (train_text, valid_text)
        language "en" or "de": real text extracted from pinned Debian packages
        (apt-get download + dpkg -x).  Documents are joined with
        "<|endoftext|>".
    train_bpe(text, vocab_size) -> (vocab, merges)
        GPT-2 style byte-level BPE trainer (deterministic).
    Tokenizer(folder) / Tokenizer.from_vocab(vocab, merges)
        .encode(text) -> list[int], .decode(ids) -> str, .save(folder),
        .vocab (str -> id), .merges (list of (a, b)), .eos_id
    GPT(config)                     torch module, state dict names == HF GPT2LMHeadModel
    make_config(vocab_size, n_embd, n_layer, n_head, n_positions, eos_id) -> dict
    load(folder) -> GPT             config.json + model.safetensors (or sharded index)
    save(model, config, folder, max_shard_bytes=None)
    perplexity(model, token_ids, block=None, batch_size=32) -> float
    mean_nll(model, token_ids, block=None, batch_size=32) -> float
    read_safetensors(path) -> dict[str, torch.Tensor]
    write_safetensors(path, tensors, metadata=None)
"""

import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import unicodedata
from collections import Counter
import heapq

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

EOS = "<|endoftext|>"

# ---------------------------------------------------------------------------
# Byte-level convention (identical to GPT-2 / HF ByteLevel)
# ---------------------------------------------------------------------------


def bytes_to_unicode():
    """GPT-2's table: byte value -> printable unicode char (space -> 'Ġ')."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}
# base alphabet in GPT-2's id order (ids 0..255 of the vocabulary)
BASE_ALPHABET = list(BYTE_ENCODER.values())

_PAT = None


def _char_class(pred):
    """Regex character-class body for all code points c with pred(category(c))."""
    out, start, prev = [], None, None
    for cp in range(0x110000):
        if pred(unicodedata.category(chr(cp))):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            out.append((start, prev))
            start = None
    if start is not None:
        out.append((start, prev))

    def esc(cp):
        return "\\U%08x" % cp

    return "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in out)


def pretokenize_pattern():
    """GPT-2's pre-tokenizer regex
        's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    with \\p{L} / \\p{N} spelled out as explicit classes so the std `re` module works."""
    global _PAT
    if _PAT is None:
        L = _char_class(lambda c: c[0] == "L")
        N = _char_class(lambda c: c[0] == "N")
        _PAT = re.compile(
            r"'s|'t|'re|'ve|'m|'ll|'d| ?[%s]+| ?[%s]+| ?[^\s%s%s]+|\s+(?!\S)|\s+" % (L, N, L, N))
    return _PAT


def pretokenize(text):
    """Split text into GPT-2 'words' and map each to its byte-level string."""
    pat = pretokenize_pattern()
    return ["".join(BYTE_ENCODER[b] for b in w.encode("utf-8")) for w in pat.findall(text)]


def _split_special(text, specials):
    """Yield (is_special, piece) splitting text on the special token strings."""
    if not specials:
        yield False, text
        return
    rx = re.compile("(" + "|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)) + ")")
    for i, piece in enumerate(rx.split(text)):
        if i % 2 == 1:
            yield True, piece
        elif piece:
            yield False, piece


# ---------------------------------------------------------------------------
# BPE trainer
# ---------------------------------------------------------------------------


def train_bpe(text, vocab_size, specials=(EOS,), min_frequency=2, verbose=False):
    """Byte-level BPE, GPT-2 style: greedy merges of the most frequent adjacent
    symbol pair (ties broken by the lexicographically smallest pair), counted
    over pre-tokenized words.  Returns (vocab: str->id, merges: [(a, b), ...]);
    ids 0..255 are the 256 byte symbols, then one id per merge, then specials."""
    word_freq = Counter()
    for is_special, piece in _split_special(text, list(specials)):
        if not is_special:
            word_freq.update(pretokenize(piece))
    words = [list(w) for w in sorted(word_freq)]
    freqs = [word_freq[w] for w in sorted(word_freq)]
    pair_counts = Counter()
    pair_where = {}
    for wi, (w, f) in enumerate(zip(words, freqs)):
        for p in zip(w, w[1:]):
            pair_counts[p] += f
            pair_where.setdefault(p, set()).add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    n_merges = vocab_size - 256 - len(specials)
    merges = []
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negc:
            continue  # stale entry
        if -negc < min_frequency:
            break
        a, b = pair
        ab = a + b
        merges.append(pair)
        touched = set()
        for wi in list(pair_where.get(pair, ())):
            w, f = words[wi], freqs[wi]
            for p in zip(w, w[1:]):
                pair_counts[p] -= f
                touched.add(p)
                s = pair_where.get(p)
                if s is not None:
                    s.discard(wi)
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(ab)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            words[wi] = nw
            for p in zip(nw, nw[1:]):
                pair_counts[p] += f
                touched.add(p)
                pair_where.setdefault(p, set()).add(wi)
        for p in touched:
            c = pair_counts.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_counts.pop(p, None)
                pair_where.pop(p, None)
        if verbose and len(merges) % 1000 == 0:
            print("  bpe merges: %d" % len(merges), flush=True)
    vocab = {s: i for i, s in enumerate(BASE_ALPHABET)}
    for a, b in merges:
        if a + b not in vocab:  # always true for byte-level BPE, kept for safety
            vocab[a + b] = len(vocab)
    for s in specials:
        vocab[s] = len(vocab)
    return vocab, merges


# ---------------------------------------------------------------------------
# Tokenizer (encode/decode + HF file formats)
# ---------------------------------------------------------------------------


class Tokenizer:
    """Byte-level BPE tokenizer read from a HF folder (tokenizer.json, or
    vocab.json + merges.txt)."""

    def __init__(self, folder=None, vocab=None, merges=None, specials=None):
        if folder is not None:
            tj = os.path.join(folder, "tokenizer.json")
            if os.path.exists(tj):
                with open(tj, encoding="utf-8") as f:
                    d = json.load(f)
                vocab = d["model"]["vocab"]
                merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
                          for m in d["model"]["merges"]]
                specials = [t["content"] for t in d.get("added_tokens", []) if t.get("special", True)]
                for t in d.get("added_tokens", []):
                    vocab.setdefault(t["content"], t["id"])
            else:
                with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
                    vocab = json.load(f)
                merges = []
                with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
                    for line in f:
                        line = line.rstrip("\n")
                        if not line or line.startswith("#version"):
                            continue
                        merges.append(tuple(line.split(" ", 1)))
                specials = [s for s in vocab if s.startswith("<|") and s.endswith("|>")]
        self.vocab = dict(vocab)
        self.merges = [tuple(m) for m in merges]
        self.specials = list(specials if specials is not None else [s for s in self.vocab if s == EOS])
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.id_to_token = {i: s for s, i in self.vocab.items()}
        self.eos_id = self.vocab.get(EOS)
        self._cache = {}

    @classmethod
    def from_vocab(cls, vocab, merges, specials=(EOS,)):
        return cls(vocab=vocab, merges=merges, specials=list(specials))

    def __len__(self):
        return len(self.vocab)

    def bpe(self, word):
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = parts[best], parts[best + 1]
            nw, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == a and parts[i + 1] == b:
                    nw.append(a + b)
                    i += 2
                else:
                    nw.append(parts[i])
                    i += 1
            parts = nw
        self._cache[word] = parts
        return parts

    def tokenize(self, text):
        out = []
        for is_special, piece in _split_special(text, self.specials):
            if is_special:
                out.append(piece)
            else:
                for w in pretokenize(piece):
                    out.extend(self.bpe(w))
        return out

    def encode(self, text):
        return [self.vocab[t] for t in self.tokenize(text)]

    def decode(self, ids):
        toks = [self.id_to_token[int(i)] for i in ids]
        out, buf = [], bytearray()
        for t in toks:
            if t in self.specials:
                out.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                out.append(t)
            else:
                buf.extend(BYTE_DECODER[c] for c in t)
        out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)

    def save(self, folder, model_max_length=128):
        os.makedirs(folder, exist_ok=True)
        vocab = dict(sorted(self.vocab.items(), key=lambda kv: kv[1]))
        merges = ["%s %s" % m for m in self.merges]
        added = [{"id": self.vocab[s], "content": s, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": True, "special": True} for s in self.specials]
        bl = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": dict(type="ByteLevel", **bl),
            "post_processor": dict(type="ByteLevel", add_prefix_space=True, trim_offsets=False, use_regex=True),
            "decoder": dict(type="ByteLevel", add_prefix_space=True, trim_offsets=True, use_regex=True),
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False,
                      "vocab": vocab, "merges": merges},
        }
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False, separators=(",", ":"))
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False, separators=(",", ":"))
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            for m in merges:
                f.write(m + "\n")
        eos = EOS
        tc = {
            "add_bos_token": False,
            "add_prefix_space": False,
            "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")} for a in added},
            "bos_token": eos, "eos_token": eos, "unk_token": eos,
            "clean_up_tokenization_spaces": False,
            "errors": "replace",
            "model_max_length": model_max_length,
            "pad_token": None,
            "tokenizer_class": "GPT2Tokenizer",
        }
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(tc, f, indent=2)
        with open(os.path.join(folder, "special_tokens_map.json"), "w", encoding="utf-8") as f:
            json.dump({"bos_token": eos, "eos_token": eos, "unk_token": eos}, f, indent=2)


# ---------------------------------------------------------------------------
# safetensors (by hand)
# ---------------------------------------------------------------------------

_DT = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2),
       "F64": (np.float64, 8), "I64": (np.int64, 8), "I32": (np.int32, 4)}


def write_safetensors(path, tensors, metadata=None):
    """tensors: ordered dict name -> torch.Tensor/np.ndarray (written as F32)."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        a = t.detach().cpu().to(torch.float32).contiguous().numpy() if torch.is_tensor(t) else np.asarray(t, np.float32)
        b = a.astype("<f4", copy=False).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = dict(metadata or {"format": "pt"})
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dt, _ = _DT[info["dtype"]]
        a = np.frombuffer(data[base + b:base + e], dtype=np.dtype(dt).newbyteorder("<"))
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(a.astype(np.float32).reshape(info["shape"]).copy())
    return out


# ---------------------------------------------------------------------------
# GPT-2 model (state dict names == HF GPT2LMHeadModel, lm_head tied)
# ---------------------------------------------------------------------------


def make_config(vocab_size, n_embd, n_layer, n_head, n_positions=128, eos_id=None):
    eos_id = vocab_size - 1 if eos_id is None else eos_id
    return {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.0,
        "bos_token_id": eos_id,
        "embd_pdrop": 0.0,
        "eos_token_id": eos_id,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": n_positions,
        "n_embd": n_embd,
        "n_head": n_head,
        "n_inner": None,
        "n_layer": n_layer,
        "n_positions": n_positions,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.0,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": vocab_size,
    }


class Conv1D(nn.Module):
    """HF GPT-2 Conv1D: weight stored [in, out]; y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(d, 3 * d)
        self.c_proj = Conv1D(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.c_fc = Conv1D(d, inner)
        self.c_proj = Conv1D(inner, d)

    def forward(self, x):
        h = self.c_fc(x)
        # gelu_new == 0.5*h*(1+tanh(sqrt(2/pi)*(h+0.044715*h^3))), the tanh approximation
        return self.c_proj(F.gelu(h, approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, n_head, inner, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, n_head)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(d, inner)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = dict(config)
        d, L = config["n_embd"], config["n_layer"]
        inner = config.get("n_inner") or 4 * d
        eps = config.get("layer_norm_epsilon", 1e-5)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config["vocab_size"], d),
            wpe=nn.Embedding(config["n_positions"], d),
            h=nn.ModuleList([Block(d, config["n_head"], inner, eps) for _ in range(L)]),
            ln_f=nn.LayerNorm(d, eps=eps),
        ))
        self.reset_parameters()

    def reset_parameters(self):
        std = self.config.get("initializer_range", 0.02)
        for name, p in self.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                nn.init.ones_(p)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            elif name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.config["n_layer"]))
            else:
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        t = self.transformer
        x = t.wte(idx) + t.wpe(pos)[None]
        for blk in t.h:
            x = blk(x)
        x = t.ln_f(x)
        logits = x @ t.wte.weight.t()
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def save(model, config, folder, max_shard_bytes=None):
    """Write config.json and model.safetensors (or sharded + index) into folder."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    sd = {k: v for k, v in model.state_dict().items()}
    if not max_shard_bytes:
        write_safetensors(os.path.join(folder, "model.safetensors"), sd)
        return
    shards, cur, size = [], {}, 0
    for k, v in sd.items():
        nb = v.numel() * 4
        if cur and size + nb > max_shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v
        size += nb
    if cur:
        shards.append(cur)
    weight_map, total = {}, 0
    for i, sh in enumerate(shards):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        write_safetensors(os.path.join(folder, fn), sh)
        for k, v in sh.items():
            weight_map[k] = fn
            total += v.numel() * 4
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def load_state_dict(folder):
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        sd = read_safetensors(single)
    else:
        with open(os.path.join(folder, "model.safetensors.index.json")) as f:
            idx = json.load(f)
        sd = {}
        for fn in sorted(set(idx["weight_map"].values())):
            sd.update(read_safetensors(os.path.join(folder, fn)))
    out = {}
    for k, v in sd.items():
        if k.startswith("lm_head."):
            continue  # tied to transformer.wte.weight
        if not k.startswith("transformer."):
            k = "transformer." + k
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue  # HF causal-mask buffers in old checkpoints
        out[k] = v
    return out


def load(folder):
    """Rebuild a GPT from a HF GPT-2 folder (config.json + safetensors)."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    model = GPT(config)
    model.load_state_dict(load_state_dict(folder), strict=True)
    model.eval()
    return model


@torch.no_grad()
def mean_nll(model, token_ids, block=None, batch_size=32):
    """Mean next-token NLL (nats) over token_ids, cut into non-overlapping
    windows of `block` (default n_positions) tokens; each window's first token
    is only context.  The tail shorter than 2 tokens is dropped."""
    block = block or model.config["n_positions"]
    ids = torch.as_tensor(token_ids, dtype=torch.long, device=next(model.parameters()).device)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    windows = [ids[i:i + block] for i in range(0, len(ids), block)]
    windows = [w for w in windows if len(w) >= 2]
    full = [w for w in windows if len(w) == block]
    rest = [w for w in windows if len(w) != block]
    for i in range(0, len(full), batch_size):
        x = torch.stack(full[i:i + batch_size])
        logits = model(x[:, :-1])
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum")
        total += float(nll.double())
        count += x[:, 1:].numel()
    for w in rest:
        logits = model(w[None, :-1])
        total += float(F.cross_entropy(logits[0], w[1:], reduction="sum").double())
        count += len(w) - 1
    model.train(was_training)
    return total / max(count, 1)


def perplexity(model, token_ids, block=None, batch_size=32):
    return math.exp(mean_nll(model, token_ids, block, batch_size))


# ---------------------------------------------------------------------------
# Training (the shipped models and the Figure 2 runs share these)
# ---------------------------------------------------------------------------

def adamw(model, lr, weight_decay):
    """AdamW with weight decay on the matrices only (biases, LayerNorm and other
    1-D parameters get none), betas (0.9, 0.95)."""
    decay = [p for _, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for _, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


def train_step(model, opt, data, batch, block, lr, generator):
    """One update at learning rate `lr`: `batch` windows of block + 1 tokens from the
    1-D LongTensor `data`, their starts drawn with `generator`; gradients clipped to
    norm 1.  Returns the batch loss (a 0-d tensor)."""
    for group in opt.param_groups:
        group["lr"] = lr
    starts = torch.randint(0, len(data) - block - 1, (batch,), generator=generator)  # CPU generator
    x = torch.stack([data[s:s + block + 1] for s in starts.tolist()])
    _, loss = model(x[:, :-1], x[:, 1:])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


# ---------------------------------------------------------------------------
# Corpus: real text from pinned Debian packages
# ---------------------------------------------------------------------------

# (package, version) pairs; fetched with `apt-get download pkg=version`.
PACKAGES = {
    "en": [("debian-reference-en", "2.100"), ("fortunes", "1:1.99.1-7.3")],
    "de": [("debian-reference-de", "2.100"), ("fortunes-de", "0.35-1")],
}
VALID_EVERY = 20  # document i goes to validation iff i % VALID_EVERY == VALID_EVERY // 2


def fetch_packages(language, cache_dir=None):
    """apt-get download the pinned .debs and dpkg -x them; returns {pkg: root}."""
    cache_dir = cache_dir or os.environ.get("TINYGPT_CACHE") or os.path.join(
        tempfile.gettempdir(), "tinygpt-debs")
    os.makedirs(cache_dir, exist_ok=True)
    roots = {}
    for pkg, ver in PACKAGES[language]:
        root = os.path.join(cache_dir, pkg)
        if not os.path.isdir(root):
            debs = [f for f in os.listdir(cache_dir) if f.startswith(pkg + "_") and f.endswith(".deb")]
            if not debs:
                r = subprocess.run(["apt-get", "download", "%s=%s" % (pkg, ver)], cwd=cache_dir,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    raise RuntimeError("apt-get download %s=%s failed:\n%s" % (pkg, ver, r.stderr))
                debs = [f for f in os.listdir(cache_dir) if f.startswith(pkg + "_") and f.endswith(".deb")]
            subprocess.run(["dpkg", "-x", os.path.join(cache_dir, sorted(debs)[0]), root + ".tmp"], check=True)
            os.rename(root + ".tmp", root)
        roots[pkg] = root
    return roots


_TABLE_RULE = re.compile(r"^[\s+\-|=]*$")


def _clean_lines(text):
    """Strip indentation/trailing blanks, drop ASCII table rules, squeeze spaces."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if s and _TABLE_RULE.match(s):
            continue
        out.append(re.sub(r"[ \t]{2,}", " ", s))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _reference_docs(root, lang):
    import gzip
    p = os.path.join(root, "usr/share/debian-reference/debian-reference.%s.txt.gz" % lang)
    with gzip.open(p, "rt", encoding="utf-8") as f:
        txt = f.read()
    paras = [q for q in (_clean_lines(x) for x in re.split(r"\n\s*\n", txt)) if q]
    docs, cur = [], []
    for q in paras:  # group consecutive paragraphs into ~2000-char documents
        cur.append(q)
        if sum(len(c) for c in cur) >= 2000:
            docs.append("\n\n".join(cur))
            cur = []
    if cur:
        docs.append("\n\n".join(cur))
    return docs


def _fortune_docs(folder, skip):
    docs = []
    for fn in sorted(os.listdir(folder)):
        p = os.path.join(folder, fn)
        if (fn.endswith(".dat") or fn.endswith(".u8") or os.path.islink(p) or not os.path.isfile(p)
                or fn in skip):
            continue
        with open(p, "rb") as f:
            txt = f.read().decode("utf-8", errors="replace")
        for entry in re.split(r"^%\s*$", txt, flags=re.M):
            e = _clean_lines(entry)
            if e:
                docs.append(e)
    return docs


def corpus_files(language):
    """Human-readable list of the files used (for model cards)."""
    if language == "en":
        return ["debian-reference-en 2.100: /usr/share/debian-reference/debian-reference.en.txt.gz",
                "fortunes 1:1.99.1-7.3: /usr/share/games/fortunes/* (all cookie files except *.dat and ascii-art)"]
    return ["debian-reference-de 2.100: /usr/share/debian-reference/debian-reference.de.txt.gz",
            "fortunes-de 0.35-1: /usr/share/games/fortunes/de/* (all cookie files except *.dat, *.u8 links and asciiart)"]


def documents(language, cache_dir=None):
    roots = fetch_packages(language, cache_dir)
    if language == "en":
        docs = _reference_docs(roots["debian-reference-en"], "en")
        docs += _fortune_docs(os.path.join(roots["fortunes"], "usr/share/games/fortunes"), {"ascii-art"})
    elif language == "de":
        docs = _reference_docs(roots["debian-reference-de"], "de")
        docs += _fortune_docs(os.path.join(roots["fortunes-de"], "usr/share/games/fortunes/de"), {"asciiart"})
    else:
        raise ValueError("language must be 'en' or 'de'")
    return docs


def corpus(language, cache_dir=None):
    """(train_text, valid_text) for 'en' or 'de'; every VALID_EVERY-th document
    goes to validation; documents are joined with '<|endoftext|>'."""
    docs = documents(language, cache_dir)
    train = [d for i, d in enumerate(docs) if i % VALID_EVERY != VALID_EVERY // 2]
    valid = [d for i, d in enumerate(docs) if i % VALID_EVERY == VALID_EVERY // 2]
    return EOS.join(train) + EOS, EOS.join(valid) + EOS
