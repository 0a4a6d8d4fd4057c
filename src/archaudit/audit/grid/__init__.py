"""The grid of runs and the run directories: `Plan` and `RunSpec`, the DONE
record, claims and the store."""
