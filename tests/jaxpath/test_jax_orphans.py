"""No orphans on the JAX path: a search killed with SIGKILL while its isolated trainer trains (after a root trainer's
deferred uid drop, which clears the parent-death signal until the trainer sets it again) leaves no process alive."""

from __future__ import annotations

import os

import pytest
from jax_programs import TINY
from process_tree import describe, kill_search_when, name, uid
from smoke_overrides import SMOKE

pytestmark = pytest.mark.background("jax_programs")  # the training programs, compiled beside the suite
ROOT_HOST = os.geteuid() == 0
WARM = ["budget.env_steps=192", "budget.final_env_steps=192"]  # the shape warm_programs.py compiled (one wide)


def _training(procs) -> bool:
    """A trainer runs, and as root one of its processes has dropped to its own uid (the trainer proper)."""
    trainers = [p for p in procs if name(p) == "bird-trainer"]
    return any(uid(p) not in (None, 0) for p in trainers) if ROOT_HOST else bool(trainers)


@pytest.mark.slow
def test_a_search_killed_with_sigkill_leaves_no_trainer_alive(jax_programs_compiled, tmp_path):
    seen, left = kill_search_when([*SMOKE, "method=zeroshot", *TINY, *WARM], tmp_path / "run", _training)
    trainers = [d for d in seen.values() if " bird-trainer " in d]
    assert trainers, seen
    if ROOT_HOST:  # the kill came after the trainer's uid drop
        assert any(" uid 0:" not in d for d in trainers), trainers
    assert not left, "alive 10 s after the search was killed:\n" + "\n".join(describe(p) for p in left)
