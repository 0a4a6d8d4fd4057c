"""The training loop (`Trainer.fit`): runs the step and calls the callbacks,
so it sits above them; `archaudit.train` re-exports `train`."""
