"""`archaudit stress`: the learning-rate and depth stress sweep's plan,
its result and the published directions checked on it (docs/stability.md)."""
