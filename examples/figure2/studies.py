#!/usr/bin/python3
"""Two studies on the Figure-2 miniature, trained with figure2.py's protocol (its steps, batch,
lr, warm-up and per-seed data order; its train function and tinygpt's model and tokenizer).

--study extend: en-large keeps its English tokenizer and gains de-small's German tokens, then
trains on German. Initialisations:

    extend-default  clp-transfer extend --source en-large --helper de-small
    extend-mean     clp-transfer extend --source en-large --no-helper --tokens FILE, FILE listing
                    exactly the tokens extend-default added (one a line, their bytes as they are):
                    each new row the mean of the source rows of its pieces
    extend-random   extend-default's model with the new rows drawn from a normal with the source
                    rows' per-column mean and standard deviation (seeded)
    transfer        clp-transfer transfer (the full replacement by de-small's vocabulary)

Measured: bits per byte on a fixed slice of German and of English validation text (the same
bytes of text for every model; each model's own tokenizer encodes them; the summed next-token
negative log-likelihood in bits over the bytes of the tokens predicted), at step 0 and every
--eval-every steps; and tokens per word of the whole German validation text per initialisation.
Each model trains on the German training text as its own tokenizer encodes it, with the same
batch-start generator per seed.

--study undertrained: clp-transfer transfer --undertrained keep | synthesise (the default
weighting) on the shipped pair and on a planted source (make_planted.py, seed 0). Where the two
written model.safetensors are identical the case is recorded as such and not trained; otherwise
both train and German validation perplexity is measured as figure2.py measures it. The rule of
docs/undertrained.md ("Choosing the program's default") is then applied: synthesise loses when
the paired difference of final perplexity, synthesise - keep, has a mean above 0 and a 95% t
interval wholly above 0, in either case; and `clp-transfer evaluate` on the planted pair must
score the default weighting better with the screen than without.

Results go next to this script (or to --out): STUDY_results.csv (one row per evaluation, keyed by
init and seed; a finished (init, seed) is not run again, a cut one is rerun), STUDY_state.json (the
settings and what the report needs besides the curves) and STUDY_results.md. Use Debian's
/usr/bin/python3 (torch, numpy).
"""

import argparse
import csv
import filecmp
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import figure2  # noqa: E402

tinygpt = figure2.tinygpt
SOURCE, HELPER = figure2.SOURCE, figure2.HELPER
N_POSITIONS = figure2.N_POSITIONS
STUDIES = {
    "extend": dict(inits=["extend-default", "extend-mean", "extend-random", "transfer"],
                   measures=["bpb_de", "bpb_en"]),
    "undertrained": dict(inits=["shipped-keep", "shipped-synthesise", "planted-keep", "planted-synthesise"],
                         measures=["valid_ppl"]),
}
REFERENCE = {"extend": "extend-default"}  # the extend study's differences are taken against it
RANDOM_ROWS_SEED = 3000  # extend-random's draws: torch generator seeded 3000 + seed
PLANTED_SEED = 0
RULE_SEEDS = list(range(10))  # the seeds docs/undertrained.md's rule names


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# bits per byte
# ---------------------------------------------------------------------------

def byte_slice(text, n_bytes):
    """The longest prefix of `text` whose UTF-8 encoding has at most n_bytes bytes (whole characters)."""
    return text.encode("utf-8")[:n_bytes].decode("utf-8", errors="ignore")


def token_byte_lengths(tok):
    """Bytes of text each id stands for, indexed by id: a byte-level token its bytes, a special
    token the UTF-8 of its text (it stands for that text in the corpus)."""
    lengths = [0] * (max(tok.vocab.values()) + 1)
    for token, i in tok.vocab.items():
        lengths[i] = len(token.encode("utf-8")) if token in tok.specials else len(token)
    return lengths


def predicted_tokens(ids, lengths, block=N_POSITIONS):
    """(count, bytes) of the tokens tinygpt.mean_nll predicts in `ids`: non-overlapping windows of
    `block` tokens, each window's first token context only, a last window of one token dropped."""
    count = n_bytes = 0
    for start in range(0, len(ids), block):
        window = ids[start:start + block]
        if len(window) < 2:
            continue
        count += len(window) - 1
        n_bytes += sum(lengths[i] for i in window[1:])
    return count, n_bytes


def bits_per_byte(mean_nll_nats, count, n_bytes):
    """Summed negative log-likelihood in bits (count tokens at mean_nll_nats each) per byte."""
    return mean_nll_nats * count / (math.log(2) * n_bytes)


def evaluation_slice(tok, text):
    """A validation text as one model sees it: its ids and the count and bytes of those predicted."""
    ids = tok.encode(text)
    count, n_bytes = predicted_tokens(ids, token_byte_lengths(tok))
    return dict(ids=ids, count=count, bytes=n_bytes)


def slice_bits_per_byte(model, piece):
    return bits_per_byte(tinygpt.mean_nll(model, piece["ids"]), piece["count"], piece["bytes"])


def tokens_per_word(tok, text):
    """Tokens per whitespace-separated word, document separators read as blanks."""
    plain = text.replace(tinygpt.EOS, "\n")
    return len(tok.encode(plain)) / len(plain.split())


# ---------------------------------------------------------------------------
# the program and the helper scripts
# ---------------------------------------------------------------------------

def run_program(cmd, capture=False):
    log("  $ " + " ".join(cmd))
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE if capture else None, text=True)
    return done.stdout


def read_json(path):
    with open(path) as f:
        return json.load(f)


def transfer_command(clp, source, out, report, undertrained=None):
    """The default transfer (the default weighting) of `source` to de-small's vocabulary."""
    cmd = [clp, "transfer", "--source", source, "--helper", HELPER, "--output", out, "--report", report,
           "--force", "--quiet"]
    return cmd + (["--undertrained", undertrained] if undertrained else [])


def extend_command(clp, out, report, tokens_file=None):
    """en-large extended by de-small's tokens it lacks; with tokens_file, by those tokens and no helper."""
    cmd = [clp, "extend", "--source", SOURCE]
    cmd += ["--helper", HELPER] if tokens_file is None else ["--no-helper", "--tokens", tokens_file]
    return cmd + ["--output", out, "--report", report, "--force", "--quiet"]


def evaluate_command(clp, source, undertrained):
    """evaluate's score of the default weighting (least-squares) alone, as JSON."""
    return [clp, "evaluate", "--source", source, "--helper", HELPER, "--weightings", "least-squares",
            "--undertrained", undertrained, "--json", "--quiet"]


def make_planted(script, source, out, seed):
    """A planted copy of `source` in `out` (make_planted.py); returns the planted ids it prints."""
    if os.path.exists(out):
        shutil.rmtree(out)
    printed = run_program([sys.executable, script, "--source", source, "--helper", HELPER, "--seed", str(seed),
                           out], capture=True)
    return json.loads(printed.strip().splitlines()[-1])


def new_tokens(folder, source=SOURCE):
    """(id, token) of each token of folder's tokenizer that source's lacks, by id."""
    old = set(tinygpt.Tokenizer(source).vocab)
    return sorted((i, t) for t, i in tinygpt.Tokenizer(folder).vocab.items() if t not in old)


def added_tokens(folder, report):
    """(id, token) of the tokens an extend run added: the ids its --report lists (its "tokens"),
    each token as its written tokenizer spells it (the report's text may not hold every byte)."""
    written = new_tokens(folder)
    listed = sorted(t["id"] for t in report.get("tokens", []))
    if listed != [i for i, _ in written]:
        raise RuntimeError("%s: the report lists %d new ids, the tokenizer has %d new tokens (%d ids differ)" % (
            folder, len(listed), len(written), len(set(listed) ^ {i for i, _ in written})))
    return written


def token_text_bytes(token):
    return bytes(tinygpt.BYTE_DECODER[c] for c in token)


def write_token_list(path, tokens):
    """A --tokens file: each byte-level token's bytes on a line of its own, as they are."""
    lines = [token_text_bytes(t) for t in tokens]
    bad = [t for t, b in zip(tokens, lines) if b"\n" in b or not b]
    if bad:
        raise ValueError("%s: tokens %r cannot stand one a line" % (path, bad[:5]))
    with open(path, "wb") as f:
        f.write(b"".join(b + b"\n" for b in lines))


def randomise_rows(model, new_ids, seed):
    """New rows of the tied embedding drawn from N(mean, std^2) per column of the other rows."""
    weight = model.transformer.wte.weight
    keep = torch.ones(weight.shape[0], dtype=torch.bool)
    keep[new_ids] = False
    old = weight.detach()[keep]
    g = torch.Generator().manual_seed(RANDOM_ROWS_SEED + seed)
    draws = torch.randn(len(new_ids), weight.shape[1], generator=g, dtype=weight.dtype)
    with torch.no_grad():
        weight[new_ids] = old.mean(0) + old.std(0) * draws
    return model


def report_scalars(report):
    """The top-level numbers, strings and booleans of a --report JSON, for the results' record."""
    return {k: v for k, v in (report or {}).items()
            if isinstance(v, (int, float, str, bool)) and k not in ("seconds", "source", "helper", "output")}


def flagged_count(report):
    """The count of source rows the screen flagged, from a transfer's --report, or None."""
    screen = (report or {}).get("undertrained")
    return screen.get("flagged") if isinstance(screen, dict) else None


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------
# the initialisations of each study
# ---------------------------------------------------------------------------

class Context:
    """One run's settings, folders, texts and caches. The program's outputs do not depend on the
    seed (only extend-random's draws do), so each is written once per run into the workdir."""

    def __init__(self, args, state):
        self.args, self.state = args, state
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="clp-studies-")
        os.makedirs(self.workdir, exist_ok=True)
        self.made, self.encoded, self.texts = {}, {}, {}

    def path(self, name):
        return os.path.join(self.workdir, name)

    def text(self, language, part):
        """tinygpt.corpus(language)'s "train" or "valid" text."""
        if language not in self.texts:
            self.texts[language] = dict(zip(("train", "valid"), tinygpt.corpus(language)))
        return self.texts[language][part]

    def once(self, key, make):
        if key not in self.made:
            self.made[key] = make()
        return self.made[key]


def extend_folder(ctx, init):
    """(folder, report) of an extend-study initialisation's program output."""
    def make():
        out, rep = ctx.path(init), ctx.path(init + ".report.json")
        if init == "transfer":
            run_program(transfer_command(ctx.args.clp, SOURCE, out, rep))
        elif init == "extend-default":
            run_program(extend_command(ctx.args.clp, out, rep))
        else:  # extend-mean: the tokens extend-default added, rows from the source alone
            default, default_report = extend_folder(ctx, "extend-default")
            added = [t for _, t in added_tokens(default, default_report)]
            listed = ctx.path("extend-default.tokens.txt")
            write_token_list(listed, added)
            run_program(extend_command(ctx.args.clp, out, rep, tokens_file=listed))
            got = [t for _, t in new_tokens(out)]
            if set(got) != set(added):
                raise RuntimeError("%s adds %d tokens, extend-default %d: not the same tokens (%d differ)" % (
                    out, len(got), len(added), len(set(got) ^ set(added))))
        return out, read_json(rep)
    if init == "extend-random":
        return extend_folder(ctx, "extend-default")
    return ctx.once(init, make)


def tokenizer_data(ctx, folder):
    """What training and evaluation need from a model folder's tokenizer (cached by its file)."""
    key = sha256(os.path.join(folder, "tokenizer.json"))

    def make():
        tok = tinygpt.Tokenizer(folder)
        size = ctx.args.eval_bytes
        return dict(size=len(tok), train=tok.encode(ctx.text("de", "train")),
                    de=evaluation_slice(tok, byte_slice(ctx.text("de", "valid"), size)),
                    en=evaluation_slice(tok, byte_slice(ctx.text("en", "valid"), size)),
                    tokens_per_word_de=tokens_per_word(tok, ctx.text("de", "valid")))
    return ctx.once(key, make)


def prepare_extend(ctx, init, seed):
    """(model, train ids, validation ids, measure) for one extend-study run; measure(model, step,
    ppl) turns figure2.train's German perplexity into the row's bits per byte."""
    folder, report = extend_folder(ctx, init)
    data = tokenizer_data(ctx, folder)
    model = tinygpt.load(folder)
    added = new_tokens(folder)
    if init == "extend-random":
        randomise_rows(model, [i for i, _ in added], seed)
    rows = model.transformer.wte.weight.shape[0]
    if max(max(data["de"]["ids"]), max(data["en"]["ids"]), max(data["train"])) >= rows:
        raise RuntimeError("%s: the tokenizer gives ids beyond the embedding's %d rows" % (folder, rows))
    ctx.state.setdefault("inits", {})[init] = dict(
        vocabulary=data["size"], rows=rows, new_tokens=len(added), tokens_per_word_de=data["tokens_per_word_de"],
        eval_tokens_de=data["de"]["count"], eval_bytes_de=data["de"]["bytes"], eval_tokens_en=data["en"]["count"],
        eval_bytes_en=data["en"]["bytes"], report=report_scalars(None if init == "extend-random" else report))

    def measure(model, step, ppl):
        german = bits_per_byte(math.log(ppl), data["de"]["count"], data["de"]["bytes"])
        if step == 0:  # figure2.train's perplexity and this script's slice agree on what is predicted
            t0 = time.time()
            direct = slice_bits_per_byte(model, data["de"])
            ctx.state.setdefault("german_evaluation_s", {})[init] = round(time.time() - t0, 2)
            assert abs(direct - german) <= 1e-9 * direct, (direct, german)
        return dict(bpb_de=german, bpb_en=slice_bits_per_byte(model, data["en"]))
    return model, data["train"], data["de"]["ids"], measure


def measure_source(ctx):
    """en-large itself, neither extended nor trained, on the same slices: what extension costs English."""
    tok = tinygpt.Tokenizer(SOURCE)
    model = tinygpt.load(SOURCE).to(ctx.args.device)
    size = ctx.args.eval_bytes
    ctx.state["source"] = dict(
        bpb_de=slice_bits_per_byte(model, evaluation_slice(tok, byte_slice(ctx.text("de", "valid"), size))),
        bpb_en=slice_bits_per_byte(model, evaluation_slice(tok, byte_slice(ctx.text("en", "valid"), size))),
        tokens_per_word_de=tokens_per_word(tok, ctx.text("de", "valid")))


def case_source(ctx, case):
    """The source model folder of an undertrained-study case: en-large, or its planted copy."""
    if case == "shipped":
        return SOURCE

    def make():
        out = ctx.path("planted-source")
        planted = make_planted(ctx.args.make_planted, SOURCE, out, PLANTED_SEED)
        counts = {k: len(v) for k, v in planted.items() if isinstance(v, list)}
        ctx.state["planted"] = dict(seed=PLANTED_SEED, **counts)
        return out
    return ctx.once("planted-source", make)


def undertrained_folder(ctx, case, mode):
    """(folder, report) of `transfer --undertrained mode` from the case's source."""
    def make():
        out, rep = ctx.path("%s-%s" % (case, mode)), ctx.path("%s-%s.report.json" % (case, mode))
        run_program(transfer_command(ctx.args.clp, case_source(ctx, case), out, rep, undertrained=mode))
        return out, read_json(rep)
    return ctx.once((case, mode), make)


def compare_case(ctx, case):
    """Writes both modes' outputs and records whether their model.safetensors are byte-identical."""
    (keep, keep_report), (synth, synth_report) = (undertrained_folder(ctx, case, m) for m in ("keep", "synthesise"))
    a, b = (os.path.join(f, "model.safetensors") for f in (keep, synth))
    identical = filecmp.cmp(a, b, shallow=False)
    ctx.state.setdefault("cases", {})[case] = dict(identical=identical, keep_sha256=sha256(a),
                                                   synthesise_sha256=sha256(b), flagged=flagged_count(synth_report),
                                                   keep_report=report_scalars(keep_report),
                                                   synthesise_report=report_scalars(synth_report))
    log("  %s: keep and synthesise write %s model.safetensors (%s rows flagged)" % (
        case, "byte-identical" if identical else "different", flagged_count(synth_report)))
    return identical


def evaluate_check(ctx):
    """`evaluate` on the planted pair, the default weighting with and without the screen; better
    with it means a higher mean held-out cosine."""
    scores = {}
    for mode in ("keep", "synthesise"):
        out = json.loads(run_program(evaluate_command(ctx.args.clp, case_source(ctx, "planted"), mode), capture=True))
        row = out["weightings"][0]
        scores[mode] = dict(weighting=row["weighting"], mean_cosine=row["mean_cosine"], spread=row.get("spread"),
                            mean_relative_error=row.get("mean_relative_error"), overlap=out.get("overlap"))
    ctx.state["evaluate"] = dict(scores, better=scores["synthesise"]["mean_cosine"] > scores["keep"]["mean_cosine"])


def prepare_undertrained(ctx, init, seed):
    """(model, train ids, validation ids, measure) for one undertrained-study run: de-small's
    tokenizer and figure2.py's German validation slice (its first --eval-tokens tokens)."""
    case, mode = init.split("-", 1)
    folder, _ = undertrained_folder(ctx, case, mode)

    def make():
        tok = tinygpt.Tokenizer(HELPER)
        return tok.encode(ctx.text("de", "train")), tok.encode(ctx.text("de", "valid"))[:ctx.args.eval_tokens]
    train_ids, valid_ids = ctx.once("german", make)
    return tinygpt.load(folder), train_ids, valid_ids, lambda model, step, ppl: dict(valid_ppl=ppl)


PREPARE = {"extend": prepare_extend, "undertrained": prepare_undertrained}


# ---------------------------------------------------------------------------
# results: the csv, training, the state
# ---------------------------------------------------------------------------

def csv_fields(study):
    return ["init", "seed", "step", "tokens"] + STUDIES[study]["measures"]


def read_rows(path, study):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [dict(init=r["init"], seed=int(r["seed"]), step=int(r["step"]), tokens=int(r["tokens"]),
                     **{m: float(r[m]) for m in STUDIES[study]["measures"]}) for r in csv.DictReader(f)]


def write_rows(path, study, rows):
    order = {n: i for i, n in enumerate(STUDIES[study]["inits"])}
    rows = sorted(rows, key=lambda r: (r["seed"], order.get(r["init"], 99), r["step"]))
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=csv_fields(study))
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, **{m: "%.6f" % r[m] for m in STUDIES[study]["measures"]}))
    os.replace(tmp, path)


def finished(rows, init, seed, steps):
    return any(r["init"] == init and r["seed"] == seed and r["step"] == steps for r in rows)


def train_one(ctx, init, seed, rows, csv_path):
    """Trains one (init, seed) with figure2.train, writing the csv after every evaluation; returns its rows."""
    args = ctx.args
    t0 = time.time()
    model, train_ids, valid_ids, measure = PREPARE[args.study](ctx, init, seed)
    model.to(args.device)
    t_ready = time.time()
    cur, evals, called = [], [], []

    def on_eval(step, ppl):
        t_eval = time.time()
        called.append(round(t_eval - t_ready, 2))
        cur.append(dict(init=init, seed=seed, step=step, tokens=step * args.batch * N_POSITIONS,
                        **measure(model, step, ppl)))
        evals.append(time.time() - t_eval)
        write_rows(csv_path, args.study, rows + cur)
        log("  %-18s seed %d  step %4d  %s  %5.0fs" % (init, seed, step, "  ".join(
            "%s %.4f" % (m, cur[-1][m]) for m in STUDIES[args.study]["measures"]), time.time() - t0))

    figure2.train(model, train_ids, valid_ids, args, seed, on_eval)
    ctx.state.setdefault("timings", {})["%s/%d" % (init, seed)] = dict(
        prepare_s=round(t_ready - t0, 2), train_and_eval_s=round(time.time() - t_ready, 2),
        own_measure_s=round(sum(evals), 2), evaluated_at_s=called, steps=args.steps, evaluations=len(cur),
        load=os.getloadavg()[0])
    log("%s seed %d done in %.0fs" % (init, seed, time.time() - t0))
    return cur


def settings(args):
    meta = dict(steps=args.steps, batch=args.batch, lr=args.lr, warmup=args.warmup, eval_every=args.eval_every)
    if args.study == "extend":
        meta["eval_bytes"] = args.eval_bytes
    else:
        meta["eval_tokens"] = args.eval_tokens
    if args.device != "cpu":  # other rounding: never mixed with CPU runs
        meta["device"] = args.device
    return meta


def save_state(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# statistics and the reports
# ---------------------------------------------------------------------------

def final_values(rows, steps, measure):
    """{init: {seed: value at the last step}} for the runs that reached `steps`."""
    out = {}
    for r in rows:
        if r["step"] == steps:
            out.setdefault(r["init"], {})[r["seed"]] = r[measure]
    return out


def step_values(rows, step, measure):
    out = {}
    for r in rows:
        if r["step"] == step:
            out.setdefault(r["init"], {})[r["seed"]] = r[measure]
    return out


def mean_sd(xs, digits=4):
    if not xs:
        return "-"
    if len(xs) == 1:
        return "%.*f" % (digits, xs[0])
    return "%.*f ± %.*f" % (digits, statistics.fmean(xs), digits, statistics.stdev(xs))


def paired_difference(values, init, reference):
    """(seeds, [differences]) of init - reference over the seeds both finished."""
    seeds = sorted(set(values.get(init, {})) & set(values.get(reference, {})))
    return seeds, [values[init][s] - values[reference][s] for s in seeds]


def interval_text(diffs, digits=4):
    """'mean [low, high]' with figure2.paired's 95% t interval; one difference alone without it."""
    if not diffs:
        return "-"
    if len(diffs) == 1:
        return "%+.*f (one seed: no interval)" % (digits, diffs[0])
    mean, low, high = figure2.paired(diffs)
    return "%+.*f [%+.*f, %+.*f]" % (digits, mean, digits, low, digits, high)


def loses(diffs):
    """The rule's 'loses': mean above 0 and the 95% t interval wholly above 0 (needs two seeds)."""
    if len(diffs) < 2:
        return None
    mean, low, _ = figure2.paired(diffs)
    return mean > 0 and low > 0


def protocol_text(meta, study):
    return ("Trained as `examples/figure2/figure2.py` trains (its `train`): AdamW (betas 0.9/0.95, weight decay "
            "%g on matrices, clip 1.0), lr %g after %d linear warm-up steps then constant, batch %d x %d tokens, "
            "%d steps, the batch starts drawn by a generator seeded with the seed; evaluated at step 0 and every %d "
            "steps; trained on %s. Written by `examples/figure2/studies.py --study %s`.\n"
            % (figure2.WEIGHT_DECAY, meta["lr"], meta["warmup"], meta["batch"], N_POSITIONS, meta["steps"],
               meta["eval_every"], meta.get("device", "cpu"), study))


def extend_report(rows, state, meta):
    """extend_results.md's lines."""
    inits = [i for i in STUDIES["extend"]["inits"] if any(r["init"] == i for r in rows)]
    finals = {m: final_values(rows, meta["steps"], m) for m in ("bpb_de", "bpb_en")}
    starts = {m: step_values(rows, 0, m) for m in ("bpb_de", "bpb_en")}
    seeds = sorted({s for by_seed in finals["bpb_de"].values() for s in by_seed})
    info = state.get("inits", {})
    L = ["# Extending en-large by de-small's tokens, trained on German: results\n",
         "en-large (English, 128-dim, 4 layers) keeps its tokenizer and every id and gains de-small's German "
         "tokens it lacks (`clp-transfer extend`); each initialisation then trains on the German training text "
         "as its own tokenizer encodes it. Bits per byte: the summed next-token negative log-likelihood in bits "
         "over the bytes of text of the tokens predicted, on the first %d bytes of the German and of the English "
         "validation text (the same text for every model, each model's tokenizer encoding it; non-overlapping "
         "128-token windows, each window's first token context only). Tokens per word: the whole German "
         "validation text, whitespace-separated words.\n" % meta["eval_bytes"],
         protocol_text(meta, "extend"),
         "Seeds finished: %s.\n" % (", ".join(map(str, seeds)) or "none"),
         "## Final bits per byte\n",
         "| init | seeds | German bpb | English bpb | step-0 German | step-0 English | German tokens per word | "
         "vocabulary | tokens en-large lacks |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for init in inits:
        d = info.get(init, {})
        L.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            init, len(finals["bpb_de"].get(init, {})),
            *(mean_sd(list(finals[m].get(init, {}).values())) for m in ("bpb_de", "bpb_en")),
            *(mean_sd(list(starts[m].get(init, {}).values())) for m in ("bpb_de", "bpb_en")),
            "%.3f" % d["tokens_per_word_de"] if d else "-", d.get("vocabulary", "-"), d.get("new_tokens", "-")))
    src = state.get("source")
    L += ["", "Mean ± sample standard deviation over the seeds.%s\n" % (
        "" if not src else " en-large itself (its own tokenizer, neither extended nor trained): German %.4f, "
        "English %.4f bits per byte, %.3f German tokens per word." % (src["bpb_de"], src["bpb_en"],
                                                                     src["tokens_per_word_de"])),
          "## Paired by seed against extend-default\n",
          "Difference init − extend-default on the same seed, mean and 95% interval (t, n − 1 degrees of freedom); "
          "negative is better.\n",
          "| init | seeds | Δ German bpb | Δ English bpb |", "|---|---:|---:|---:|"]
    for init in [i for i in inits if i != REFERENCE["extend"]]:
        common, de = paired_difference(finals["bpb_de"], init, REFERENCE["extend"])
        _, en = paired_difference(finals["bpb_en"], init, REFERENCE["extend"])
        L.append("| %s | %d | %s | %s |" % (init, len(common), interval_text(de), interval_text(en)))
    L += [""] + curve_table(rows, inits) + extend_program_report(info)
    return L


def curve_table(rows, inits):
    """Mean bits per byte over the seeds at each evaluation step."""
    steps = sorted({r["step"] for r in rows})
    L = ["## Bits per byte during training (mean over the seeds present at each step)\n",
         "| init | language | " + " | ".join("step %d" % s for s in steps) + " |",
         "|---|---|" + "---:|" * len(steps)]
    for init in inits:
        for m, language in (("bpb_de", "German"), ("bpb_en", "English")):
            cells = []
            for s in steps:
                xs = [r[m] for r in rows if r["init"] == init and r["step"] == s]
                cells.append("%.3f" % statistics.fmean(xs) if xs else "-")
            L.append("| %s | %s | %s |" % (init, language, " | ".join(cells)))
    return L + [""]


def extend_program_report(info):
    """The scalar fields of each program run's --report."""
    reported = [(i, d["report"]) for i, d in info.items() if d.get("report")]
    if not reported:
        return []
    L = ["## The program's reports (`--report`, scalar fields)\n"]
    for init, rep in reported:
        L.append("- %s: %s" % (init, ", ".join("%s %s" % (k, json.dumps(v)) for k, v in sorted(rep.items()))))
    return L + [""]


def undertrained_case_lines(case, rows, state, meta):
    """One case's section and its 'loses' (None: not judged)."""
    c = state.get("cases", {}).get(case)
    L = ["## %s\n" % {"shipped": "The shipped pair (en-large → de-small)",
                      "planted": "The planted source (make_planted.py, seed %d)" % PLANTED_SEED}[case]]
    if case == "planted" and state.get("planted"):
        L.append("Planted rows: %s.\n" % ", ".join("%s %s" % (k, v) for k, v in sorted(state["planted"].items())))
    if c is None:
        return L + ["Not run.\n"], None
    L.append("Rows flagged by the screen (synthesise's report): %s. keep's and synthesise's model.safetensors: "
             "%s (sha256 %s… and %s…).\n" % (c["flagged"], "**byte-identical**" if c["identical"] else "different",
                                              c["keep_sha256"][:12], c["synthesise_sha256"][:12]))
    if c["identical"]:
        return L + ["Identical outputs: the paired difference is zero on every seed by construction; not "
                    "trained. Synthesise does not lose here.\n"], False
    finals = final_values(rows, meta["steps"], "valid_ppl")
    starts = step_values(rows, 0, "valid_ppl")
    L += ["| init | seeds | final perplexity | step-0 perplexity |", "|---|---:|---:|---:|"]
    for mode in ("keep", "synthesise"):
        init = "%s-%s" % (case, mode)
        L.append("| %s | %d | %s | %s |" % (init, len(finals.get(init, {})),
                                          mean_sd(list(finals.get(init, {}).values()), 2),
                                          mean_sd(list(starts.get(init, {}).values()), 2)))
    seeds, diffs = paired_difference(finals, case + "-synthesise", case + "-keep")
    verdict = loses(diffs)
    L += ["", "Paired difference of final perplexity, synthesise − keep, seeds %s: %s. Loses (mean > 0 and the "
          "interval wholly above 0): %s.\n" % (",".join(map(str, seeds)) or "none", interval_text(diffs, 2),
                                               {None: "not judged (fewer than 2 seeds)", True: "**yes**",
                                                False: "no"}[verdict])]
    return L, verdict


def undertrained_report(rows, state, meta):
    """undertrained_results.md's lines, ending with the rule's verdict."""
    L = ["# Under-trained source rows: keep or synthesise (the rule of docs/undertrained.md applied)\n",
         "`clp-transfer transfer --undertrained keep` and `--undertrained synthesise`, the default weighting, from "
         "en-large and from its planted copy to de-small's vocabulary; German validation perplexity on the first "
         "%d tokens of the German validation text (de-small's tokenizer), as `figure2.py` measures it.\n"
         % meta["eval_tokens"], protocol_text(meta, "undertrained")]
    verdicts, trained_seeds = {}, {}
    for case in ("shipped", "planted"):
        lines, verdicts[case] = undertrained_case_lines(case, rows, state, meta)
        L += lines
        if not state.get("cases", {}).get(case, {}).get("identical", True):
            trained_seeds[case] = sorted(set(final_values(rows, meta["steps"], "valid_ppl")
                                             .get(case + "-synthesise", {})))
    ev = state.get("evaluate")
    L.append("## `clp-transfer evaluate` on the planted pair\n")
    if ev:
        L += ["The default weighting (%s) scored by held-out reconstruction of the overlap; better = a higher mean "
              "cosine.\n" % ev["keep"]["weighting"],
              "| --undertrained | overlap | mean cosine | spread | mean relative error |", "|---|---:|---:|---:|---:|"]
        for mode in ("keep", "synthesise"):
            s = ev[mode]
            L.append("| %s | %s | %.4f | %.4f | %.4g |" % (mode, s.get("overlap"), s["mean_cosine"], s["spread"],
                                                           s["mean_relative_error"]))
        L.append("\nBetter with the screen: %s.\n" % ("yes" if ev["better"] else "**no**"))
    else:
        L.append("Not run.\n")
    return L + verdict_lines(verdicts, ev, trained_seeds)


def verdict_lines(verdicts, ev, trained_seeds):
    """The rule: synthesise unless it loses in either case or evaluate does not score it better."""
    L = ["## The rule's verdict\n"]
    if any(v is True for v in verdicts.values()):
        L.append("**keep**: synthesise loses to keep in %s." % " and ".join(c for c, v in verdicts.items() if v))
    elif ev is not None and not ev["better"]:
        L.append("**keep**: `evaluate` does not score the planted pair better with the screen.")
    elif any(v is None for v in verdicts.values()) or ev is None:
        L.append("Not decided: %s." % ", ".join(
            ["%s not judged" % c for c, v in verdicts.items() if v is None] + (["evaluate not run"] if ev is None
                                                                               else [])))
    else:
        L.append("**synthesise**: it loses to keep in neither case and `evaluate` scores the planted pair better "
                 "with the screen.")
    short = {c: s for c, s in trained_seeds.items() if s != RULE_SEEDS}
    if short:
        L.append("\nProvisional: the rule names seeds 0-9; trained here %s." % "; ".join(
            "%s seeds %s" % (c, ",".join(map(str, s)) or "none") for c, s in short.items()))
    return L + [""]


REPORTS = {"extend": extend_report, "undertrained": undertrained_report}


# ---------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--study", required=True, choices=sorted(STUDIES))
    ap.add_argument("--clp", help="clp-transfer binary (needed unless --report-only)")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (data order, extend-random's draws)")
    ap.add_argument("--inits", default=None, help="comma-separated subset of the study's initialisations")
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=16)
    ap.add_argument("--eval-tokens", type=int, default=8192, help="undertrained: the German validation slice")
    ap.add_argument("--eval-bytes", type=int, default=24576, help="extend: bytes of each validation text")
    ap.add_argument("--make-planted", default=os.path.join(HERE, "make_planted.py"), help="the planting script")
    ap.add_argument("--out", default=HERE, help="folder for STUDY_results.csv/.md and STUDY_state.json")
    ap.add_argument("--workdir", default=None, help="folder for the models (default: a new temp folder)")
    ap.add_argument("--fresh", action="store_true", help="discard the study's earlier results first")
    ap.add_argument("--report-only", action="store_true", help="rewrite STUDY_results.md from the csv and state")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--device", default="cpu", help="torch device for training (default cpu)")
    args = ap.parse_args()
    inits = STUDIES[args.study]["inits"]
    args.inits = inits if args.inits is None else [i for i in args.inits.split(",") if i]
    bad = [i for i in args.inits if i not in inits]
    if bad:
        ap.error("unknown init(s) for --study %s: %s (known: %s)" % (args.study, ", ".join(bad), ", ".join(inits)))
    if not args.report_only and not args.clp:
        ap.error("--clp is needed to run the study")
    args.seeds = [int(s) for s in args.seeds.split(",") if s != ""]
    return args


def run_study(ctx, rows, csv_path, state_path):
    """Every (init, seed) asked for that the csv has not finished; the undertrained study first
    compares each case's two outputs and trains a case only where they differ."""
    args = ctx.args
    inits = list(args.inits)
    if args.study == "undertrained":
        for case in sorted({i.split("-", 1)[0] for i in inits}):
            if compare_case(ctx, case):
                inits = [i for i in inits if not i.startswith(case + "-")]
        if any(i.startswith("planted-") for i in args.inits):
            evaluate_check(ctx)
        save_state(state_path, ctx.state)
    elif "source" not in ctx.state:
        measure_source(ctx)
    for seed in args.seeds:
        for init in inits:
            if finished(rows, init, seed, args.steps):
                log("%s seed %d: finished in %s, kept" % (init, seed, csv_path))
                continue
            rows = [r for r in rows if not (r["init"] == init and r["seed"] == seed)]
            rows += train_one(ctx, init, seed, rows, csv_path)
            write_rows(csv_path, args.study, rows)
            save_state(state_path, ctx.state)
    return rows


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.device != "cpu":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)
    csv_path, state_path, md_path = (os.path.join(args.out, "%s_%s" % (args.study, name))
                                     for name in ("results.csv", "state.json", "results.md"))
    rows = [] if args.fresh else read_rows(csv_path, args.study)
    state = {} if args.fresh or not os.path.exists(state_path) else read_json(state_path)
    meta = state["meta"] if args.report_only and state.get("meta") else settings(args)
    if state.get("meta") and rows and state["meta"] != meta:
        sys.exit("%s was made with other settings %s; use --fresh or the same settings" % (csv_path, state["meta"]))
    state["meta"] = meta
    if not args.report_only:
        ctx = Context(args, state)
        log("%s study; models in %s; load %.1f" % (args.study, ctx.workdir, os.getloadavg()[0]))
        rows = run_study(ctx, rows, csv_path, state_path)
    save_state(state_path, state)
    text = "\n".join(REPORTS[args.study](rows, state, meta)).rstrip() + "\n"
    with open(md_path, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
