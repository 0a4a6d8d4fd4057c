"""Issues 10 and 21: the sequential design's family-wise error under the null (normal noise and
the noise panel's worst) and its power and runs with planted effects, next to the tool's fixed
default (Welch, every arm k seeds) on the same draws. Power is given per planted arm and as
"all found" (audits in which every planted arm is declared).

    PYTHONPATH=src python benchmarks/sequential_design.py
"""

from archaudit.stats.simulation.sequential import SequentialRule, simulate_sequential

EFFECTS = (3.0, 3.0, 3.0, 8.0, 8.0)


def main() -> None:
    for top in (5, 6):
        rule = SequentialRule(max_seeds=top, calibrated=True)
        null = simulate_sequential(arms=20, rule=rule, audits=2000, noise="panel")
        worst = null.panel_worst
        print(
            f"null, 20 arms, max {top} seeds: FWER {null.fwer:.4f} ± {null.fwer_se:.4f} (normal), "
            f"panel worst {worst.fwer:.4f} ± {worst.fwer_se:.4f} ({worst.noise}); "
            f"{null.runs_mean:.1f} runs; fixed {top}-seed Welch: {null.fixed_runs} runs, "
            f"FWER {null.fixed_fwer:.4f}",
            flush=True,
        )
    for top, fixed in ((5, 5), (6, 5), (6, 6)):
        sim = simulate_sequential(
            arms=20,
            rule=SequentialRule(max_seeds=top, calibrated=True),
            audits=4000,
            effects=EFFECTS,
            fixed_seeds=fixed,
            seed=1,
        )
        print(
            f"3 arms at 3σ, 2 at 8σ, 15 null; sequential ≤ {top}: per arm {sim.power_planted:.3f} "
            f"(3σ {sim.power['3']:.3f}), all found {sim.all_found:.3f}, {sim.runs_mean:.1f} runs, "
            f"{sim.rounds_mean:.2f} rounds, FWER {sim.fwer:.4f} | fixed {fixed}-seed Welch: per "
            f"arm {sim.fixed_power_planted:.3f} (3σ {sim.fixed_power['3']:.3f}), all found "
            f"{sim.fixed_all_found:.3f}, {sim.fixed_runs} runs",
            flush=True,
        )


if __name__ == "__main__":
    main()
