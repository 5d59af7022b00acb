#!/usr/bin/python3
"""Build the shipped default CLP-Transfer model pair (examples/models/).

    /usr/bin/python3 examples/models/make_tiny_models.py   (about 11 min on 2 idle CPU cores)

Produces two real, tiny, Hugging Face style GPT-2 folders:

  en-large/  English "large" source model: n_embd 128, 4 layers, 4 heads,
             own 5000-token byte-level BPE, n_positions 128.
  de-small/  German "small" helper model: n_embd 64, 2 layers, 2 heads,
             own 5000-token byte-level BPE (trained on German), n_positions 128.

Each folder: config.json, model.safetensors (F32, HF GPT2LMHeadModel names,
lm_head tied), tokenizer.json, vocab.json, merges.txt, tokenizer_config.json,
special_tokens_map.json, generation_config.json, metrics.json, README.md.

Training text (never committed; fetched with `apt-get download pkg=version`
into a cache dir, default $TMPDIR/tinygpt-debs, and unpacked with `dpkg -x`):

  English: debian-reference-en 2.100
             /usr/share/debian-reference/debian-reference.en.txt.gz  (GPL-2+)
           fortunes 1:1.99.1-7.3
             /usr/share/games/fortunes/*  (all cookie files except *.dat and
             ascii-art; BSD licence of fortune-mod per debian/copyright)
  German:  debian-reference-de 2.100
             /usr/share/debian-reference/debian-reference.de.txt.gz  (GPL-2+)
           fortunes-de 0.35-1
             /usr/share/games/fortunes/de/*  (all cookie files except *.dat,
             the *.u8 symlinks and asciiart; GPL-2+)

Text preparation (tinygpt.corpus): the reference manual's plain-text version
is split at blank lines, indentation and ASCII table rules are removed, and
consecutive paragraphs are grouped into ~2000-character documents; every
fortune cookie (separated by '%' lines) is one document.  Document i goes to
validation iff i % 20 == 10, the rest to training; documents are joined with
'<|endoftext|>'.

Everything is seeded (BPE is deterministic; torch.manual_seed, a seeded batch
generator, torch.set_num_threads(2)), so re-running reproduces the folders on
the same torch build and thread count.  The tokenizer, model, safetensors
writer/reader and loader live in tinygpt.py next to this script.
"""

import argparse
import hashlib
import json
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tinygpt  # noqa: E402

SPECS = {
    "en": dict(folder="en-large", name="English 'large' source model", n_embd=128, n_layer=4, n_head=4,
               vocab_size=5000, steps=220, lr=3e-3, seed=1234),
    "de": dict(folder="de-small", name="German 'small' helper model", n_embd=64, n_layer=2, n_head=2,
               vocab_size=5000, steps=300, lr=4e-3, seed=4321),
}
N_POSITIONS = 128
BATCH = 32
WARMUP = 20
WEIGHT_DECAY = 0.1
LANG_NAME = {"en": "English", "de": "German"}
IDLE_SECONDS = {"en": 330, "de": 240}  # measured step times x steps on 2 idle cores
LICENCES = {
    "en": ("GPL-2.0-or-later",
           "The training text is Debian Reference (GPL-2+, (c) Osamu Aoki) and the fortune-mod "
           "cookie files shipped in Debian's `fortunes` package (BSD licence of fortune-mod, see "
           "/usr/share/doc/fortunes/copyright). The weights are distributed under GPL-2.0-or-later, "
           "compatible with both."),
    "de": ("GPL-2.0-or-later",
           "The training text is the German translation of Debian Reference (GPL-2+, (c) Osamu Aoki "
           "and translators) and Debian's `fortunes-de` (GPL-2+, (c) Andreas Tille). The weights are "
           "distributed under GPL-2.0-or-later."),
}


def lr_at(step, total, peak):
    if step < WARMUP:
        return peak * (step + 1) / WARMUP
    p = (step - WARMUP) / max(1, total - WARMUP)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def train(model, train_ids, steps, lr, seed, log_every=20):
    g = torch.Generator().manual_seed(seed)
    data = torch.tensor(train_ids, dtype=torch.long)
    opt = tinygpt.adamw(model, lr, WEIGHT_DECAY)
    model.train()
    losses, t0 = [], time.time()
    for step in range(steps):
        loss = tinygpt.train_step(model, opt, data, BATCH, N_POSITIONS, lr_at(step, steps, lr), g)
        losses.append(float(loss))
        if (step + 1) % log_every == 0 or step == 0:
            print("  step %4d/%d  loss %.4f  lr %.2e  %.0fs" % (step + 1, steps, loss, lr_at(step, steps, lr),
                                                            time.time() - t0), flush=True)
    model.eval()
    return losses, time.time() - t0


def deb_info(cache_dir, language):
    out = []
    for pkg, ver in tinygpt.PACKAGES[language]:
        debs = sorted(f for f in os.listdir(cache_dir) if f.startswith(pkg + "_") and f.endswith(".deb"))
        sha = hashlib.sha256(open(os.path.join(cache_dir, debs[0]), "rb").read()).hexdigest() if debs else "?"
        out.append((pkg, ver, debs[0] if debs else "?", sha))
    return out


def write_readme(folder, lang, spec, m):
    lic, lic_text = LICENCES[lang]
    files = "\n".join("- `%s`" % f for f in tinygpt.corpus_files(lang))
    debs = "\n".join("- `%s` (version %s), sha256 `%s`" % (f, v, s) for _, v, f, s in m["debs"])
    txt = f"""---
license: gpl-2.0
language: {lang}
library_name: transformers
pipeline_tag: text-generation
tags: [gpt2, tiny, clp-transfer, example]
---
# {spec['folder']}: tiny {LANG_NAME[lang]} GPT-2 ({spec['name']})

A deliberately tiny, really trained GPT-2 language model shipped as the default
{'source' if lang == 'en' else 'helper'} model of the clp-transfer examples
(CLP-Transfer, Ostendorff & Rehm 2023: initialise a large target-language model
from a large source-language model plus a small target-language helper model).
It is a toy for tests and demos, not a useful language model.

Built by `examples/models/make_tiny_models.py` (model code in `tinygpt.py`).

## Architecture
Hugging Face `GPT2LMHeadModel` layout (`config.json`, `model.safetensors` F32, `lm_head` tied to
`transformer.wte`): n_embd {spec['n_embd']}, n_layer {spec['n_layer']}, n_head {spec['n_head']},
n_inner 4*n_embd, activation gelu_new, n_positions {N_POSITIONS}, vocab_size {m['vocab_size']},
{m['n_params']:,} parameters.

## Tokenizer
Own byte-level BPE (GPT-2 convention: GPT-2 bytes_to_unicode table, leading space = `Ġ`, GPT-2
pre-tokenizer regex), trained on the training split below with {m['vocab_size'] - 257} greedy merges:
ids 0-255 are the 256 byte symbols, then the merges, then `<|endoftext|>` = {m['vocab_size'] - 1}
(also bos/eos). Files: `tokenizer.json`, `vocab.json` + `merges.txt`.

## Training data
Real {LANG_NAME[lang]} text from Debian 12 packages (fetched with `apt-get download`, unpacked with `dpkg -x`):
{files}

Packages used:
{debs}

Preparation: plain-text manual split into paragraphs (indentation and ASCII table rules removed,
grouped into ~2000-character documents); each fortune cookie is one document; document i is
validation iff i % 20 == 10. Training split: {m['train_chars']:,} characters = {m['train_tokens']:,} tokens;
validation split: {m['valid_chars']:,} characters = {m['valid_tokens']:,} tokens.

## Training
AdamW (betas 0.9/0.95, weight decay {WEIGHT_DECAY} on matrices), peak lr {spec['lr']}, {WARMUP} warm-up
steps then cosine decay to 10%, gradient clipping 1.0, batch {BATCH} x {N_POSITIONS} tokens, {spec['steps']}
steps ({spec['steps'] * BATCH * N_POSITIONS:,} tokens, {spec['steps'] * BATCH * N_POSITIONS / m['train_tokens']:.2f}
epochs), seed {spec['seed']}, no dropout, CPU (torch {m['torch']}, {m['threads']} threads), {m['train_seconds']:.0f} s wall time
(measured on a 2-core machine shared with concurrent compile jobs; about {IDLE_SECONDS[lang]} s on idle cores).

## Results
| split | mean loss (nats/token) | perplexity |
|---|---|---|
| train (last 20 steps, running) | {m['train_loss_last20']:.4f} | {math.exp(m['train_loss_last20']):.2f} |
| validation | {m['valid_loss']:.4f} | {m['valid_ppl']:.2f} |

Validation is measured on non-overlapping {N_POSITIONS}-token windows of the validation split
(`tinygpt.perplexity`); the value above was re-checked after reloading the saved folder.

## Licence
{lic}. {lic_text}
"""
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write(txt)


def build(lang, out_dir, cache_dir, steps=None):
    spec = dict(SPECS[lang])
    if steps:
        spec["steps"] = steps
    folder = os.path.join(out_dir, spec["folder"])
    print("== %s -> %s" % (lang, folder), flush=True)
    train_text, valid_text = tinygpt.corpus(lang, cache_dir)
    t0 = time.time()
    vocab, merges = tinygpt.train_bpe(train_text, spec["vocab_size"])
    tok = tinygpt.Tokenizer.from_vocab(vocab, merges)
    train_ids, valid_ids = tok.encode(train_text), tok.encode(valid_text)
    print("  bpe %d tokens in %.1fs; train %d tokens, valid %d tokens" % (len(vocab), time.time() - t0,
                                                                        len(train_ids), len(valid_ids)))
    config = tinygpt.make_config(len(vocab), spec["n_embd"], spec["n_layer"], spec["n_head"], N_POSITIONS,
                                 tok.eos_id)
    torch.manual_seed(spec["seed"])
    model = tinygpt.GPT(config)
    losses, secs = train(model, train_ids, spec["steps"], spec["lr"], spec["seed"])
    valid_loss = tinygpt.mean_nll(model, valid_ids)
    m = dict(vocab_size=len(vocab), n_params=sum(p.numel() for p in model.parameters()),
             train_chars=len(train_text), valid_chars=len(valid_text), train_tokens=len(train_ids),
             valid_tokens=len(valid_ids), steps=spec["steps"], batch=BATCH, lr=spec["lr"], seed=spec["seed"],
             train_seconds=secs, train_loss_last20=sum(losses[-20:]) / len(losses[-20:]), valid_loss=valid_loss,
             valid_ppl=math.exp(valid_loss), torch=torch.__version__, threads=torch.get_num_threads())
    print("  trained in %.0fs: train loss(last 20) %.4f, valid loss %.4f, valid ppl %.2f"
          % (secs, m["train_loss_last20"], valid_loss, m["valid_ppl"]), flush=True)
    tinygpt.save(model, config, folder)
    tok.save(folder, model_max_length=N_POSITIONS)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "bos_token_id": tok.eos_id, "eos_token_id": tok.eos_id}, f, indent=2)
    m["debs"] = deb_info(cache_dir, lang)
    with open(os.path.join(folder, "metrics.json"), "w") as f:
        json.dump({k: v for k, v in m.items() if k != "debs"}, f, indent=2)
    write_readme(folder, lang, spec, m)
    return folder, valid_text, m


def verify(folder, valid_text, m):
    model = tinygpt.load(folder)
    tj = tinygpt.Tokenizer(folder)
    # tokenizer.json and vocab.json+merges.txt must agree
    tmp = os.path.join(folder, "tokenizer.json")
    os.rename(tmp, tmp + ".off")
    try:
        tv = tinygpt.Tokenizer(folder)
    finally:
        os.rename(tmp + ".off", tmp)
    ids = tj.encode(valid_text)
    assert ids == tv.encode(valid_text), "tokenizer.json vs vocab.json/merges.txt mismatch"
    assert tj.decode(ids) == valid_text, "round trip failed"
    sample = "Grüße aus Köln! naïve café 日本語 emoji \U0001F600 tabs\tand  spaces\n<|endoftext|>x"
    assert tj.decode(tj.encode(sample)) == sample, "round trip failed on sample"
    loss = tinygpt.mean_nll(model, ids)
    print("  verify %s: reloaded valid loss %.6f (trained %.6f), ppl %.4f" % (folder, loss, m["valid_loss"],
                                                                              math.exp(loss)))
    assert loss == m["valid_loss"], "reloaded perplexity differs"
    return tj


def folder_size(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--cache", default=os.environ.get("TINYGPT_CACHE", "/tmp/tinygpt-debs"))
    ap.add_argument("--steps", type=int, default=None, help="override the step count (smoke tests)")
    ap.add_argument("--readme-only", action="store_true",
                    help="only re-render the model cards from the folders' metrics.json")
    args = ap.parse_args()
    if args.readme_only:
        for lang in ("en", "de"):
            folder = os.path.join(args.out, SPECS[lang]["folder"])
            with open(os.path.join(folder, "metrics.json")) as f:
                m = json.load(f)
            tinygpt.fetch_packages(lang, args.cache)
            m["debs"] = deb_info(args.cache, lang)
            write_readme(folder, lang, dict(SPECS[lang], steps=m["steps"]), m)
        return
    torch.set_num_threads(2)
    t0 = time.time()
    toks = {}
    for lang in ("en", "de"):
        folder, valid_text, m = build(lang, args.out, args.cache, args.steps)
        toks[lang] = verify(folder, valid_text, m)
    en, de = set(toks["en"].vocab), set(toks["de"].vocab)
    shared = en & de
    print("shared vocabulary: %d tokens = %.1f%% of en-large's, %.1f%% of de-small's"
          % (len(shared), 100 * len(shared) / len(en), 100 * len(shared) / len(de)))
    for lang in ("en", "de"):
        f = os.path.join(args.out, SPECS[lang]["folder"])
        print("%s: %.2f MB" % (f, folder_size(f) / 1e6))
    print("total %.0fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
