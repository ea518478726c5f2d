"""A search's progress as it runs: one line per trial epoch and one as each trial ends.

Ray Tune's own reporter is off (``verbose=0``: its table repeats every few seconds and buries the
grid's log); a search of 8 trials x 1-3 h would otherwise say nothing between its first line and
its summary. A Tune callback in the driver prints through the command's log.
"""

from __future__ import annotations

from collections.abc import Callable

from seqtransfer.experiments.search_records import shown_setting

Log = Callable[[str], None]


def trial_progress(prefix: str, count: int, log: Log):
    """A Ray Tune callback that logs each trial's epochs (``prefix``: the search's method / target)
    and each trial's end, with how many of its ``count`` trials have ended. Ray calls its hooks with
    keyword arguments (``iteration``, ``trials``, ``trial``, ``result``)."""
    from ray.tune import Callback

    class TrialProgress(Callback):
        def __init__(self) -> None:
            self.best: dict[str, float] = {}
            self.last_epoch: dict[str, int] = {}
            self.ended = 0

        def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
            best = max(self.best.get(trial.trial_id, float("-inf")), result["dev"])
            self.best[trial.trial_id], self.last_epoch[trial.trial_id] = best, result["epoch"]
            origin = ", read back" if result.get("read_back") else ""  # a finished run of the store or a kept trial's epoch, not trained now
            log(f"{prefix}: trial {shown_setting(trial.config)}: epoch {result['epoch']} dev {result['dev']:.2f} (best {best:.2f}{origin})")

        def on_trial_complete(self, iteration, trials, trial, **info) -> None:
            self.ended += 1
            best = self.best.get(trial.trial_id)
            reached = f"after epoch {self.last_epoch[trial.trial_id]}, best dev {best:.2f}" if best is not None else "without an epoch"
            log(f"{prefix}: trial {shown_setting(trial.config)} ended {reached}; {self.ended} of {count} trials ended")

        def on_trial_error(self, iteration, trials, trial, **info) -> None:
            self.ended += 1
            log(f"{prefix}: trial {shown_setting(trial.config)} failed (it runs again when the search is run again; its error is in {trial.local_path}); {self.ended} of {count} trials ended")

    return TrialProgress()
