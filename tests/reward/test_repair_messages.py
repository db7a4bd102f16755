"""Failure messages written for the repair loop: a wrong field lists the task's fields nearest first, a single-number
reward says why it is refused, `self` in a signature is named (what generate.repair=with_trace shows the model)."""

from __future__ import annotations

import numpy as np
import pytest

from bird.envs.base import ObsField, ObsIndex
from bird.reward.fields import Fields, MissingFieldError, missing_field_message
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.static import check_source
from bird.types import FailureKind

INDEX = ObsIndex((ObsField("hand_pos", 0, 3, "position"), ObsField("gripper_open", 3, 1, "gripper"),
                  ObsField("drawer_handle_pos", 4, 3, "position"), ObsField("goal_pos", 7, 3, "position")), 10)
HEAD = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"


def test_a_missing_field_names_the_fields_nearest_first():
    names = ["hand_pos", "goal_pos", "gripper_open", "drawer_handle_pos"]
    message = missing_field_message("gripper", names)
    head, _, listed = message.partition("; this task's fields, nearest first: ")
    assert head == "'gripper' is not a field of obs/next_obs"
    assert listed.split(", ")[0] == "gripper_open" and sorted(listed.split(", ")) == sorted(names)
    assert missing_field_message("goal", ["hand_pos", "goal_pos"]).endswith("nearest first: goal_pos, hand_pos")


def test_a_long_field_list_is_cut_with_a_count():
    names = [f"joint_{i:02d}_angular_velocity" for i in range(40)]
    message = missing_field_message("joint_07_angvel", names)
    assert len(message) < 500 and message.endswith("more)") and "nearest first: joint_07_angular_velocity" in message


def test_fields_raise_a_key_error_a_program_can_still_catch():
    fields = Fields({"hand_pos": 1.0})
    with pytest.raises(KeyError) as err:
        fields["tcp_center"]
    assert isinstance(err.value, MissingFieldError) and str(err.value).startswith("'tcp_center' is not a field")
    assert fields.get("tcp_center", 0.0) == 0.0 and fields["hand_pos"] == 1.0


def _run(body: str) -> None:
    obs = np.random.default_rng(0).normal(size=(8, 10))
    with SandboxedReward(HEAD + body, INDEX) as program:
        program(obs, np.zeros((8, 4)), obs)


def test_the_worker_reports_a_wrong_field_with_the_tasks_fields():
    with pytest.raises(RewardProgramError) as err:
        _run("    d = np.linalg.norm(next_obs['tcp_center'] - next_obs['drawer_handle_pos'], axis=-1)\n    return -d, {}\n")
    failure = err.value.failure
    assert failure.kind == FailureKind.RUNTIME_ERROR
    assert failure.reason.startswith("MissingFieldError: 'tcp_center' is not a field of obs/next_obs; this task's "
                                     "fields, nearest first: ")
    assert {"hand_pos", "gripper_open", "drawer_handle_pos", "goal_pos"} <= set(failure.reason.split(": ")[-1].split(", "))
    _run("    try:\n        x = obs['tcp_center']\n    except KeyError:\n        x = obs['gripper_open']\n"
         "    return x, {}\n")  # a program that handles the missing key itself still runs


def test_a_single_number_reward_is_refused_with_the_reason_and_a_component_is_broadcast():
    with pytest.raises(RewardProgramError) as err:
        _run("    return np.sum(next_obs['gripper_open']), {}\n")
    assert err.value.failure.kind == FailureKind.BAD_OUTPUT
    assert err.value.failure.reason == (
        "reward has shape (), expected (8,): one number for the whole batch; the program is called on a batch of "
        "transitions and must return one reward per transition (reduce over the last axis only, e.g. "
        "np.sum(x, axis=-1))")
    _run("    return next_obs['gripper_open'], {'alive': 1.0}\n")  # a constant component is broadcast


def test_self_in_a_top_level_signature_is_named():
    failure = check_source("def compute_reward(self, obs, action, next_obs, info):\n    return 0, {}\n")
    assert failure.kind == FailureKind.BAD_SIGNATURE
    assert failure.reason == ("compute_reward must accept (obs, action, next_obs, info); got 5 positional args (self, "
                              "obs, action, next_obs, info); remove `self`: it is a top-level function, not a method")
