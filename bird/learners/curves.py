"""curve.csv: one row per checkpoint, the same columns for every learner."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from bird.files import write_text
from bird.types import Checkpoint

__all__ = ["write_curve"]


def write_curve(path: Path, curve: list[Checkpoint] | tuple[Checkpoint, ...]) -> None:
    comps = sorted({k for c in curve for k in c.components})
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = io.StringIO(newline="")
    w = csv.writer(fh)
    w.writerow(["env_steps", "score", "quantity", "own_return", "reference_return", "episode_length",
                "eval_own_return", "eval_reference_return", *[f"comp/{c}" for c in comps]])
    for c in curve:
        w.writerow([c.env_steps, c.score, c.quantity, c.own_return, c.reference_return, c.episode_length,
                    c.eval_own_return, c.eval_reference_return, *[c.components.get(k, "") for k in comps]])
    write_text(path, fh.getvalue())
