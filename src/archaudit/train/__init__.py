"""Training: the loop, optimizer and schedule, stability monitor, checkpoints."""

from archaudit.train.run import TrainResult
from archaudit.train.trainer import derive_seed, train

__all__ = ["TrainResult", "derive_seed", "train"]
