"""What a family is judged with: the options (`JudgeOptions`: the registered test, the
correction, α) and one arm compared by the chosen test (`compare`). Above the registered
tests (stats/tests/), below the simulations that calibrate them."""
