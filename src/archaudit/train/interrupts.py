"""Interrupts honoured at step boundaries, so that every checkpoint holds a whole step.

A signal that raised KeyboardInterrupt wherever it landed could stop the trainer after
`optimizer.step()` but before the step was recorded; a checkpoint saved then would pair the
weights of one step with the step count of another, and the resumed run would depart from the
uninterrupted one. Here SIGINT and SIGTERM are only recorded; the trainer asks at the end of each
step whether to save and stop. With several ranks the step's loss all-reduce also carries
whether any rank was signalled (`distributed.mean_loss_over_ranks`), so that all stop together.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from archaudit.train.distributed import World


class SignalsAtStepEnd:
    """SIGINT and SIGTERM recorded while training instead of raised mid-step; `stop_now` says at
    the end of each step whether to save and stop. A second signal raises KeyboardInterrupt at
    once (nothing saved; a rerun resumes from the newest checkpoint). Handlers exist only in
    the main thread; elsewhere signals keep their old behaviour."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.received: int | None = None
        self._agreed = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalsAtStepEnd:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _record(self, signum: int, frame: Any) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum

    @property
    def signalled(self) -> bool:
        """Whether this process has received a signal."""
        return self.received is not None

    def agree(self, any_rank: bool) -> None:
        """Record whether any rank was signalled, as the step's all-reduce found. With several
        ranks `stop_now` goes by this, so that all stop after the same step."""
        self._agreed = any_rank

    def stop_now(self) -> str | None:
        """The signal's name when this step is the last, else None."""
        stop = self._agreed if self.world.size > 1 else self.received is not None
        if not stop:
            return None
        return signal.Signals(self.received).name if self.received else "a signal on another rank"
