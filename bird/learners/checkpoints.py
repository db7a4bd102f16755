"""Which checkpoint a training ships (registry family checkpoint_selection, train.checkpoint_selection) and when it stops
early (registry family early_stop, train.early_stop). One mechanism for every learner: the learner evaluates, offers
each checkpoint with a way to snapshot its parameters, asks whether to stop, and at the end restores what `choose()`
returns before it rolls out, saves or reports the policy.

Both rules read only the candidate's own reward return on the greedy evaluation episodes (Checkpoint.eval_own_return),
never the task metric (safety-research/bird@54a9ce3:bird/components/training.py, best_own_return; BIRD paper Fig. 5 choice (16)).

A learner's loop::

    keeper = CheckpointKeeper(job.train)
    for each evaluation:  ckpt = evaluate();  keeper.offer(ckpt, snapshot_fn)  (snapshot_fn() -> parameters)
                          if keeper.should_stop(): stop training
    index, record = keeper.ship(out_dir, restore)  (restore(params) puts the pick's parameters back; checkpoint.json)
    TrainResult(..., shipped=index, checkpoint_choice=record)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bird.config.schema import TrainConfig
from bird.files import write_json
from bird.registry import declared, get, register
from bird.types import Checkpoint

__all__ = ["CheckpointKeeper", "needs_eval_own_return"]


def _finite(values: Sequence[float]) -> list[tuple[int, float]]:
    return [(i, v) for i, v in enumerate(values) if not math.isnan(v)]


@register("checkpoint_selection", "final", always_last=True)
def _final(own_returns: Sequence[float]) -> tuple[int, str]:
    """The last checkpoint (the policy as training left it)."""
    return len(own_returns) - 1, "final: the last checkpoint"




@register("checkpoint_selection", "best_own_return", needs_eval_own_return=True)
def _best_own_return(own_returns: Sequence[float]) -> tuple[int, str]:
    """argmax of the own-reward return on the greedy evaluation episodes; the first checkpoint wins ties."""
    finite = _finite(own_returns)
    if not finite:
        return len(own_returns) - 1, "best_own_return: no finite own return; the last checkpoint"
    best = max(finite, key=lambda iv: (iv[1], -iv[0]))
    return best[0], f"best_own_return: highest own-reward eval return {best[1]:.6g} (first on ties)"




@register("early_stop", "none")
def _never(own_returns: Sequence[float], train: TrainConfig) -> str | None:
    return None


@register("early_stop", "plateau", needs_eval_own_return=True)
def _plateau(own_returns: Sequence[float], train: TrainConfig) -> str | None:
    """Stop once at least train.early_stop_min_checkpoints exist and the best own return of the last
    train.early_stop_patience checkpoints beats the best before them by no more than min_delta × the range so far."""
    vals = [v for _, v in _finite(own_returns)]
    p = train.early_stop_patience
    if len(vals) < max(train.early_stop_min_checkpoints, p + 1):
        return None
    margin = train.early_stop_min_delta * (max(vals) - min(vals))
    before, recent = max(vals[:-p]), max(vals[-p:])
    if recent > before + margin:
        return None
    return f"plateau: best own return of the last {p} checkpoints {recent:.6g} <= {before:.6g} + {margin:.3g}"




def needs_eval_own_return(train: TrainConfig) -> bool:
    """True when the configured rules read Checkpoint.eval_own_return (the learner must compute it)."""
    return any(declared(family, name).needs_eval_own_return
               for family, name in (("checkpoint_selection", train.checkpoint_selection), ("early_stop", train.early_stop)))


class CheckpointKeeper:
    """Tracks a training's checkpoints, snapshots the running pick, says when to stop and what to ship."""

    def __init__(self, train: TrainConfig) -> None:
        self.train = train
        self.rule = get("checkpoint_selection", train.checkpoint_selection)
        self.always_last = declared("checkpoint_selection", train.checkpoint_selection).always_last
        self.stopper = get("early_stop", train.early_stop)
        self.curve: list[Checkpoint] = []
        self._snapshot: tuple[int, Any] | None = None
        self.stop_reason: str | None = None

    @property
    def own_returns(self) -> list[float]:
        return [c.eval_own_return for c in self.curve]

    def offer(self, ckpt: Checkpoint, snapshot: Callable[[], Any]) -> None:
        """Record a checkpoint; snapshot the parameters when it is the rule's pick so far (never for the last-only
        `final` rule, whose pick is always the live policy)."""
        self.curve.append(ckpt)
        index, _ = self.rule(self.own_returns)
        if index == len(self.curve) - 1 and not self.always_last:
            self._snapshot = (index, snapshot())

    def should_stop(self) -> bool:
        if self.stop_reason is None:
            self.stop_reason = self.stopper(self.own_returns, self.train)
        return self.stop_reason is not None

    def choose(self) -> tuple[int, Any, dict[str, Any]]:
        """(index of the shipped checkpoint, parameters to restore or None when the live policy is the pick, record)."""
        if not self.curve:
            return -1, None, {"rule": self.train.checkpoint_selection, "index": None, "reason": "no checkpoint"}
        index, reason = self.rule(self.own_returns)
        params = None
        if index != len(self.curve) - 1:
            assert self._snapshot is not None and self._snapshot[0] == index, "the pick was never snapshotted"
            params = self._snapshot[1]
        record = {"rule": self.train.checkpoint_selection, "index": index, "env_steps": self.curve[index].env_steps,
                  "reason": reason, "eval_own_returns": self.own_returns, "early_stop": self.train.early_stop,
                  "stopped_early": self.stop_reason, "n_checkpoints": len(self.curve)}
        return index, params, record

    def ship(self, out_dir: str | os.PathLike, restore: Callable[[Any], None]) -> tuple[int, dict[str, Any]]:
        """choose(), restore(params) when the pick is not the live policy, and write out_dir/checkpoint.json.

        Returns (index of the shipped checkpoint, the record)."""
        index, params, record = self.choose()
        if params is not None:
            restore(params)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        write_json(Path(out_dir) / "checkpoint.json", record)
        return index, record
