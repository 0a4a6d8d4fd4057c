"""Target-scale predictions: ladders, shared fits, prediction intervals, backtests."""
