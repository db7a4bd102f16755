"""Host parsing is total: every reader of what an isolated process sends back (bird/reward/replies.py and the
trainer host's readers) turns any JSON value, of any shape, into either a validated value or a RewardProgramError
carrying a recorded failure, never another exception. Fuzzed with random JSON values, and with hand-written hostile
ones next to the nearest valid reply."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from bird.learners import trainer_replies
from bird.reward import replies
from bird.reward.jax_export import ExportedReward
from bird.types import FailureKind

ODD = ["", "\x1b[2J", "²", "①", "٣", "0x10", "-1", "1e3", "NaN", " 1", "a" * 10_000, "\u202e", "\x00"]


def _value(rng: random.Random, depth: int = 0):
    """A random JSON value: odd strings and numbers, wrong types, deep or wide containers."""
    roll = rng.random()
    if depth > 6 or roll < 0.45:
        return rng.choice([None, True, False, 0, -1, 1, 2**70, 1.5, math.nan, math.inf, -math.inf, 1e308,
                           *ODD, rng.randint(-5, 5)])
    if roll < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {rng.choice(ODD + ["ok", "kind", "reason", "names", "0", "1", "job"]): _value(rng, depth + 1)
            for _ in range(rng.randint(0, 6))}


@pytest.fixture(scope="module")
def job(compose_cfg, tmp_path_factory):
    from bird.learners.job import make_job

    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo")
    prog = ExportedReward(b"\0" * 64, ("forward", "ctrl"), 11, 3, 32)
    return replace(make_job(cfg, "c0", None, 0, 192, tmp_path_factory.mktemp("j")), program=prog, save_policy=True,
                   collect_episodes=2)


def _readers(job):
    return {
        "component_names": lambda v: replies.component_names(v),
        "failure_from": lambda v: replies.failure_from(v if isinstance(v, dict) else {"kind": v}),
        "debug_texts": lambda v: replies.debug_texts(v, [0, 1]),
        "layer_list": lambda v: replies.layer_list(v, ("seccomp", "landlock")),
        "text_list": lambda v: replies.text_list(v, 4, 30, "plan_list"),
        "finite_map": lambda v: replies.finite_map(v, 4, "REWARD_WEIGHTS"),
        "number": lambda v: replies.number(v, "x", nan=True),
        "integer": lambda v: replies.integer(v, "x", 0, 10),
        "job_failures": lambda v: trainer_replies.job_failures(v, 3),
        "checkpoint": lambda v: trainer_replies.read_checkpoint(v, job, 64),
        "outputs": lambda v: trainer_replies.read_outputs(v if isinstance(v, dict) else {"arrays": v}, b"\0" * 64, job),
    }


def test_every_reader_turns_any_json_value_into_a_value_or_a_recorded_failure(job):
    rng = random.Random(20)
    readers = _readers(job)
    for _ in range(3000):
        value = json.loads(json.dumps(_value(rng)))  # what json.loads can hand the host
        for name, read in readers.items():
            try:
                read(value)
            except replies.RewardProgramError as exc:
                assert exc.failure.kind == FailureKind.BAD_OUTPUT and len(exc.failure.reason) < 700, name
            except Exception as exc:  # noqa: BLE001 - the assertion is that nothing else escapes
                raise AssertionError(f"{name}({str(value)[:200]}) raised {type(exc).__name__}: {exc}") from exc


def _checkpoint(**changes):
    base = {"env_steps": 64, "score": 0.1, "quantity": 0.2, "own_return": math.nan, "reference_return": 1.0,
            "episode_length": 10.0, "components": {"forward": 0.5, "ctrl": -0.1}, "eval_own_return": math.nan,
            "eval_reference_return": math.nan}
    return {**base, **changes}


def test_a_valid_checkpoint_is_read_and_each_hostile_variant_is_refused(job):
    c = trainer_replies.read_checkpoint(_checkpoint(), job, 64)
    assert (c.env_steps, c.score, c.components) == (64, 0.1, {"forward": 0.5, "ctrl": -0.1})
    assert math.isnan(c.own_return)  # a window without a finished episode
    for bad in (_checkpoint(env_steps=128), _checkpoint(score=math.inf), _checkpoint(score=math.nan),
                _checkpoint(score=True), _checkpoint(components={"forward": 0.5}),
                _checkpoint(components={"ctrl": -0.1, "forward": 0.5}), _checkpoint(extra=1),
                {k: v for k, v in _checkpoint().items() if k != "score"}, _checkpoint(episode_length=-1.0)):
        with pytest.raises(replies.RewardProgramError):
            trainer_replies.read_checkpoint(bad, job, 64)


def _arrays(n: int = 5, e: int = 2) -> dict[str, np.ndarray]:
    return {"obs": np.ones((n, 11)), "actions": np.ones((n, 3)), "next_obs": np.ones((n, 11)),
            "episode": np.array([0, 0, 1, 1, 1][:n]), "reward": np.ones(n), "comp/forward": np.ones(n),
            "comp/ctrl": np.ones(n), "score": np.ones(e), "quantity": np.ones(e), "length": np.array([2, 3])}


def test_outputs_are_read_only_when_every_name_shape_and_size_matches(job):
    from bird.learners.trainer import encode_arrays

    spec, data = encode_arrays(_arrays())
    policy = b"P" * 10
    got_policy, got = trainer_replies.read_outputs({"policy": 10, "arrays": spec}, policy + data, job)
    assert got_policy == policy and np.array_equal(got["obs"], np.ones((5, 11))) and got["episode"].dtype == np.int64
    hostile = [
        ({"policy": 10, "arrays": spec}, policy + data + b"x"),  # bytes left over
        ({"policy": 11, "arrays": spec}, policy + data),  # sizes that do not add up
        ({"policy": 10, "arrays": [*spec, ["comp/other", "<f8", [5]]]}, policy + data + b"\0" * 40),
        ({"policy": 10, "arrays": [["obs", "<f8", [5, 12]], *spec[1:]]}, policy + data + b"\0" * 40),
        ({"policy": 10, "arrays": [["obs", "|O", [5, 11]], *spec[1:]]}, policy + data),  # object dtype
        ({"policy": 0, "arrays": spec}, data),  # the job asked for a policy
        ({"policy": 2**40, "arrays": spec}, policy + data),
    ]
    for frame, blob in hostile:
        with pytest.raises(replies.RewardProgramError):
            trainer_replies.read_outputs(frame, blob, job)
    bad_episodes = _arrays()
    bad_episodes["episode"] = np.array([0, 0, 1, 1, 7])
    spec, data = encode_arrays(bad_episodes)
    with pytest.raises(replies.RewardProgramError):
        trainer_replies.read_outputs({"policy": 10, "arrays": spec}, policy + data, job)
