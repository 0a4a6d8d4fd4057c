"""Every term the console and the report use, defined once.

A term is registered here with the patterns it is written as (regular expressions over the
printed text) and one definition in plain words. Three renderers read this registry: the
page docs/glossary.md (`python -m archaudit.glossary > docs/glossary.md`; a test checks that it
is current), the report's "Terms" section (each term the page uses, with an anchor that every
place it appears links to), and the console's one-line pointer (`POINTER`).

    python -m archaudit.glossary            # prints docs/glossary.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

DOC = "docs/glossary.md"
POINTER = f"terms: {DOC}"
"""The line the console prints under its verdicts: where every word above is defined."""


@dataclass(frozen=True, kw_only=True)
class Term:
    """One term: how it is written, what it means, and where it is explained at length."""

    name: str
    """As the glossary's heading writes it."""
    anchor: str
    """The id of its entry: `#term-<anchor>` on the report, `#<anchor>` on docs/glossary.md."""
    patterns: tuple[str, ...]
    """Regular expressions for the ways the console and the report write it."""
    definition: str
    more: str = ""
    """The docs page that explains it at length ("" when this entry says it all)."""
    link: bool = True
    """Link each place it appears on the report (False for one-letter symbols such as Δ,
    which appear in every table: the Terms section still lists them)."""

    @property
    def html_id(self) -> str:
        return f"term-{self.anchor}"


TERMS: tuple[Term, ...] = (
    Term(
        name="Δ (delta)",
        anchor="delta",
        patterns=(r"Δ(?![̂])",),
        definition="An arm's mean over its seeds minus the baseline's, signed so that positive "
        "is better: for a lower-is-better metric such as val_loss, Δ = baseline − arm. Each "
        "table's first line says which way its metric points.",
        more="docs/verdicts.md",
        link=False,
    ),
    Term(
        name="noise floor σ",
        anchor="noise-floor",
        patterns=(r"\bnoise floor\b", r"σ = "),
        definition="The seed-to-seed standard deviation of a metric, pooled over the baseline's "
        "seeds and every arm with two or more seeds, printed with its 95% interval and degrees "
        "of freedom (df). Effects and MDEs are also given in units of σ.",
        more="docs/stats.md",
        link=False,
    ),
    Term(
        name="p and p_adj",
        anchor="p-adj",
        patterns=(r"\bp_adj\b", r"corrected p"),
        definition="p is one arm's test against the baseline; p_adj is that p after the "
        "correction over the m arms judged together (Holm by default), so that the whole "
        "family holds the error rate α.",
        more="docs/stats.md",
    ),
    Term(
        name="Welch test",
        anchor="welch",
        patterns=(r"\b[Ww]elch(–Satterthwaite)?\b",),
        definition="The t-test that gives each arm its own variance (its own seeds) instead of "
        "assuming every arm is as noisy as the baseline; Welch–Satterthwaite df are its degrees "
        "of freedom. A single seed cannot show its spread and is judged against a 6σ bound.",
        more="docs/stats.md",
    ),
    Term(
        name="Holm correction",
        anchor="holm",
        patterns=(r"\b[Hh]olm\b",),
        definition="A step-down correction for testing m arms at once: the smallest p is "
        "compared with α/m, the next with α/(m − 1), and so on; it controls the family-wise "
        "error rate. Bonferroni, Dunnett and BH (which controls the FDR instead) are the "
        "alternatives `--correction` offers.",
        more="docs/stats.md",
    ),
    Term(
        name="family-wise error rate",
        anchor="fwer",
        patterns=(r"family-wise (error|false-positive) rate", r"\bFWER\b"),
        definition="The chance that an audit declares at least one arm an improver or a "
        "regressor when no arm differs from the baseline. Each table states the design's rate "
        "measured by simulation, under normal noise and the worst model, panel and beyond.",
        more="docs/verdicts.md",
    ),
    Term(
        name="FDR",
        anchor="fdr",
        patterns=(r"\bFDR\b",),
        definition="False discovery rate: the expected share of declared arms that are false. "
        "Benjamini–Hochberg (BH) controls it; it is weaker than the family-wise rate.",
        more="docs/stats.md",
    ),
    Term(
        name="calibrated level α′",
        anchor="calibrated-level",
        patterns=(r"calibrated level", r"α′"),
        definition="The level that p_adj is compared with instead of α: the largest level ≤ α "
        "at which simulated null audits of this design declare something at most α of the "
        "time under every model of the noise panel and this audit's own profile. Welch with "
        "few seeds is liberal when arms differ in spread; α′ pays for that.",
        more="docs/verdicts.md",
    ),
    Term(
        name="noise panel",
        anchor="noise-panel",
        patterns=(r"noise panel",),
        definition="The eight seed-noise models every design is simulated under: normal, t3 "
        "(heavy tails), lognormal:0.5 and lognormal:1 (skew), hetero:3, hetero:6, hetero:3:3 "
        "and hetero:6:3 (wider arms). A fixed design's level α′ is calibrated over these and "
        "six beyond them: one arm 10, 20 or 50 times as wide (profile:F:1) and the baseline "
        "alone 3, 6 or 10 times as wide (base:F). A rule is trusted where its error rate holds "
        "over all of them; tables print the normal rate and the worst, panel and beyond.",
        more="docs/verdicts.md",
    ),
    Term(
        name="hetero:F:K, base:F, t3, lognormal:S",
        anchor="noise-models",
        patterns=(
            r"\bhetero:\d+(:\d+)?",
            r"\bbase:\d+",
            r"\blognormal:[\d.]+",
            r"\bt3\b",
        ),
        definition="Models of the noise panel. hetero:F:K: K arms (1 when K is left out) whose "
        "seeds spread F times as wide as everyone else's (hetero:6 = one arm 6× as noisy); "
        "base:F: the baseline alone F times as wide as the arms (every comparison shares it); "
        "t3: Student's t with 3 df, heavy tails; lognormal:S: skewed noise, S the σ of the log.",
        more="docs/verdicts.md",
    ),
    Term(
        name="profile:F:K",
        anchor="profile",
        patterns=(r"\bprofile:\d+(:\d+)?",),
        definition="This audit's own noise model, added to the panel when an arm may be wider "
        "than the panel's 6×: K arms with seeds F times as wide as σ, F the upper confidence "
        "bound of the widest arm's spread (rounded up). The calibrated level covers it too.",
        more="docs/verdicts.md",
    ),
    Term(
        name="MDE",
        anchor="mde",
        patterns=(r"\bMDE\b", r"minimum detectable effect"),
        definition="Minimum detectable effect: the smallest true Δ (in σ, and in metric units) "
        "the design finds with the stated power (80% by default) at its corrected level. A "
        "within-noise verdict rules out effects larger than the MDE, not every effect.",
        more="docs/stats.md",
    ),
    Term(
        name="within-noise",
        anchor="within-noise",
        patterns=(r"\bwithin-noise\b",),
        definition="The verdict of an arm whose Δ is not distinguishable from seed noise at the "
        "corrected level (or is under 2σ, which is never declared).",
        more="docs/verdicts.md",
    ),
    Term(
        name="improver, regressor",
        anchor="improver",
        patterns=(r"(?<![-\w])(improver|regressor)\b",),
        definition="An arm whose Δ passes the corrected test and the 2σ floor: better "
        "(improver) or worse (regressor) than the baseline, with the family's error rate held.",
        more="docs/verdicts.md",
    ),
    Term(
        name="nominal-",
        anchor="nominal",
        patterns=(r"\bnominal-(improver|regressor)\b",),
        definition="Significant before the correction over the arms (raw p < α) but not after "
        "it: a lead to follow with more seeds, not a finding.",
        more="docs/verdicts.md",
    ),
    Term(
        name="candidate-",
        anchor="candidate",
        patterns=(r"\bcandidates?(-improver|-regressor)?\b",),
        definition="A single-seed arm whose Δ clears the single-seed bound: one seed cannot show "
        "its spread, so it is a candidate until a second seed confirms it.",
        more="docs/verdicts.md",
    ),
    Term(
        name="grade A–D",
        anchor="grade",
        patterns=(r"\bgrades? [A-D]\b", r"\bgrade\b"),
        definition="How much evidence stands behind a verdict: A meets all five criteria (3+ "
        "seeds, downstream evaluation, 2+ scales, a shared recipe, a corrected test); each "
        "missing criterion lowers it one letter, down to D. 'grade B (missing: 3+ seeds)' "
        "names what is missing.",
        more="docs/verdicts.md",
    ),
    Term(
        name="R5, R6, R7",
        anchor="rules",
        patterns=(r"\bR[5-7]\b",),
        definition="Protocol rules an audit is checked against. R5: the noise floor needs at "
        "least 3 baseline seeds. R6: an arm that changes what attention outputs (or declares "
        "it) must be judged downstream, not by loss alone. R7: an arm that touches the "
        "residual path or normalisation must be trained at 2+ scales.",
        more="docs/protocol.md",
    ),
    Term(
        name="duty",
        anchor="duty",
        patterns=(r"\bdut(y|ies)\b",),
        definition="What the protocol asks of an arm because of what it modifies (a downstream "
        "duty under R6, a cross-scale duty under R7); the modification registry declares it "
        "and the `duties` column of results.csv carries it.",
        more="docs/protocol.md",
    ),
    Term(
        name="1.4826·MAD, outlier seed",
        anchor="outlier",
        patterns=(r"1\.4826", r"\boutlier seeds?\b", r"robust σ"),
        definition="The robust σ: 1.4826 × the median absolute deviation (MAD) of every seed "
        "from its own arm's median, which equals σ for normal noise and ignores one wild seed. "
        "A seed more than 5 robust σ from its arm's median is flagged as an outlier seed; the "
        "tests are left as they are.",
        more="docs/stats.md",
    ),
    Term(
        name="sequential loop",
        anchor="sequential",
        patterns=(
            r"\bsequential\b",
            r"O(?:'|&#x27;)Brien–Fleming",
            r"\bfutil(e|ity)\b",
            r"\bboundary\b",
        ),
        definition="`run --until-settled`: seeds are added round by round only to arms whose "
        "verdict can still change. Each look is tested at an O'Brien–Fleming boundary (strict "
        "early, near α at the end) so the looks together hold α; an arm stops as settled, or "
        "as futile when more seeds are unlikely to change its verdict.",
        more="docs/sequential.md",
    ),
    Term(
        name="exploratory",
        anchor="exploratory",
        patterns=(r"\bexploratory\b",),
        definition="A metric that is not one of the audit's primary metrics: judged at α on "
        "its own, outside the audit's error budget.",
        more="docs/verdicts.md",
    ),
    Term(
        name="SNR",
        anchor="snr",
        patterns=(r"\bSNR\b", r"signal-to-noise"),
        definition="Signal-to-noise of a metric at a scale: the spread of the arm means over "
        "the seed σ, beside the SNR that pure seed noise gives (1/√seeds). Near that value the "
        "metric cannot tell these arms apart.",
        more="docs/stats.md",
    ),
    Term(
        name="decoupled",
        anchor="decoupled",
        patterns=(r"\bdecoupl(ed|ing)\b",),
        definition="An arm whose loss verdict and downstream verdict disagree (better on loss, "
        "flat or worse downstream, or the reverse), shown by an equivalence test rather than "
        "by a non-significant one.",
        more="docs/stats.md",
    ),
    Term(
        name="single-scale prediction",
        anchor="single-scale",
        patterns=(r"\bsingle[-_]scale\b",),
        definition="Predicting an arm's Δ at the target scale as its Δ̂ at the largest trained "
        "scale: the baseline every extrapolation is backtested against.",
        more="docs/predict.md",
    ),
    Term(
        name="slope rule",
        anchor="slope-rule",
        patterns=(r"\bslope[ _]rule\b",),
        definition="The target-scale interval of every arm: around its Δ̂ at the largest trained "
        "scale, following the arm's own slope along the ladder, wide enough for it to fade or to "
        "go on as a line, at the stated level whatever the slope's size. The prediction is that "
        "Δ̂ held inside it.",
        more="docs/predict.md",
    ),
    Term(
        name="stack",
        anchor="stack",
        patterns=(r"\bstack(ed)?\b",),
        definition="A mixture of the single-scale prediction and fitted scaling curves, its "
        "weights chosen on held-out scales of the ladder. It gives the point (inside the slope "
        "rule's interval) only when it wins on held-out arms and the ladder is quiet (below).",
        more="docs/predict.md",
    ),
    Term(
        name="backtest",
        anchor="backtest",
        patterns=(r"\bbacktest(ed|s)?\b",),
        definition="Every trained scale held out in turn and predicted from the smaller ones: "
        "the coverage of the intervals and the share of signs and orderings it got right, "
        "beside the single-scale prediction's.",
        more="docs/predict.md",
    ),
    Term(
        name="√τ_b, √τ_c",
        anchor="drift",
        patterns=(r"√τ_[bc]", r"\bτ_[bc]\b"),
        definition="How far the arms' Δ moves as the model grows: √τ_b is the spread of the "
        "arms' drift (Δ per unit of log N), √τ_c of their bend (per unit of log N squared). "
        "They widen the fitted curves' intervals in the backtest with the distance predicted.",
        more="docs/predict.md",
    ),
    Term(
        name="Δ̂²/Var(Δ̂)",
        anchor="quiet-ladder",
        patterns=(r"Δ̂²/Var\(Δ̂\)",),
        definition="Each trained Δ̂ squared over its seed variance, averaged over arms and "
        "scales: about 1 when every effect is seed noise. Below 1.25 the ladder is quiet, the "
        "condition under which the stack may give the point.",
        more="docs/predict.md",
    ),
    Term(
        name="P(sign holds)",
        anchor="sign-holds",
        patterns=(r"P\(sign holds\)",),
        definition="The probability that an arm's Δ at the target has the sign of its Δ̂ at the "
        "largest trained scale, from normal draws whose central share is the prediction "
        "interval.",
        more="docs/predict.md",
    ),
    Term(
        name="IQM",
        anchor="iqm",
        patterns=(r"\bIQM\b", r"interquartile mean"),
        definition="Interquartile mean: the mean of the middle half of an arm's task scores "
        "over seeds and tasks (rliable's aggregate), less swayed by one task than the mean.",
        more="docs/aggregates.md",
    ),
    Term(
        name="tuned",
        anchor="tuned",
        patterns=(r"\btuned\b",),
        definition="An arm trained under another recipe than the audit's shared one (allowed "
        "only when marked `tuned = true`); every result of it says so.",
        more="docs/arms.md",
    ),
)


def term(anchor: str) -> Term:
    """The term registered under `anchor`."""
    found = {t.anchor: t for t in TERMS}
    if anchor not in found:
        from archaudit.errors import ConfigError, did_you_mean

        raise ConfigError(f"no glossary term {anchor!r}{did_you_mean(anchor, list(found))}")
    return found[anchor]


@cache
def _compiled(t: Term) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in t.patterns))


def used_in(texts: Iterable[str]) -> tuple[Term, ...]:
    """The terms written somewhere in `texts`, in the registry's order."""
    joined = "\n".join(texts)
    return tuple(t for t in TERMS if _compiled(t).search(joined))


@cache
def _linker() -> re.Pattern[str]:
    alternatives = [
        f"(?P<{t.anchor.replace('-', '_')}>{'|'.join(f'(?:{p})' for p in t.patterns)})"
        for t in TERMS
        if t.link
    ]
    return re.compile("|".join(alternatives))


def link_terms(escaped: str) -> str:
    """HTML text (already escaped) with each term that `link`s wrapped in a link to its entry
    in the report's Terms section. The patterns match no markup: the text holds none."""

    def anchor(match: re.Match[str]) -> str:
        name = match.lastgroup
        assert name is not None
        return f'<a class="term" href="#term-{name.replace("_", "-")}">{match.group(0)}</a>'

    return _linker().sub(anchor, escaped)


_LINKED = re.compile(r'<a class="term" href="#term-[a-z-]+">(.*?)</a>')


def unlinked(page: str) -> str:
    """HTML with the term links `link_terms` made taken out again: the page's own text."""
    return _LINKED.sub(r"\1", page)


def markdown() -> str:
    """docs/glossary.md: every term, in the registry's order, with its anchor."""
    lines = [
        "# Glossary",
        "",
        "Every term the console and the report use, defined once. Generated from",
        "`src/archaudit/glossary.py` by `python -m archaudit.glossary > docs/glossary.md`",
        "(a test checks that this page is current); the report's Terms section shows the",
        "entries of the terms on that page, and each place a term appears links to it.",
        "",
        *(f"- [{t.name}](#{t.anchor})" for t in TERMS),
    ]
    for t in TERMS:
        more = f" More: [{t.more}]({_relative(t.more)})." if t.more else ""
        lines += ["", f'<a id="{t.anchor}"></a>', f"## {t.name}", "", t.definition + more]
    return "\n".join(lines) + "\n"


def _relative(doc: str) -> str:
    """A docs/ path as seen from docs/glossary.md."""
    return doc.removeprefix("docs/")


if __name__ == "__main__":
    print(markdown(), end="")
