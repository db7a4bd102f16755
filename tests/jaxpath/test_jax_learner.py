"""train.learner=jax_ppo: hyper-parameter resolution, K trainings in one program equal K separate runs, failures."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from jax_programs import FORWARD, ONE, UPRIGHT

from bird.config.schema import JaxPPOConfig
from bird.learners.jax_settings import BRAX_DEFAULTS, resolve_settings
from bird.types import FailureKind

pytestmark = pytest.mark.background("jax_programs")  # the training programs, compiled beside the suite

TABLE = {"hopper": {"num_envs": 2048, "batch_size": 512, "num_minibatches": 32, "unroll_length": 20,
                    "learning_rate": 3e-4}}


def test_settings_take_the_command_line_then_the_task_table_then_brax_defaults():
    s = resolve_settings(JaxPPOConfig(learning_rate=1e-3, tasks=TABLE, min_updates=1), "hopper", 10**9, True)
    assert s.learning_rate == 1e-3  # command line
    assert (s.num_envs, s.batch_size, s.unroll_length) == (2048, 512, 20)  # task table
    assert s.entropy_cost == BRAX_DEFAULTS["entropy_cost"] and s.scaled_from is None  # Brax default
    assert s.steps_per_update == 512 * 32 * 20 and s.n_updates == math.ceil(10**9 / (512 * 32 * 20))
    other = resolve_settings(JaxPPOConfig(tasks=TABLE), "ant", 10**9, True)
    assert other.num_envs == BRAX_DEFAULTS["num_envs"]


def test_settings_shrink_the_rollout_batch_until_the_budget_affords_min_updates():
    s = resolve_settings(JaxPPOConfig(tasks=TABLE, min_updates=50), "hopper", 1_000_000, True)
    assert s.scaled_from == {"num_envs": 2048, "batch_size": 512, "num_minibatches": 32}
    assert s.n_updates >= 50 and 2 * s.steps_per_update * 50 > 1_000_000  # halved no further than needed
    assert s.rollouts_per_update == 512 * 32 // 2048  # num_envs and batch_size halved together


def test_settings_reject_what_brax_rejects():
    with pytest.raises(ValueError, match="multiple of num_envs"):
        resolve_settings(JaxPPOConfig(num_envs=3, batch_size=4, num_minibatches=2), "hopper", 10**6, True)
    with pytest.raises(ValueError, match="unknown keys"):
        resolve_settings(JaxPPOConfig(tasks={"hopper": {"num_env": 4}}), "hopper", 10**6, True)


def _assert_same_curve(a, b):
    """Training statistics agree to float32 precision. Evaluation integrates 1000 steps of contact dynamics, which
    grows the float differences between a batched and an unbatched matmul (measured: ~0.5% of the displacement,
    one step of episode length), so its figures get that allowance; slots that were mixed up differ by far more."""
    assert a.ok and b.ok and len(a.curve) == len(b.curve) > 0
    for x, y in zip(a.curve, b.curve, strict=True):
        assert x.env_steps == y.env_steps and x.components.keys() == y.components.keys()
        for field in ("own_return", "reference_return"):
            np.testing.assert_allclose(getattr(x, field), getattr(y, field), rtol=1e-4, atol=1e-5, err_msg=field)
        for name in x.components:
            np.testing.assert_allclose(x.components[name], y.components[name], rtol=1e-4, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(x.quantity, y.quantity, rtol=0.05, atol=0.01, err_msg="quantity")
        np.testing.assert_allclose(x.score, y.score, atol=0.005, err_msg="score")
        np.testing.assert_allclose(x.episode_length, y.episode_length, atol=1.0, err_msg="episode_length")


def test_k_trainings_in_one_program_equal_k_separate_runs(make_jobs):
    from bird.learners.jax_ppo import train_jax_ppo

    # 2 wide, like the pool-run tests (their trainers load this program from the session's cache)
    jobs = make_jobs([(FORWARD, 0), (UPRIGHT, 1)], env_steps=192)  # 3 PPO updates, 2 checkpoints
    together = train_jax_ppo(jobs)
    alone = [train_jax_ppo([job])[0] for job in jobs]  # each separate run gets its own 1-wide program
    for a, b in zip(together, alone, strict=True):
        _assert_same_curve(a, b)
    assert together[0].curve[-1].components.keys() == {"forward", "ctrl"}
    # the slots differ by far more than the tolerances (a mix-up of slots could not pass the comparison above)
    first, second = together[0].curve[0], together[1].curve[0]
    assert abs(first.own_return - second.own_return) > 1.0 and abs(first.quantity - second.quantity) > 0.05


def test_a_non_finite_reward_fails_only_its_candidate_next_to_the_reference_reward(make_jobs):
    from bird.learners.jax_ppo import train_jax_ppo

    bad = FORWARD.replace("return forward + ctrl", "return jnp.log(forward - 1e9) + ctrl")
    oracle, broken = train_jax_ppo(make_jobs([(None, 0), (bad, 1)], env_steps=192))
    assert oracle.ok and oracle.curve[-1].env_steps == 192
    assert oracle.curve[-1].components == {}  # the reference reward (train.reward_source=reference) has none
    assert broken.failure is not None and broken.failure.kind == FailureKind.NON_FINITE


def test_a_job_with_python_source_is_refused(make_jobs):
    from dataclasses import replace

    from bird.learners.jax_ppo import train_jax_ppo

    job = make_jobs([(FORWARD, 0)], env_steps=192)[0]
    (res,) = train_jax_ppo([replace(job, program=None, code=FORWARD)])
    assert res.failure is not None and res.failure.kind == FailureKind.TRAIN_ERROR and "exported" in res.failure.reason


def _train_one(make_jobs, rule: str, env_steps: int, n_checkpoints: int):
    from dataclasses import replace

    from bird.learners.jax_ppo import train_jax_ppo

    job = make_jobs([(ONE, 0)], env_steps=env_steps, n_checkpoints=n_checkpoints, save_policy=True)[0]
    (res,) = train_jax_ppo([replace(job, train=replace(job.train, checkpoint_selection=rule))])
    return res, Path(job.out_dir)


def test_jax_ppo_ships_the_policy_of_the_checkpoint_with_the_best_greedy_own_return(make_jobs):
    """A reward of 1 per step: the own return of the greedy episodes is their length, steps after a fall excluded
    (some checkpoints' episodes end early, so a sum over the whole horizon would differ). The pick is not the last
    checkpoint, and the shipped policy is byte for byte that of a training stopped at the pick."""
    res, out = _train_one(make_jobs, "best_own_return", 256, 4)  # a checkpoint after each of 4 updates
    own, length = [c.eval_own_return for c in res.curve], [c.episode_length for c in res.curve]
    assert res.ok and own == pytest.approx(length) and min(length) < 1000  # 1000: the horizon
    assert res.shipped == int(np.argmax(own)) < len(own) - 1  # the first of the best, not the live policy
    assert res.checkpoint_choice["eval_own_returns"] == own
    assert json.loads((out / "checkpoint.json").read_text())["index"] == res.shipped
    stopped, stopped_out = _train_one(make_jobs, "final", res.curve[res.shipped].env_steps, 1)  # same seed, stopped there
    assert stopped.shipped == 0 and math.isnan(stopped.curve[0].eval_own_return)  # "final" reads no own return
    assert (out / "policy.msgpack").read_bytes() == (stopped_out / "policy.msgpack").read_bytes()
