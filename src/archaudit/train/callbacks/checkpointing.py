"""Checkpoints every `recipe.checkpoint_every` steps and at the last step."""

from __future__ import annotations

from archaudit.train.callbacks import Callback, Trainer


class Checkpointing(Callback):
    def post_log(self, trainer: Trainer, step: int) -> None:
        recipe = trainer.run.recipe
        if step % recipe.checkpoint_every == 0 or step == recipe.steps:
            trainer.save(step)
