"""Training: the loop, optimizer and schedule, stability monitor, checkpoints."""

from archaudit.train.trainer import TrainResult, derive_seed, train

__all__ = ["TrainResult", "derive_seed", "train"]
