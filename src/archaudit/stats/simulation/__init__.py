"""Design simulations and noise models: calibrated levels, error rates, power, the sequential
rule."""
