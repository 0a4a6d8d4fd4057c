"""What a plan costs and can detect before it runs: the probe, the
estimate and its budget, the planned effects and power, the stress sweep's time."""
