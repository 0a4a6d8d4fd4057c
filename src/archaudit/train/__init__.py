"""Training: the loop, optimizer and schedule, stability monitor, checkpoints."""

from archaudit.train.loop.trainer import derive_seed, train
from archaudit.train.run import TrainResult

__all__ = ["TrainResult", "derive_seed", "train"]
