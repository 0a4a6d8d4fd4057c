"""Issue 41, item 6: tests that might recover the power the calibration cost, each calibrated
over the whole noise panel by the same rule as the tool's α′ and compared with the tool's
calibrated Welch on the same draws.

Candidates (balanced fixed designs, Holm, the 2σ rule unchanged):

- `welch`: the tool's test (each arm's own variance), at its panel level. Its level here is
  checked against `design_level` (the tool's cached α′), which validates this kernel.
- `moderated:d0`: limma-style moderated variances (Smyth 2004, Stat. Appl. Genet. Mol. Biol.
  3:3): every group's variance (baseline and arms) shrunk toward the audit's pooled σ̂² with
  d0 prior degrees of freedom, s̃² = (d0·σ̂² + d·s²)/(d0 + d); Welch–Satterthwaite df on the
  moderated variances (dᵢ + d0 each).
- `moderated:eb`: the same with d0 and s0² estimated from the audit's own group variances by
  limma's `fitFDist` moment method (d0 = ∞ when the variances are no more spread than χ²).
- `pooled`: d0 = ∞, the equal-variance t.

Each candidate's level is the largest ≤ α whose rate is ≤ α − 2 MC s.e. under every panel model
(calibration draws, seed 1); its panel worst is then measured on fresh draws (seed 0) and its MDE
at 80% power by bisection on common draws under normal noise (seed 3), with the power at the
tool's printed MDE.

    PYTHONPATH=src nice -n 10 python benchmarks/power_candidates.py [--audits 4000]

Writes benchmarks/power_candidates.json. Its `tool_level` and `printed_mde` fields are the
tool's own at the time of the run (the stored JSON: plain Welch, before the tool adopted the
moderated t); the `welch` rows are this benchmark's own kernel.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.special import digamma, polygamma, stdtr

from archaudit.stats import AuditDesign
from archaudit.stats.inference.corrections import adjust_pvalues
from archaudit.stats.records.noise_panel import PANEL, NoiseModel, parse_one
from archaudit.stats.records.verdicts import NOISE_SIGMAS
from archaudit.stats.simulation.calibrate import design_level, level_from_rates
from archaudit.stats.simulation.design_rate import arm_mde
from archaudit.stats.simulation.null_kernel import arm_sigmas
from archaudit.stats.simulation.simulate import binomial_se

ALPHA = 0.05
DESIGNS = {
    "1 × 2, baseline 3": ((2,), 3),
    "2 × 2, baseline 3": ((2, 2), 3),
    "3 × 2, baseline 3": ((2, 2, 2), 3),
    "2 × 3, baseline 3": ((3, 3), 3),
    "5 × 2, baseline 3": ((2,) * 5, 3),
    "19 × 2, baseline 3": ((2,) * 19, 3),
    "19 × 3, baseline 3": ((3,) * 19, 3),
    "19 × 5, baseline 5": ((5,) * 19, 5),
}
CANDIDATES = ("welch", "moderated:1", "moderated:2", "moderated:4", "moderated:eb", "pooled")
WIDE = "hetero:20:{k}"
"""Arms far wider than the panel's widest (6×): what the audit's profile model must then cover."""


def draw(design: AuditDesign, audits: int, seed: int, noise: NoiseModel, effect: float = 0.0):
    """(B, n₀) baseline and (B, m, n) arm values, `effect` σ planted on arm 0."""
    rng = np.random.default_rng(seed)
    base = noise.draw(rng, (audits, design.baseline_seeds))
    n = design.arm_seeds[0]
    sigmas = arm_sigmas(design, noise, 1 if effect else 0)
    arms = noise.draw(rng, (audits, design.m, n)) * sigmas[None, :, None]
    arms[:, 0, :] += effect
    return base, arms


def trigamma_inverse(x: np.ndarray) -> np.ndarray:
    """y with ψ′(y) = x (limma's Newton iteration, vectorised)."""
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = polygamma(1, y)
        y = y + tri * (1.0 - tri / x) / polygamma(2, y)
    return y


def eb_prior(variances: np.ndarray, dfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B,) d0 and s0² from each audit's (B, g) group variances with (g,) df (fitFDist)."""
    e = np.log(variances) - digamma(dfs / 2) + np.log(dfs / 2)
    mean = e.mean(axis=1)
    excess = e.var(axis=1, ddof=1) - polygamma(1, dfs / 2).mean()
    finite = excess > 0
    d0 = np.full(len(e), np.inf)
    d0[finite] = 2.0 * trigamma_inverse(excess[finite])
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.where(finite, np.exp(mean + digamma(d0 / 2) - np.log(d0 / 2)), np.exp(mean))
    return d0, s0


def moderated(var: np.ndarray, d: float, prior: np.ndarray, d0: np.ndarray) -> np.ndarray:
    """Variances shrunk toward `prior` with `d0` prior df (∞: the prior itself)."""
    d0 = np.broadcast_to(d0, var.shape)
    prior = np.broadcast_to(prior, var.shape)
    with np.errstate(invalid="ignore"):
        out = (d0 * prior + d * var) / (d0 + d)
    return np.where(np.isinf(d0), prior, out)


def declaring(candidate: str, base: np.ndarray, arms: np.ndarray) -> tuple[np.ndarray, ...]:
    """(B, m) Holm-corrected p, |Δ| >= 2σ̂ and Δ of the candidate's test."""
    n0, n = base.shape[1], arms.shape[2]
    var0, var = base.var(axis=1, ddof=1), arms.var(axis=2, ddof=1)
    dof = (n0 - 1) + arms.shape[1] * (n - 1)
    pooled = ((n0 - 1) * var0 + (n - 1) * var.sum(axis=1)) / dof
    delta = arms.mean(axis=2) - base.mean(axis=1)[:, None]
    kind, _, arg = candidate.partition(":")
    if kind == "pooled":
        d0, prior = np.full(len(base), np.inf), pooled
    elif arg == "eb":
        groups = np.concatenate([var0[:, None], var], axis=1)
        dfs = np.array([n0 - 1] + [n - 1] * arms.shape[1], dtype=float)
        d0, prior = eb_prior(groups, dfs)
    else:
        d0, prior = np.full(len(base), float(arg or 0)), pooled
    m0 = moderated(var0, n0 - 1, prior, d0)
    m1 = moderated(var, n - 1, prior[:, None], d0[:, None])
    se_a, se_b = m1 / n, (m0 / n0)[:, None]
    df_a = np.minimum((n - 1) + d0, dof)[:, None]
    df_b = np.minimum((n0 - 1) + d0, dof)[:, None]
    df = (se_a + se_b) ** 2 / (se_a**2 / df_a + se_b**2 / df_b)
    p = 2.0 * stdtr(df, -np.abs(delta / np.sqrt(se_a + se_b)))
    beyond = np.abs(delta) >= NOISE_SIGMAS * np.sqrt(pooled)[:, None]
    return adjust_pvalues(p, "holm"), beyond, delta


def declaring_level(candidate: str, base: np.ndarray, arms: np.ndarray) -> np.ndarray:
    p_adj, beyond, _ = declaring(candidate, base, arms)
    return np.where(beyond, p_adj, np.inf).min(axis=1)


def panel_level(candidate: str, design: AuditDesign, audits: int) -> float:
    return min(
        level_from_rates(
            declaring_level(candidate, *draw(design, audits, 1, parse_one(name))), ALPHA
        )
        for name in PANEL
    )


def panel_worst(candidate: str, design: AuditDesign, level: float, audits: int) -> dict:
    rates = {
        name: float(
            np.mean(declaring_level(candidate, *draw(design, audits, 0, parse_one(name))) < level)
        )
        for name in PANEL
    }
    name = max(rates, key=lambda k: rates[k])
    se = binomial_se(max(rates[name], 1.0 / audits), audits)
    return {"worst": rates[name], "worst_model": name, "se": se,
            "ok": rates[name] <= ALPHA + 2 * se}  # fmt: skip


def planted_power(
    candidate: str, design: AuditDesign, level: float, effect: float, audits: int, seed: int
) -> float:
    """Share of audits declaring the planted arm an improver (normal noise)."""
    values = draw(design, audits, seed, parse_one("normal"), effect)
    p_adj, beyond, delta = declaring(candidate, *values)
    return float(np.mean((p_adj[:, 0] < level) & beyond[:, 0] & (delta[:, 0] > 0)))


def mde(candidate: str, design: AuditDesign, level: float, audits: int) -> float:
    low, high = 0.0, 128.0
    for _ in range(12):
        mid = (low + high) / 2
        found = planted_power(candidate, design, level, mid, audits, 3)
        low, high = (low, mid) if found >= 0.8 else (mid, high)
    return high


def evaluate(name: str, seeds: tuple, base: int, audits: int) -> dict:
    design = AuditDesign(seeds, base)
    printed = arm_mde(design, seeds[0])
    out: dict = {"tool_level": design_level(design), "printed_mde": printed, "candidates": {}}
    for candidate in CANDIDATES:
        level = panel_level(candidate, design, audits)
        found = mde(candidate, design, level, audits)
        out["candidates"][candidate] = {
            "level": level,
            **panel_worst(candidate, design, level, audits),
            "mde": found,
            "power_at_mde_fresh": planted_power(candidate, design, level, found, audits, 4),
            "power_at_printed": planted_power(candidate, design, level, printed, audits, 4),
            **wide_arms(candidate, design, level, audits),
        }
        print(name, candidate, out["candidates"][candidate], flush=True)
    return out


def wide_arms(candidate: str, design: AuditDesign, level: float, audits: int) -> dict:
    """The rate at the panel's level when min(2, m) arms are 20× wide, and the level and MDE when
    that model is calibrated too (as the audit's profile model would be)."""
    model = parse_one(WIDE.format(k=min(2, design.m)))
    rate = float(np.mean(declaring_level(candidate, *draw(design, audits, 0, model)) < level))
    wide = level_from_rates(declaring_level(candidate, *draw(design, audits, 1, model)), ALPHA)
    covered = min(level, wide)
    return {"wide_model": model.spec, "wide_rate_at_panel_level": rate,
            "wide_level": covered, "wide_mde": mde(candidate, design, covered, audits)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--audits", type=int, default=4000, help="audits per panel model")
    args = parser.parse_args()
    started = time.process_time()
    result = {name: evaluate(name, *spec, args.audits) for name, spec in DESIGNS.items()}
    result["audits"] = args.audits
    result["cpu_s"] = time.process_time() - started
    print_table(result)
    Path(__file__).with_name("power_candidates.json").write_text(json.dumps(result, indent=1))


def print_table(result: dict) -> None:
    print("\n| design | test | level | panel's worst (fresh) | MDE (simulated; power there, "
          "fresh) | 20× arms: rate at that level; level and MDE covering them |\n"
          "|---|---|---|---|---|---|")  # fmt: skip
    for name in DESIGNS:
        for candidate, r in result[name]["candidates"].items():
            flag = "" if r["ok"] else " **ABOVE**"
            print(
                f"| {name} | {candidate} | {r['level']:.2e} | {r['worst']:.3f} ± {r['se']:.3f} "
                f"({r['worst_model']}){flag} | {r['mde']:.2f} σ ({r['power_at_mde_fresh']:.3f}) "
                f"| {r['wide_rate_at_panel_level']:.3f}; {r['wide_level']:.2e}, "
                f"{r['wide_mde']:.2f} σ |"
            )
    print(f"\n{result['audits']:,} audits per model; CPU {result['cpu_s']:.0f} s")


if __name__ == "__main__":
    main()
