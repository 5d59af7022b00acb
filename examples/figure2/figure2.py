#!/usr/bin/python3
"""Figure 2 of CLP-Transfer (Ostendorff & Rehm 2023) in miniature, on the shipped tiny models.

A German "large" GPT-2 (the architecture of examples/models/en-large: n_embd 128, 4 layers,
4 heads, with de-small's 5000-token German vocabulary) is trained on the German training text
from several initialisations, with the same data order and the same number of steps:

    random             fresh init of all weights (tinygpt.GPT's own init), no transfer
    overlap-random     clp-transfer --method overlap-random (English transformer + copied
                       overlapping embeddings, the other rows drawn from a normal)
    clp-<weighting>    clp-transfer --method clp --weighting paper|clamped|top-k|softmax|sparsemax
                       (k 10, temperature 0.1), omp (k 8) or least-squares (lambda by GCV)

Validation perplexity (a fixed slice of the German validation text) is measured at step 0 and
every --eval-every steps.  Results (results.csv), the plot (figure2.png) and the report
(results.md) are written next to this script.  Each run is keyed by (init, seed): running again
with other --seeds adds those seeds to results.csv and re-renders the plot and report from all
seeds present.  Use /usr/bin/python3 (Debian's torch).  Normally started by run.sh.
"""

import argparse
import csv
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
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "examples", "models")
sys.path.insert(0, MODELS)
import tinygpt  # noqa: E402

SOURCE = os.path.join(MODELS, "en-large")
HELPER = os.path.join(MODELS, "de-small")
WEIGHTINGS = ["sparsemax", "top-k", "softmax", "clamped", "paper", "omp", "least-squares",
              "least-squares-top-k-norms", "least-squares-top-k-mean-norms"]
ALL_INITS = ["random", "overlap-random"] + ["clp-" + w for w in WEIGHTINGS]
K, TEMPERATURE = 10, 0.1
OMP_K = 8  # mergekit tokensurgeon's default, the program's default for omp
N_POSITIONS = 128
WEIGHT_DECAY = 0.1
CSV_FIELDS = ["init", "seed", "step", "tokens", "valid_ppl"]


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# initialisations
# ---------------------------------------------------------------------------

def german_config(tok):
    return tinygpt.make_config(len(tok), 128, 4, 4, N_POSITIONS, tok.eos_id)


def make_init(init, seed, clp, workdir, tok):
    """Return (model, report dict or None) for one initialisation."""
    if init == "random":
        torch.manual_seed(1000 + seed)
        return tinygpt.GPT(german_config(tok)), None
    out = os.path.join(workdir, "init-%s-seed%d" % (init, seed))
    rep = out + ".report.json"
    cmd = [clp, "transfer", "--source", SOURCE, "--helper", HELPER, "--output", out,
           "--report", rep, "--force", "--quiet"]
    if init == "overlap-random":
        cmd += ["--method", "overlap-random", "--seed", str(seed)]
    else:
        weighting = init[len("clp-"):]
        if weighting == "least-squares-top-k-norms":  # the map's directions, the top-k rows' norms
            cmd += ["--method", "clp", "--weighting", "least-squares", "--row-norms", "top-k", "--k", str(K)]
        elif weighting == "least-squares-top-k-mean-norms":  # ... the top-k neighbours' norms averaged
            cmd += ["--method", "clp", "--weighting", "least-squares", "--row-norms", "top-k-mean", "--k", str(K)]
        else:
            cmd += ["--method", "clp", "--weighting", weighting]
        if weighting == "omp":
            cmd += ["--k", str(OMP_K)]
        elif weighting in ("top-k", "softmax"):
            cmd += ["--k", str(K)]
        if weighting == "softmax":
            cmd += ["--temperature", str(TEMPERATURE)]
        if weighting == "least-squares":  # the map alone; lambda chosen by GCV
            cmd += ["--row-norms", "map"]
    subprocess.run(cmd, check=True)
    with open(rep) as f:
        report = json.load(f)
    model = tinygpt.load(out)
    assert model.config["vocab_size"] == len(tok) and model.config["n_embd"] == 128
    return model, report


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------

def lr_at(step, peak, warmup):
    return peak * min(1.0, (step + 1) / warmup)


def train(model, train_ids, valid_ids, args, seed, on_eval):
    """AdamW, linear warm-up then constant lr; batches drawn by a generator seeded with
    `seed` (identical data order for every init of the same seed).  on_eval(step, ppl) is
    called at step 0 (before any update), every args.eval_every steps and at the end."""
    g = torch.Generator().manual_seed(seed)  # on the CPU whatever the device: the same batches
    data = torch.tensor(train_ids, dtype=torch.long, device=args.device)
    opt = tinygpt.adamw(model, args.lr, WEIGHT_DECAY)
    on_eval(0, tinygpt.perplexity(model, valid_ids))
    model.train()
    for step in range(args.steps):
        tinygpt.train_step(model, opt, data, args.batch, N_POSITIONS, lr_at(step, args.lr, args.warmup), g)
        done = step + 1
        if done % args.eval_every == 0 or done == args.steps:
            on_eval(done, tinygpt.perplexity(model, valid_ids))
            model.train()
    model.eval()
    return model


# ---------------------------------------------------------------------------
# results.csv (merged by (init, seed))
# ---------------------------------------------------------------------------

def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [dict(init=r["init"], seed=int(r["seed"]), step=int(r["step"]), tokens=int(r["tokens"]),
                     valid_ppl=float(r["valid_ppl"])) for r in csv.DictReader(f)]


def write_csv(path, rows):
    order = {n: i for i, n in enumerate(ALL_INITS)}
    rows = sorted(rows, key=lambda r: (r["seed"], order.get(r["init"], 99), r["step"]))
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, valid_ppl="%.4f" % r["valid_ppl"]))
    os.replace(tmp, path)


def curves(rows):
    """{init: {seed: [(tokens, step, ppl), ...]}}"""
    out = {}
    for r in rows:
        out.setdefault(r["init"], {}).setdefault(r["seed"], []).append((r["tokens"], r["step"], r["valid_ppl"]))
    for by_seed in out.values():
        for c in by_seed.values():
            c.sort()
    return out


def tokens_to_reach(curve, target):
    """First training-token count at which the curve reaches `target` perplexity,
    interpolating log(ppl) linearly between evaluations; None if never."""
    prev = None
    for tok, _, ppl in curve:
        if ppl <= target:
            if prev is None:
                return float(tok)
            t0, p0 = prev
            a, b = math.log(p0), math.log(ppl)
            return t0 + (tok - t0) * (a - math.log(target)) / (a - b) if a != b else float(tok)
        prev = (tok, ppl)
    return None


# ---------------------------------------------------------------------------
# plot and report
# ---------------------------------------------------------------------------

# What the figure draws, in this order: the baselines, the neighbour weightings, the maps. Other
# initialisations are in results.md's tables only; the published formula is drawn clipped.
PLOTTED = [("random", "black", "--"), ("overlap-random", "dimgray", ":"), ("clp-top-k", "tab:green", "-"),
           ("clp-sparsemax", "tab:blue", "-."), ("clp-least-squares", "tab:orange", "-"),
           ("clp-least-squares-top-k-norms", "tab:red", "-")]
LABELS = {"clp-least-squares-top-k-norms": "clp-least-squares, top-k norms",
          "clp-least-squares-top-k-mean-norms": "clp-least-squares, top-k mean norms"}


def mean_curve(by_seed):
    """(tokens, geometric mean, min, max) over the seeds, at the steps every seed has."""
    seeds = sorted(by_seed)
    steps = sorted(set.intersection(*[set(s for _, s, _ in by_seed[sd]) for sd in seeds]))
    toks = [next(t for t, s, _ in by_seed[seeds[0]] if s == st) for st in steps]
    per = [[next(p for _, s, p in by_seed[sd] if s == st) for st in steps] for sd in seeds]
    gmean = [math.exp(statistics.fmean(math.log(p[i]) for p in per)) for i in range(len(steps))]
    return toks, gmean, [min(p[i] for p in per) for i in range(len(steps))], [max(p[i] for p in per) for i in
                                                                               range(len(steps))]


def plot(rows, path, meta):
    """Two panels. Left: the whole run, log y, the geometric mean over the seeds with a min-max
    band, clipped a little above random's start so that the published formula's first steps are
    marked rather than drawn. Right: each CLP initialisation paired with top-k on the same seed,
    the perplexity difference in percent, its mean and 95% interval: what the default rule reads."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cv = curves(rows)
    fig, (whole, pairs) = plt.subplots(1, 2, figsize=(12.5, 5.2), gridspec_kw={"width_ratios": [1.1, 1]})
    ceiling = 1.15 * mean_curve(cv["random"])[1][0] if "random" in cv else None
    drawn = [p for p in PLOTTED if p[0] in cv] + ([("clp-paper", "tab:purple", (0, (1, 1)))] if "clp-paper" in cv
                                                   else [])
    for init, color, style in drawn:
        toks, mean, low, high = mean_curve(cv[init])
        clip = (lambda xs: [min(x, ceiling) for x in xs]) if ceiling else (lambda xs: xs)
        n = len(cv[init])
        whole.plot(toks, clip(mean), linestyle=style, color=color, marker="o", ms=2.5, lw=1.7,
                   label="%s (%d seed%s)" % (LABELS.get(init, init), n, "s" if n > 1 else ""))
        if n > 1:
            whole.fill_between(toks, clip(low), clip(high), color=color, alpha=0.12, lw=0)
        if ceiling and mean[0] > ceiling:
            below = [t for t, m in zip(toks, mean) if m <= ceiling]
            whole.annotate("%s: off the axis at the start\n(step-0 perplexity %.0e)%s" % (
                init, mean[0], "" if not below else ", back by %dk tokens" % (below[0] // 1000)),
                xy=(toks[0], ceiling), xytext=(0.4 * toks[-1], ceiling / 5), fontsize=8, color=color,
                arrowprops=dict(arrowstyle="->", color=color, lw=0.8))
    whole.set_yscale("log")
    if ceiling:
        whole.set_ylim(top=ceiling)
    whole.set_xlabel("training tokens")
    whole.set_ylabel("validation perplexity (German, log scale)")
    whole.set_title("validation perplexity: mean over the seeds, band = min to max", fontsize=10)
    whole.legend(fontsize=8, loc="upper right")
    reference = cv.get(RULE_REFERENCE, {})
    for init, color, style in [p for p in PLOTTED if p[0] in cv and p[0].startswith("clp-")]:
        seeds = sorted(set(cv[init]) & set(reference))
        if len(seeds) < 2:
            continue
        ref = {sd: {s: p for _, s, p in reference[sd]} for sd in seeds}
        steps = sorted(set.intersection(*[set(s for _, s, _ in cv[init][sd]) for sd in seeds]))
        toks = [next(t for t, s, _ in cv[init][seeds[0]] if s == st) for st in steps]
        bands = [paired([100 * (next(p for _, s, p in cv[init][sd] if s == st) / ref[sd][st] - 1) for sd in seeds])
                 for st in steps]
        pairs.plot(toks, [b[0] for b in bands], linestyle=style, color=color, marker="o", ms=2.5, lw=1.7,
                   label=LABELS.get(init, init))
        pairs.fill_between(toks, [b[1] for b in bands], [b[2] for b in bands], color=color, alpha=0.15, lw=0)
    pairs.axhline(0, color="tab:green", lw=1)
    pairs.set_xlabel("training tokens")
    pairs.set_ylabel("perplexity vs top-k on the same seed (%)")
    pairs.set_title("paired with top-k: mean difference and 95% interval", fontsize=10)
    pairs.legend(fontsize=8, loc="lower right")
    for ax in (whole, pairs):
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("CLP-Transfer Figure 2 in miniature: German 128-dim 4-layer GPT-2, batch %d x %d tokens, AdamW "
                 "lr %g, seeds %s" % (meta["batch"], N_POSITIONS, meta["lr"], ",".join(map(str, meta["seeds"]))),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(x, d=1):
    return "n/a" if x is None else ("%.*f" % (d, x))


# The rule that decides the default weighting (docs/weighting.md, "The default weighting"): paired by
# seed against top-k, a candidate qualifies when the 95% interval of its share difference lies
# below 0 and that of its final-perplexity difference below +1; the lowest mean share of those wins.
RULE_REFERENCE = "clp-top-k"
RULE_CANDIDATES = ["clp-sparsemax", "clp-least-squares", "clp-least-squares-top-k-norms"]
# t(0.975, df) for df = 1 ... 30; 1.96 beyond.
T_975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def paired(differences):
    """(mean, lower, upper): the mean and its 95% t interval."""
    n = len(differences)
    mean = statistics.fmean(differences)
    t = T_975[n - 2] if n - 2 < len(T_975) else 1.96
    half = t * statistics.stdev(differences) / math.sqrt(n)
    return mean, mean - half, mean + half


def rule_section(cv, summary, seeds):
    """The paired table against top-k and the decision the rule gives, as markdown lines."""
    ref = summary.get(RULE_REFERENCE, {})
    L = ["## The default weighting: the rule applied\n",
         "Paired by seed against %s: ΔS = share of random's tokens needed to reach random's final perplexity "
         "minus top-k's, ΔF = final perplexity minus top-k's; mean over the seeds and its 95%% interval "
         "(t, n − 1 degrees of freedom). A candidate qualifies when ΔS's interval lies below 0 and ΔF's "
         "below +1; of those, the lowest mean share becomes the default; with none, top-k stays.\n" % RULE_REFERENCE,
         "| candidate | seeds | mean share | ΔS mean [95% interval] | ΔF mean [95% interval] | qualifies |",
         "|---|---:|---:|---:|---:|---|"]
    qualifying = []
    for init in [c for c in RULE_CANDIDATES if c in summary]:
        common = [sd for sd in seeds if sd in summary[init] and sd in ref]
        reached = all(summary[init][sd]["share"] is not None and ref[sd]["share"] is not None for sd in common)
        if len(common) < 2 or not reached:
            L.append("| %s | %d | - | - | - | no (%s) |" % (init, len(common), "not reached on some seed"
                                                             if not reached else "fewer than 2 seeds"))
            continue
        ds = paired([summary[init][sd]["share"] - ref[sd]["share"] for sd in common])
        df = paired([summary[init][sd]["final"] - ref[sd]["final"] for sd in common])
        ok = ds[2] < 0 and df[2] < 1
        share = statistics.fmean(summary[init][sd]["share"] for sd in common)
        if ok:
            qualifying.append((share, init))
        L.append("| %s | %d | %.1f%% | %+.1f%% [%+.1f%%, %+.1f%%] | %+.2f [%+.2f, %+.2f] | %s |" % (
            init, len(common), 100 * share, 100 * ds[0], 100 * ds[1], 100 * ds[2], df[0], df[1], df[2],
            "**yes**" if ok else "no"))
    L.append("")
    L.append("Decision: %s.\n" % ("**%s** (the lowest mean share of those that qualify: %s)" % (
        min(qualifying)[1], ", ".join(i for _, i in sorted(qualifying))) if qualifying else
        "none qualifies; %s stays" % RULE_REFERENCE))
    return L


# The rule that decides the default's row norms (docs/weighting.md, "Row norms"): paired by seed against
# the map with top-k row norms, the neighbours' mean norm becomes the default unless the lower end of
# the 95% interval of its share difference or of its final-perplexity difference is above 0.
NORM_REFERENCE = "clp-least-squares-top-k-norms"
NORM_CANDIDATE = "clp-least-squares-top-k-mean-norms"


def row_norm_rule_section(summary, seeds):
    """The paired comparison of the two neighbour-norm rules and the decision, as markdown lines."""
    if NORM_CANDIDATE not in summary or NORM_REFERENCE not in summary:
        return []
    ref, cand = summary[NORM_REFERENCE], summary[NORM_CANDIDATE]
    common = [sd for sd in seeds if sd in ref and sd in cand]
    L = ["## The default's row norms: the rule applied\n",
         "Paired by seed against %s: ΔS and ΔF as above, %s minus %s, over the seeds both have (%s). "
         "The candidate becomes the default's row norms unless the lower end of ΔS's or ΔF's 95%% interval "
         "is above 0.\n" % (NORM_REFERENCE, NORM_CANDIDATE, NORM_REFERENCE, ",".join(map(str, common)))]
    reached = all(ref[sd]["share"] is not None and cand[sd]["share"] is not None for sd in common)
    if len(common) < 2 or not reached:
        L.append("Not decided: %s.\n" % ("not reached on some seed" if not reached else "fewer than 2 seeds"))
        return L
    ds = paired([cand[sd]["share"] - ref[sd]["share"] for sd in common])
    df = paired([cand[sd]["final"] - ref[sd]["final"] for sd in common])
    L += ["| init | seeds | mean share | mean final perplexity |", "|---|---:|---:|---:|"]
    for init, s in ((NORM_REFERENCE, ref), (NORM_CANDIDATE, cand)):
        L.append("| %s | %d | %.1f%% | %.2f |" % (init, len(common), 100 * statistics.fmean(s[sd]["share"] for sd in common),
                                              statistics.fmean(s[sd]["final"] for sd in common)))
    loses = ds[1] > 0 or df[1] > 0
    L += ["", "ΔS %+.1f%% [%+.1f%%, %+.1f%%], ΔF %+.2f [%+.2f, %+.2f]." % (
        100 * ds[0], 100 * ds[1], 100 * ds[2], df[0], df[1], df[2]),
        "", "Decision: %s.\n" % ("it loses; top-k row norms stay" if loses else
                                   "**top-k-mean** row norms (it does not lose)")]
    return L


def report_md(rows, reports, fig1, meta, path):
    cv = curves(rows)
    inits = [i for i in ALL_INITS if i in cv]
    seeds = sorted({r["seed"] for r in rows})
    L = []
    L.append("# Figure 2 in miniature: results\n")
    L.append("Written by `examples/figure2/figure2.py` (started by `examples/figure2/run.sh`). "
             "German 128-dim, 4-layer, 4-head GPT-2 (en-large's architecture, de-small's 5000-token "
             "vocabulary) trained on the German Debian text from each initialisation: same data order "
             "per seed, same steps, AdamW (betas 0.9/0.95, weight decay %g on matrices, clip 1.0), "
             "lr %g after %d linear warm-up steps then constant, batch %d x %d tokens. Validation "
             "perplexity on the first %d tokens of the German validation split (non-overlapping "
             "128-token windows), measured at step 0 and every %d steps. The seed sets the batch "
             "order and the random draws (random init, overlap-random's rows); the CLP "
             "initialisations are deterministic.\n"
             % (WEIGHT_DECAY, meta["lr"], meta["warmup"], meta["batch"], N_POSITIONS, meta["eval_tokens"],
                meta["eval_every"]))
    L.append("Seeds present: %s. Trained on: %s.\n" % (", ".join(map(str, seeds)), meta.get("device", "cpu")))

    # perplexity at checkpoints, per seed
    for sd in seeds:
        steps_all = sorted({r["step"] for r in rows if r["seed"] == sd})
        if not steps_all:
            continue
        last = steps_all[-1]
        pick = sorted({steps_all[0], steps_all[min(1, len(steps_all) - 1)], steps_all[len(steps_all) // 4],
                       steps_all[len(steps_all) // 2], steps_all[(3 * len(steps_all)) // 4], last})
        L.append("## Validation perplexity, seed %d\n" % sd)
        L.append("| init | " + " | ".join("step %d (%.0fk tok)" % (s, s * meta["batch"] * N_POSITIONS / 1000)
                                          for s in pick) + " |")
        L.append("|---|" + "---|" * len(pick))
        for init in inits:
            c = cv[init].get(sd)
            if not c:
                continue
            d = {s: p for _, s, p in c}
            L.append("| %s | " % init + " | ".join(fmt(d.get(s)) for s in pick) + " |")
        L.append("")

    # token shares and final vs overlap-random, per seed
    L.append("## Tokens needed to reach random init's final perplexity; final perplexity vs overlap-random\n")
    L.append("Share = training tokens needed to reach the perplexity the random initialisation has after "
             "all its tokens (log-perplexity interpolated linearly between evaluations), divided by "
             "random's token count. 'beats o-r' = below overlap-random at every evaluation after step 0 "
             "(same seed).\n")
    L.append("'last step' is the last evaluation of the run (earlier than %d if the run was cut); "
             "'vs overlap-random' compares the two at the last step both have.\n" % meta["steps"])
    L.append("| seed | init | last step | ppl at last step | vs overlap-random (step) | share of tokens to reach random's final | "
             "beats o-r at every step > 0 | worst ratio to o-r (step) |")
    L.append("|---|---|---|---|---|---|---|---|")
    summary = {}
    for sd in seeds:
        rnd = cv.get("random", {}).get(sd)
        orc = cv.get("overlap-random", {}).get(sd)
        target = rnd[-1][2] if rnd else None
        total = rnd[-1][0] if rnd else None
        for init in inits:
            c = cv[init].get(sd)
            if not c:
                continue
            final, last = c[-1][2], c[-1][1]
            share, vs, beats, worst, vs_step = None, None, None, None, None
            if target is not None and init != "random":
                t = tokens_to_reach(c, target)
                share = None if t is None else t / total
            if orc:
                od = {s: p for _, s, p in orc}
                common = [s for _, s, _ in c if s in od]
                if common:
                    vs_step = max(common)
                    vs = next(p for _, s, p in c if s == vs_step) / od[vs_step]
                ratios = [(p / od[s], s) for _, s, p in c if s > 0 and s in od]
                if init != "overlap-random" and ratios:
                    beats = all(r < 1 for r, _ in ratios)
                    worst = max(ratios)
            summary.setdefault(init, {})[sd] = dict(final=final, share=share, vs=vs, beats=beats, worst=worst,
                                                    last=last)
            L.append("| %d | %s | %d | %.1f | %s | %s | %s | %s |" % (
                sd, init, last, final,
                "-" if vs is None or init == "overlap-random" else "%.3fx (%d)" % (vs, vs_step),
                "-" if init == "random" else ("not reached" if share is None and target is not None
                                              else ("n/a" if share is None else "%.0f%%" % (100 * share))),
                "-" if beats is None else ("yes" if beats else "no"),
                "-" if worst is None else "%.3f (step %d)" % worst))
    L.append("")

    if len(seeds) > 1:
        L.append("## Across seeds\n")
        L.append("Mean ± standard deviation over the seeds run (sample standard deviation; '-' with one seed). "
                 "Share = the share of random's tokens needed to reach random's final perplexity, as above. "
                 "Largest row norm = the largest output embedding row norm over the median source row norm "
                 "(clp-transfer --report; the CLP rows do not depend on the seed).\n")
        L.append("| init | seeds | final ppl | min-max | share of random's tokens | step-0 ppl | largest row norm "
                 "/ median source | beats o-r at every step, all seeds |")
        L.append("|---|---|---|---|---|---|---|---|")

        def mean_sd(xs, fmt_):
            if not xs:
                return "-"
            if len(xs) == 1:
                return fmt_ % xs[0]
            return (fmt_ + " ± " + fmt_) % (statistics.fmean(xs), statistics.stdev(xs))

        for init in inits:
            s = summary.get(init, {})
            finals = [v["final"] for v in s.values()]
            shares = [v["share"] for sd_, v in s.items() if v["share"] is not None]
            measurable = [sd_ for sd_ in s if "random" in cv and sd_ in cv["random"]]
            step0 = [c[0][2] for sd_, c in cv[init].items() if c and c[0][1] == 0]
            beats = [v["beats"] for v in s.values() if v["beats"] is not None]
            r = (reports or {}).get(init)
            L.append("| %s | %d | %s | %.1f-%.1f | %s | %s | %s | %s |" % (
                init, len(finals), mean_sd(finals, "%.1f"), min(finals), max(finals),
                "-" if init == "random" else (
                    "n/a (no random run)" if not measurable else
                    (mean_sd([100 * x for x in shares], "%.0f") + "%"
                     if len(shares) == len(measurable) else "not reached (%d of %d seeds)" % (len(measurable) - len(shares), len(measurable)))),
                mean_sd(step0, "%.0f") if max(step0, default=0) < 1e7 else mean_sd(step0, "%.3g"),
                "-" if not r else "%.2fx" % (r["max_output_row_norm"] / r["median_source_row_norm"]),
                "-" if not beats else ("yes" if all(beats) and len(beats) == len(finals) else "no")))
        L.append("")

    if len(seeds) > 1:
        L.extend(rule_section(cv, summary, seeds))
        L.extend(row_norm_rule_section(summary, seeds))

    # diagnostics
    if reports:
        L.append("## Weighting diagnostics (clp-transfer --report)\n")
        L.append("| init | overlap | no positive cosine rows | inflated rows | fallback rows | effective neighbours "
                 "median (min-max) | max output row norm | median output row norm | median source row norm | "
                 "max / median source |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for init in inits:
            r = reports.get(init)
            if not r:
                continue
            en = r.get("effective_neighbours")  # a map weighs the whole overlap: the program leaves it out
            L.append("| %s | %d | %d | %d | %d | %s | %.3f | %.3f | %.3f | %.1fx |" % (
                init, r["overlap"], r["no_positive_cosine_rows"], r["inflated_rows"], r.get("fallback_rows", 0),
                "%.1f (%.2f-%.0f)" % (en["median"], en["min"], en["max"]) if en else "-",
                r["max_output_row_norm"], r["median_output_row_norm"],
                r["median_source_row_norm"], r["max_output_row_norm"] / r["median_source_row_norm"]))
        L.append("")

    if fig1:
        L.append("## Figure 1 in miniature: k-NN overlap with de-small (k=%d)\n" % K)
        L.append("`clp-transfer similarity A B --k %d`: mean share of each token's %d nearest neighbours "
                 "(cosine, input embeddings) that two models on the same German tokenizer agree on. "
                 "A = de-small (64-dim, 2 layers); B as listed (128-dim, 4 layers; trained = after the "
                 "%d steps above, seed %d). Chance: k / (V - 1) = %d / %d = %.4f.\n"
                 % (K, K, meta["steps"], fig1["seed"], K, fig1["vocab"] - 1, K / (fig1["vocab"] - 1)))
        L.append("| B | before training | after training |")
        L.append("|---|---|---|")
        for init in inits:
            v = fig1["rows"].get(init)
            if v:
                L.append("| %s | %s | %s |" % (init, fmt(v.get("before"), 4), fmt(v.get("after"), 4)))
        L.append("")
    L.append(meta.get("footer", ""))
    with open(path, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")
    return "\n".join(L)


def similarity(clp, a, b):
    out = subprocess.run([clp, "similarity", a, b, "--k", str(K), "--json"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)["mean_overlap"]


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clp", required=True, help="clp-transfer binary")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (data order + random draws)")
    ap.add_argument("--inits", default=",".join(ALL_INITS), help="comma-separated subset of " + ",".join(ALL_INITS))
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=16)
    ap.add_argument("--eval-tokens", type=int, default=8192, help="validation slice (first N tokens)")
    ap.add_argument("--out", default=HERE, help="folder for results.csv, figure2.png, results.md")
    ap.add_argument("--workdir", default=None, help="temp folder for models (default: a new temp dir)")
    ap.add_argument("--fresh", action="store_true", help="discard an existing results.csv first")
    ap.add_argument("--report-only", action="store_true", help="re-render figure2.png/results.md from results.csv")
    ap.add_argument("--merge", default="", help="comma-separated --out folders of other runs (same settings) "
                    "whose results.csv/run_state.json are merged into this one before the report")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--device", default="cpu", help="torch device for training (default cpu; e.g. cuda: same "
                    "initialisations and batches, other float rounding, deterministic algorithms)")
    ap.add_argument("--note", default=None, help="text appended to results.md (kept in run_state.json)")
    ap.add_argument("--reference", default=None, help="an --out folder whose random and %s runs the report "
                    "pairs with (read only, whatever device they ran on; for a run of %s alone)"
                    % (NORM_REFERENCE, NORM_CANDIDATE))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.device != "cpu":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    seeds = [int(s) for s in args.seeds.split(",") if s != ""]
    inits = [i for i in args.inits.split(",") if i]
    bad = [i for i in inits if i not in ALL_INITS]
    if bad:
        ap.error("unknown init(s): %s" % ", ".join(bad))
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "results.csv")
    state_path = os.path.join(args.out, "run_state.json")  # diagnostics + Figure-1 numbers + meta
    rows = [] if args.fresh else read_csv(csv_path)
    state = {}
    if os.path.exists(state_path) and not args.fresh:
        with open(state_path) as f:
            state = json.load(f)
    reports = state.get("reports", {})
    fig1 = state.get("fig1")
    meta = dict(steps=args.steps, batch=args.batch, lr=args.lr, warmup=args.warmup, eval_every=args.eval_every,
                eval_tokens=args.eval_tokens)
    if args.device != "cpu":  # other rounding: never merged with CPU runs
        meta["device"] = args.device
    old = state.get("meta")
    if old and rows and any(old.get(k) != v for k, v in meta.items()):
        sys.exit("results.csv was made with other settings %s; use --fresh or the same settings" % old)

    t_start = time.time()
    if not args.report_only:
        tok = tinygpt.Tokenizer(HELPER)
        train_text, valid_text = tinygpt.corpus("de")
        train_ids, valid_ids = tok.encode(train_text), tok.encode(valid_text)
        valid_ids = valid_ids[:args.eval_tokens]
        log("German text: %d train tokens, %d validation tokens used; %s" % (len(train_ids), len(valid_ids),
                                                                           time.strftime("%H:%M:%S")))
        workdir = args.workdir or tempfile.mkdtemp(prefix="clp-figure2-")
        os.makedirs(workdir, exist_ok=True)
        fig1_rows = {}
        # Figure 1 numbers come from one seed only: the first seed of the first run
        fig1_seed = fig1["seed"] if fig1 else seeds[0]
        for seed in seeds:
            for init in inits:
                t0 = time.time()
                model, rep = make_init(init, seed, args.clp, workdir, tok)
                model.to(args.device)
                if rep is not None and init.startswith("clp-"):
                    reports[init] = {k: rep[k] for k in ("overlap", "no_positive_cosine_rows", "inflated_rows",
                                                         "fallback_rows", "effective_neighbours",
                                                         "max_output_row_norm", "median_output_row_norm",
                                                         "median_source_row_norm") if k in rep}
                before = os.path.join(workdir, "before-%s-seed%d" % (init, seed))
                after = os.path.join(workdir, "after-%s-seed%d" % (init, seed))
                if seed == fig1_seed:
                    tinygpt.save(model, model.config, before)
                    tok.save(before)
                rows = [r for r in rows if not (r["init"] == init and r["seed"] == seed)]
                cur = []

                def on_eval(step, ppl, init=init, seed=seed, cur=cur, t0=t0):
                    cur.append(dict(init=init, seed=seed, step=step, tokens=step * args.batch * N_POSITIONS,
                                    valid_ppl=ppl))
                    write_csv(csv_path, rows + cur)  # after every evaluation: a cut run keeps its curve
                    log("  %-15s seed %d  step %4d  valid ppl %10.2f  %5.0fs" % (init, seed, step, ppl,
                                                                                time.time() - t0))

                train(model, train_ids, valid_ids, args, seed, on_eval)
                rows += cur
                write_csv(csv_path, rows)
                if seed == fig1_seed:
                    tinygpt.save(model, model.config, after)
                    tok.save(after)
                    fig1_rows[init] = dict(before=similarity(args.clp, HELPER, before),
                                           after=similarity(args.clp, HELPER, after))
                    log("  %-15s k-NN overlap with de-small: before %.4f, after %.4f"
                        % (init, fig1_rows[init]["before"], fig1_rows[init]["after"]))
                    shutil.rmtree(before)
                    if init != "random":
                        shutil.rmtree(after)
                    else:
                        log("  trained-from-scratch German large model kept in %s" % after)
                log("%s seed %d done in %.0fs (total %.0fs)" % (init, seed, time.time() - t0, time.time() - t_start))
                state = dict(meta=meta, reports=reports, fig1=fig1, note=state.get("note"))
                if fig1_rows:
                    prev = fig1["rows"] if fig1 else {}
                    fig1 = dict(seed=fig1_seed, vocab=len(tok), rows=dict(prev, **fig1_rows))
                    state["fig1"] = fig1
                with open(state_path, "w") as f:
                    json.dump(state, f, indent=2)
        log("training done in %.0fs" % (time.time() - t_start))
    for other in [d for d in args.merge.split(",") if d]:
        with open(os.path.join(other, "run_state.json")) as f:
            ost = json.load(f)
        if any(ost["meta"].get(k) != v for k, v in meta.items()):
            sys.exit("%s was made with other settings %s" % (other, ost["meta"]))
        orows = read_csv(os.path.join(other, "results.csv"))
        keys = {(r["init"], r["seed"]) for r in orows}
        rows = [r for r in rows if (r["init"], r["seed"]) not in keys] + orows
        reports.update(ost.get("reports", {}))
        of1 = ost.get("fig1")
        if of1 and (not fig1 or fig1["seed"] == of1["seed"]):
            fig1 = dict(of1, rows=dict((fig1 or {}).get("rows", {}), **of1["rows"]))
        log("merged %d rows (%s) from %s" % (len(orows), ", ".join("%s/%d" % k for k in sorted(keys)), other))
    if args.merge:
        write_csv(csv_path, rows)
        with open(state_path, "w") as f:
            json.dump(dict(meta=meta, reports=reports, fig1=fig1), f, indent=2)
    if not rows:
        sys.exit("no results")
    if args.reference:  # for the report only: never written to this folder's results.csv
        own = {(r["init"], r["seed"]) for r in rows}
        borrowed = [r for r in read_csv(os.path.join(args.reference, "results.csv"))
                    if r["init"] in ("random", NORM_REFERENCE) and (r["init"], r["seed"]) not in own]
        with open(os.path.join(args.reference, "run_state.json")) as f:
            ref_state = json.load(f)
        if any(ref_state["meta"].get(k) != v for k, v in meta.items() if k != "device"):
            sys.exit("%s was made with other settings %s" % (args.reference, ref_state["meta"]))
        seeds_own = {r["seed"] for r in rows}
        rows = rows + [r for r in borrowed if r["seed"] in seeds_own]
        if NORM_REFERENCE in ref_state.get("reports", {}):
            reports = dict(reports, **{NORM_REFERENCE: ref_state["reports"][NORM_REFERENCE]})
        log("paired with random and %s from %s (trained on %s)"
            % (NORM_REFERENCE, args.reference, ref_state["meta"].get("device", "cpu")))
    seeds_present = sorted({r["seed"] for r in rows})
    if args.note is not None:
        state = dict(meta=meta, reports=reports, fig1=fig1, note=args.note)
        with open(state_path, "w") as f:
            json.dump(state, f, indent=2)
    meta_plot = dict(meta, seeds=seeds_present, footer=state.get("note") or "")
    plot(rows, os.path.join(args.out, "figure2.png"), meta_plot)
    md = report_md(rows, reports, fig1, meta_plot, os.path.join(args.out, "results.md"))
    print(md)


if __name__ == "__main__":
    main()
