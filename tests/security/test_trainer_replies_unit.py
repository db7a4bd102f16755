"""bird/learners/trainer_replies.py one check at a time: each hostile reply differs from a valid one in one respect and
is refused with the reason that names it, next to the nearest reply that is accepted (the fuzzing of every reader:
test_reply_parsing.py)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from bird.learners.trainer import encode_arrays
from bird.learners.trainer_replies import (
    MAX_POLICY_BYTES,
    job_failures,
    read_checkpoint,
    read_outputs,
    read_timing,
)
from bird.reward.jax_export import ExportedReward
from bird.reward.replies import RewardProgramError
from bird.types import Checkpoint, Failure, FailureKind

KINDS = ("non_finite", "timeout", "bad_output", "rejected", "runtime_error", "train_error")


@pytest.fixture(scope="module")
def job(compose_cfg, tmp_path_factory):
    from bird.learners.job import make_job

    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo")
    prog = ExportedReward(b"\0" * 64, ("forward", "ctrl"), 11, 3, 32)
    return replace(make_job(cfg, "c0", None, 0, 192, tmp_path_factory.mktemp("j")), program=prog, save_policy=True,
                   collect_episodes=2)


def _refused(read, *args) -> str:
    with pytest.raises(RewardProgramError) as err:
        read(*args)
    assert err.value.failure.kind == FailureKind.BAD_OUTPUT
    return err.value.failure.reason


# --- job failures -----------------------------------------------------------------------------------------------
def test_failures_of_jobs_in_the_group_are_read_with_their_kinds():
    got = job_failures({"0": {"kind": "timeout", "reason": "r", "detail": "d"}, "2": {"kind": "crash"}}, 3)
    assert got == {0: Failure(FailureKind.TIMEOUT, "r", "d"), 2: Failure(FailureKind.RUNTIME_ERROR, "unknown error")}
    for kind in KINDS:
        assert job_failures({"1": {"kind": kind}}, 2)[1].kind == FailureKind(kind)
    assert job_failures({}, 0) == {}


def test_as_many_failures_as_jobs_are_read_and_one_more_is_refused():
    assert sorted(job_failures({"0": {}, "1": {}}, 2)) == [0, 1]
    assert _refused(job_failures, {"0": {}, "1": {}, "2": {}}, 2) == "failures must map job indices to failure records"
    assert _refused(job_failures, [{"kind": "timeout"}], 2) == "failures must map job indices to failure records"


@pytest.mark.parametrize("key", ["3", "-1", "²", "٣", " 1", "", "1.0", "0x1"])
def test_a_failure_for_a_job_not_in_the_group_is_refused_naming_it(key):
    assert _refused(job_failures, {key: {"kind": "timeout"}}, 3) == f"a failure for job {key!r}, not in the group"


def test_a_failure_for_a_job_of_a_long_key_names_it_cut_to_twenty_characters():
    assert _refused(job_failures, {"9" * 30: {"kind": "timeout"}}, 3) == \
        f"a failure for job {'9' * 19 + '…'!r}, not in the group"


def test_a_failure_record_that_is_not_an_object_is_refused():
    assert _refused(job_failures, {"0": "timeout"}, 1) == "a failure record that is not an object"


# --- timing -----------------------------------------------------------------------------------------------------
def test_timing_holds_up_to_sixteen_non_negative_numbers_with_short_names():
    sixteen = {f"t{i}": float(i) for i in range(16)}
    assert read_timing(sixteen) == sixteen
    assert read_timing({"k" * 50: 1e12, "zero": 0}) == {"k" * 39 + "…": 1e12, "zero": 0.0}
    message = "timing must be an object of at most 16 numbers"
    assert _refused(read_timing, {**sixteen, "t16": 1.0}) == message and _refused(read_timing, [1.0]) == message
    assert _refused(read_timing, {"x": -1}) == "a timing=-1.0 is not finite or outside [0, 1e+12]"
    assert _refused(read_timing, {"x": 1.5e12}) == "a timing=1500000000000.0 is not finite or outside [0, 1e+12]"
    assert _refused(read_timing, {"x": 1e12 + 0.5}) == "a timing=1000000000000.5 is not finite or outside [0, 1e+12]"


# --- checkpoints ------------------------------------------------------------------------------------------------
def _ckpt(**changes):
    base = {"env_steps": 64, "score": 0.1, "quantity": 0.2, "own_return": 0.3, "reference_return": 0.4,
            "episode_length": 10.0, "components": {"forward": 0.5, "ctrl": -0.1}, "eval_own_return": 0.6,
            "eval_reference_return": 0.7}
    return {**base, **changes}


def test_a_checkpoint_is_read_field_by_field(job):
    assert read_checkpoint(_ckpt(), job, 64) == Checkpoint(64, 0.1, 0.2, 0.3, 0.4, 10.0, {"forward": 0.5, "ctrl": -0.1},
                                                           0.6, 0.7)


@pytest.mark.parametrize("field", ["own_return", "reference_return", "eval_own_return", "eval_reference_return"])
def test_returns_may_be_nan_for_a_window_without_a_finished_episode(job, field):
    assert math.isnan(getattr(read_checkpoint(_ckpt(**{field: math.nan}), job, 64), field))


def test_a_component_may_be_nan_but_not_infinite(job):
    got = read_checkpoint(_ckpt(components={"forward": math.nan, "ctrl": 1.0}), job, 64)
    assert math.isnan(got.components["forward"])
    assert _refused(read_checkpoint, _ckpt(components={"forward": math.inf, "ctrl": 1.0}), job, 64) == \
        "component forward=inf is not finite or outside [-inf, inf]"


@pytest.mark.parametrize("field", ["score", "quantity", "episode_length"])
def test_the_score_quantity_and_length_are_never_nan(job, field):
    assert _refused(read_checkpoint, _ckpt(**{field: math.nan}), job, 64) == f"{field} is NaN"


@pytest.mark.parametrize("field", ["own_return", "reference_return", "eval_own_return", "eval_reference_return",
                                   "score", "quantity"])
def test_no_number_of_a_checkpoint_is_infinite(job, field):
    assert _refused(read_checkpoint, _ckpt(**{field: -math.inf}), job, 64).startswith(f"{field}=-inf is not finite")


def test_the_episode_length_lies_between_zero_and_a_billion(job):
    assert read_checkpoint(_ckpt(episode_length=1e9), job, 64).episode_length == 1e9
    assert read_checkpoint(_ckpt(episode_length=0), job, 64).episode_length == 0.0
    assert _refused(read_checkpoint, _ckpt(episode_length=1.5e9), job, 64) == \
        "episode_length=1500000000.0 is not finite or outside [0, 1e+09]"
    assert _refused(read_checkpoint, _ckpt(episode_length=-0.5), job, 64).startswith("episode_length=-0.5")
    assert _refused(read_checkpoint, _ckpt(episode_length=1e9 + 0.5), job, 64).startswith("episode_length=1000000000.5")


def test_a_checkpoint_at_another_step_count_or_with_other_fields_is_refused(job):
    assert _refused(read_checkpoint, _ckpt(env_steps=128), job, 64) == "env_steps must be an integer in [64, 64], got 128"
    message = "a checkpoint with missing or unknown fields"
    assert _refused(read_checkpoint, _ckpt(extra=1), job, 64) == message
    assert _refused(read_checkpoint, {k: v for k, v in _ckpt().items() if k != "quantity"}, job, 64) == message
    assert _refused(read_checkpoint, [_ckpt()], job, 64) == message


def test_components_of_long_names_are_named_in_at_most_two_hundred_characters(job):
    names = [f"component_{i}_" + "x" * 40 for i in range(8)]
    reason = _refused(read_checkpoint, _ckpt(components=dict.fromkeys(names, 0.0)), job, 64)
    assert reason == f"checkpoint components {json.dumps(names)[:200]} instead of ['forward', 'ctrl']"


def test_components_must_be_the_jobs_in_its_order(job):
    assert _refused(read_checkpoint, _ckpt(components={"ctrl": 0.0, "forward": 0.0}), job, 64) == \
        "checkpoint components [\"ctrl\", \"forward\"] instead of ['forward', 'ctrl']"
    assert _refused(read_checkpoint, _ckpt(components="forward"), job, 64) == \
        "checkpoint components forward instead of ['forward', 'ctrl']"
    many = {f"c{i}": 0.0 for i in range(10)}
    assert '["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"] instead' in _refused(read_checkpoint,
                                                                                   _ckpt(components=many), job, 64)
    reference = replace(job, program=None)
    assert read_checkpoint(_ckpt(components={}), reference, 64).components == {}
    assert _refused(read_checkpoint, _ckpt(components={"forward": 0.0}), reference, 64) == \
        "checkpoint components [\"forward\"] instead of []"


# --- outputs ----------------------------------------------------------------------------------------------------
def _arrays(n: int = 5, e: int = 2) -> dict[str, np.ndarray]:
    return {"obs": np.full((n, 11), 0.5), "actions": np.full((n, 3), 0.25), "next_obs": np.full((n, 11), 1.5),
            "episode": np.array([0, 0, 1, 1, 1][:n]), "reward": np.arange(n, dtype=float), "comp/forward": np.ones(n),
            "comp/ctrl": np.zeros(n), "score": np.full(e, 0.75), "quantity": np.full(e, 2.0),
            "length": np.array([2, 3][:e])}


POLICY = b"P" * 10


def _frame(arrays=None, policy: int = 10, extra=()):
    spec, data = encode_arrays(_arrays() if arrays is None else arrays)
    return {"policy": policy, "arrays": [*spec, *extra]}, POLICY[:policy] + data


def test_outputs_give_the_policy_bytes_and_every_array_by_name_and_dtype(job):
    frame, data = _frame()
    policy, got = read_outputs(frame, data, job)
    assert policy == POLICY and sorted(got) == sorted(_arrays())
    for name, want in _arrays().items():
        assert np.array_equal(got[name], want) and got[name].dtype == (np.int64 if want.dtype.kind == "i" else
                                                                       np.float64), name
        assert got[name].flags.writeable


def test_a_job_that_asked_for_neither_gets_none_of_either(job):
    plain = replace(job, save_policy=False, collect_episodes=0)
    assert read_outputs({"policy": 0, "arrays": []}, b"", plain) == (None, None)


def test_a_policy_of_one_byte_is_read(job):
    frame, data = _frame(policy=1)
    assert read_outputs(frame, data, job)[0] == b"P"


def test_a_policy_must_come_exactly_when_the_job_asked_for_one(job):
    message = "a policy the job did not ask for, or none where it did"
    assert _refused(read_outputs, *_frame(policy=0), job) == message
    assert _refused(read_outputs, *_frame(), replace(job, save_policy=False)) == message
    assert _refused(read_outputs, {"policy": MAX_POLICY_BYTES + 1, "arrays": []}, b"", job) == \
        f"policy size must be an integer in [0, {MAX_POLICY_BYTES}], got {MAX_POLICY_BYTES + 1}"
    assert MAX_POLICY_BYTES == 64 << 20


def test_rollouts_must_come_exactly_when_the_job_asked_for_them(job):
    message = "rollouts the job did not ask for, or none where it did"
    assert _refused(read_outputs, {"policy": 10, "arrays": []}, POLICY, job) == message
    assert _refused(read_outputs, *_frame(), replace(job, collect_episodes=0)) == message


def test_the_array_list_is_short_sixteen_plus_the_components(job):
    frame, data = _frame()
    message = "rollout arrays must be a short list"
    assert _refused(read_outputs, {"policy": 10, "arrays": "obs"}, data, job) == message
    at_most = {"policy": 10, "arrays": frame["arrays"] + [frame["arrays"][0]] * 8}  # 18: read, then a repeated name
    assert _refused(read_outputs, at_most, data, job) == "an unexpected rollout array 'obs'"
    assert _refused(read_outputs, {"policy": 10, "arrays": at_most["arrays"] + [frame["arrays"][0]]}, data, job) == \
        message


@pytest.mark.parametrize("entry", [("obs", "<f8"), ["obs", "<f8", [5, 11], 1], [7, "<f8", [5]], ["obs", "<f4", [5, 11]],
                                   ["obs", "|O", [5, 11]], ["obs", "<f8", "5"], ["obs", "<f8", []],
                                   ["obs", "<f8", [1, 5, 11]], "obs"])
def test_an_array_entry_that_is_not_name_dtype_and_shape_is_refused(job, entry):
    frame, data = _frame()
    frame["arrays"][0] = entry
    assert _refused(read_outputs, frame, data, job) == "a rollout array entry that is not [name, dtype, shape]"


def test_a_dimension_is_a_non_negative_integer_up_to_two_to_the_thirty(job):
    frame, data = _frame()
    frame["arrays"][0] = ["obs", "<f8", [1 << 30, 11]]
    assert _refused(read_outputs, frame, data, job) == "rollout arrays larger than the bytes sent"
    frame["arrays"][0] = ["obs", "<f8", [(1 << 30) + 1, 11]]
    assert _refused(read_outputs, frame, data, job) == "a dimension must be an integer in [0, 1073741824], got 1073741825"
    frame["arrays"][0] = ["obs", "<f8", [-1, 11]]
    assert _refused(read_outputs, frame, data, job).startswith("a dimension must be an integer")


def test_an_array_of_an_unknown_or_repeated_name_is_refused(job):
    assert _refused(read_outputs, *_frame(extra=[["comp/other", "<f8", [0]]]), job) == \
        "an unexpected rollout array 'comp/other'"
    assert _refused(read_outputs, *_frame(extra=[["reward", "<f8", [0]]]), job) == "an unexpected rollout array 'reward'"


def test_an_array_of_a_long_unknown_name_is_named_cut_to_eighty_characters(job):
    assert _refused(read_outputs, *_frame(extra=[["x" * 100, "<f8", [0]]]), job) == \
        f"an unexpected rollout array {'x' * 79 + '…'!r}"


@pytest.mark.parametrize(("name", "entry", "says"), [
    ("episode", ["episode", "<f8", [5]], "rollout array episode has dtype <f8 and 1 dimensions"),
    ("length", ["length", "<f8", [2]], "rollout array length has dtype <f8 and 1 dimensions"),
    ("reward", ["reward", "<i8", [5]], "rollout array reward has dtype <i8 and 1 dimensions"),
    ("comp/forward", ["comp/forward", "<i8", [5]], "rollout array comp/forward has dtype <i8 and 1 dimensions"),
    ("obs", ["obs", "<f8", [55]], "rollout array obs has dtype <f8 and 1 dimensions"),
    ("reward", ["reward", "<f8", [5, 1]], "rollout array reward has dtype <f8 and 2 dimensions"),
])
def test_each_array_has_its_dtype_and_number_of_dimensions(job, name, entry, says):
    frame, data = _frame()
    frame["arrays"] = [entry if e[0] == name else e for e in frame["arrays"]]
    assert _refused(read_outputs, frame, data, job) == says


def test_the_bytes_sent_must_be_exactly_the_policy_and_the_arrays(job):
    frame, data = _frame()
    assert _refused(read_outputs, frame, data[:-1], job) == "rollout arrays larger than the bytes sent"
    assert _refused(read_outputs, frame, data + b"\0", job) == "bytes left over after the outputs"
    assert _refused(read_outputs, {**frame, "policy": 9}, data, job) == "bytes left over after the outputs"


@pytest.mark.parametrize("name", ["obs", "length", "comp/ctrl", "episode"])
def test_rollouts_without_one_of_their_arrays_are_refused(job, name):
    arrays = _arrays()
    del arrays[name]
    assert _refused(read_outputs, *_frame(arrays), job) == f"rollouts without ['{name}']"


@pytest.mark.parametrize(("name", "value", "shape"), [
    ("score", np.ones(3), "(3,)"), ("quantity", np.ones(1), "(1,)"), ("length", np.array([1, 1, 1]), "(3,)"),
    ("reward", np.ones(4), "(4,)"), ("comp/ctrl", np.ones(6), "(6,)"), ("next_obs", np.ones((4, 11)), "(4, 11)"),
    ("obs", np.ones((5, 12)), "(5, 12)"), ("actions", np.ones((5, 4)), "(5, 4)"), ("next_obs", np.ones((5, 10)),
                                                                                    "(5, 10)")])
def test_each_array_has_the_rows_and_columns_of_the_episodes_and_the_program(job, name, value, shape):
    arrays = _arrays()
    arrays[name] = value
    assert _refused(read_outputs, *_frame(arrays), job) == f"rollout array {name} has shape {shape}"


def test_a_reference_reward_jobs_rollouts_take_their_widths_from_the_observations(job):
    reference = replace(job, program=None)
    arrays = {k: v for k, v in _arrays().items() if not k.startswith("comp/")}
    arrays["obs"], arrays["next_obs"], arrays["actions"] = np.ones((5, 7)), np.ones((5, 7)), np.ones((5, 9))
    _, got = read_outputs(*_frame(arrays), reference)
    assert got["obs"].shape == (5, 7) and got["actions"].shape == (5, 9)


def test_a_reference_reward_jobs_next_observations_are_as_wide_as_its_observations(job):
    reference = replace(job, program=None)
    arrays = {k: v for k, v in _arrays().items() if not k.startswith("comp/")}
    arrays["obs"], arrays["next_obs"] = np.ones((5, 7)), np.ones((5, 8))
    assert _refused(read_outputs, *_frame(arrays), reference) == "rollout array next_obs has shape (5, 8)"


def test_episode_indices_lie_within_the_episodes_asked_for(job):
    for episodes, ok in (([0, 0, 1, 1, 1], True), ([0, 0, 1, 1, 2], False), ([-1, 0, 1, 1, 1], False)):
        arrays = _arrays()
        arrays["episode"] = np.array(episodes)
        if ok:
            assert read_outputs(*_frame(arrays), job)[1] is not None
        else:
            assert _refused(read_outputs, *_frame(arrays), job) == ("rollouts longer than the episodes asked for, or "
                                                                    "episodes out of range")


def test_rollouts_may_hold_up_to_one_more_row_than_the_horizon_per_episode(job):
    rows = 2 * (job.env.horizon + 1)
    arrays = {**_arrays(), "obs": np.ones((rows, 11)), "actions": np.ones((rows, 3)), "next_obs": np.ones((rows, 11)),
              "episode": np.repeat([0, 1], rows // 2), "reward": np.ones(rows), "comp/forward": np.ones(rows),
              "comp/ctrl": np.ones(rows)}
    assert read_outputs(*_frame(arrays), job)[1]["obs"].shape == (rows, 11)
    longer = {k: (np.concatenate([v, v[:1]]) if len(v) == rows else v) for k, v in arrays.items()}
    assert _refused(read_outputs, *_frame(longer), job) == ("rollouts longer than the episodes asked for, or episodes "
                                                            "out of range")


def test_rollouts_with_no_rows_are_read(job):
    empty = {**_arrays(), "obs": np.ones((0, 11)), "actions": np.ones((0, 3)), "next_obs": np.ones((0, 11)),
             "episode": np.zeros(0, dtype=int), "reward": np.zeros(0), "comp/forward": np.zeros(0),
             "comp/ctrl": np.zeros(0)}
    assert len(read_outputs(*_frame(empty), job)[1]["episode"]) == 0
