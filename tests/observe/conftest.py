"""Shared smoke searches for the video, tracker and rating-study tests (each runs once per session, whichever xdist
worker asks first: tests/session_share.py).

- hopper_run: mujoco/hopper, budget=smoke with 2 evaluation episodes, tracker=tensorboard, both filmed per final seed,
  candidates of iteration 2 filmed too (video.record=all_candidates, video.every=2).
- push_run: metaworld/push, budget=smoke capped at 1 candidate × 1 iteration, tracker=mlflow.
- nogl_run: mujoco/inverted_pendulum, 1 × 1, MUJOCO_GL=disable (rendering off), tracker=wandb (offline).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bird.envs.frames import RenderingUnavailable, gl_backend


def _search(name: str, *overrides: str) -> Path:
    import session_share

    from bird.config.load import compose
    from bird.loop import search

    def make(folder: Path) -> str:
        search(compose(["budget=smoke", "run.progress=false", *overrides]), folder / name)
        return str(folder / name)

    return Path(session_share.once(f"observe-{name}", make))


@pytest.fixture(scope="session")
def gl() -> str:
    """The offscreen GL backend, or skip (tests/observe needs it for clips)."""
    try:
        return gl_backend()
    except RenderingUnavailable as exc:
        pytest.skip(f"no offscreen GL here ({exc}); make test installs Mesa's EGL when run as root")


@pytest.fixture(scope="session")
def hopper_run(gl) -> Path:
    return _search("hopper", "env=mujoco/hopper", "budget.eval_episodes=2", "tracker=tensorboard", "video.episodes=2",
                   "video.record=all_candidates", "video.every=2")


@pytest.fixture(scope="session")
def push_run(gl) -> Path:
    return _search("push", "env=metaworld/push", "tracker=mlflow", "budget.max_candidates=1",
                   "budget.max_iterations=1")


@pytest.fixture(scope="session")
def nogl_run() -> Path:
    old = os.environ.get("MUJOCO_GL")
    os.environ["MUJOCO_GL"] = "disable"  # spawned training workers inherit it: no process may render
    try:
        return _search("nogl", "env=mujoco/inverted_pendulum", "tracker=wandb",
                       "budget.max_candidates=1", "budget.max_iterations=1")
    finally:
        if old is None:
            os.environ.pop("MUJOCO_GL", None)
        else:
            os.environ["MUJOCO_GL"] = old
