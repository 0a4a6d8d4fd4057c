"""Issue 21, items 1–2 and 5: the family-wise error rate of every design the tool offers, under
every model of the noise panel, with the default (robust) rule; the user assumptions
(`--equal-variance`, `--reference normal`) beside it; and the moderated t (Smyth 2004, limma's
squeezeVar/fitFDist) measured as the alternative for multi-seed arms.

    PYTHONPATH=src python benchmarks/noise_panel.py [--audits 4000]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from scipy.special import digamma, polygamma, stdtr

from archaudit.stats import AuditDesign
from archaudit.stats.records.noise_panel import PANEL, parse_one
from archaudit.stats.simulation.sequential import SequentialRule, sequential_null_fwer
from archaudit.stats.simulation.simulate import null_fwer

MIXED = (1,) * 10 + (2,) * 5 + (3,) * 4
FIXED = {
    "19×1, base 3": AuditDesign((1,) * 19, 3),
    "19×1, base 10": AuditDesign((1,) * 19, 10),
    "mixed": AuditDesign(MIXED, 3),
    "19×2": AuditDesign((2,) * 19, 3),
    "19×3": AuditDesign((3,) * 19, 3),
    "19×3 Dunnett": AuditDesign((3,) * 19, 3, correction="dunnett"),
}
ASSUMED = {
    "19×2 --equal-variance": AuditDesign((2,) * 19, 3, equal_variance=True),
    "19×1 base 10 --reference normal": AuditDesign((1,) * 19, 10, reference="normal"),
}
SEQUENTIAL = {
    "sequential ≤5": SequentialRule(max_seeds=5, calibrated=True),
    "sequential ≤6": SequentialRule(max_seeds=6, calibrated=True),
}


def trigamma_inverse(x: np.ndarray) -> np.ndarray:
    """limma's trigammaInverse: Newton's method on 1/trigamma (its guards for tiny and huge x)."""
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = polygamma(1, y)
        y = y + tri * (1.0 - tri / x) / polygamma(2, y)
    return np.where(x > 1e7, 1.0 / np.sqrt(x), np.where(x < 1e-6, 1.0 / x, y))


def squeeze_var(var: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """limma's fitFDist + squeezeVar over the last axis: (posterior variances, prior df)."""
    z = np.log(var)
    e = z - digamma(df / 2) + np.log(df / 2)
    g = var.shape[-1]
    emean = e.mean(axis=-1, keepdims=True)
    evar = ((e - emean) ** 2).sum(axis=-1, keepdims=True) / (g - 1)
    evar = evar - polygamma(1, df / 2).mean(axis=-1, keepdims=True)
    positive = evar > 0
    d0 = np.where(positive, 2 * trigamma_inverse(np.where(positive, evar, 1.0)), np.inf)
    s0 = np.exp(emean + digamma(np.minimum(d0, 1e6) / 2) - np.log(np.minimum(d0, 1e6) / 2))
    s0 = np.where(positive, s0, np.exp(emean))
    post = np.where(np.isinf(d0), s0, (np.minimum(d0, 1e12) * s0 + df * var) / (d0 + df))
    return post, d0


def moderated_fwer(design: AuditDesign, audits: int, noise: str, seed: int = 0) -> float:
    """Null FWER of the moderated Welch t (baseline and every arm's variance squeezed toward one
    prior), Holm at α; balanced designs with >= 2 seeds per arm only."""
    from archaudit.stats.inference.corrections import adjust_pvalues
    from archaudit.stats.records.verdicts import within_noise

    model, rng = parse_one(noise), np.random.default_rng(seed)
    n, n0, m = design.arm_seeds[0], design.baseline_seeds, design.m
    base = model.draw(rng, (audits, n0))
    sigmas = model.arm_sigmas(m)[::-1]
    arms = model.draw(rng, (audits, m, n)) * sigmas[None, :, None]
    var = np.concatenate([base.var(axis=1, ddof=1)[:, None], arms.var(axis=2, ddof=1)], axis=1)
    df = np.array([n0 - 1] + [n - 1] * m, dtype=float)[None, :]
    post, d0 = squeeze_var(var, np.broadcast_to(df, var.shape))
    dfs = df + np.minimum(d0, 1e6)
    se_arm, se_base = post[:, 1:] / n, post[:, :1] / n0
    se2 = se_arm + se_base
    welch_df = se2**2 / (se_arm**2 / dfs[:, 1:] + se_base**2 / dfs[:, :1])
    delta = arms.mean(axis=2) - base.mean(axis=1)[:, None]
    p = 2 * stdtr(welch_df, -np.abs(delta / np.sqrt(se2)))
    pooled = np.sqrt((var * df).sum(axis=1) / df.sum())[:, None]
    declared = (adjust_pvalues(p, "holm") < design.alpha) & ~within_noise(delta, pooled)
    return float(np.mean(np.any(declared, axis=1)))


def row(name: str, rates: list[float]) -> str:
    return f"| {name} | " + " | ".join(f"{r:.3f}" for r in rates) + f" | **{max(rates):.3f}** |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=4000)
    parser.add_argument("--sequential-audits", type=int, default=2000)
    args = parser.parse_args()
    print("| design (default rule) | " + " | ".join(PANEL) + " | worst |")
    print("|---" * (len(PANEL) + 2) + "|")
    for name, design in {**FIXED, **ASSUMED}.items():
        rates = [null_fwer(design, args.audits, 0, parse_one(spec)) for spec in PANEL]
        print(row(f"{name} ({design.test})", rates), flush=True)
    for name, rule in SEQUENTIAL.items():
        rates = [
            sequential_null_fwer(20, rule, args.sequential_audits, 0, parse_one(spec))
            for spec in PANEL
        ]
        print(row(f"{name}, 20 arms", rates), flush=True)
    for name in ("19×2", "19×3"):
        design = dataclasses.replace(FIXED[name])
        rates = [moderated_fwer(design, args.audits, spec) for spec in PANEL]
        print(row(f"{name} moderated t (limma)", rates), flush=True)


if __name__ == "__main__":
    main()
