"""One group's JAX training (bird/learners/jax_ppo.py) in this process on a point env (point_env.py) behind a stand-in
Brax adapter: which jobs share a program, when checkpoints fall, what `load` refuses and why, what a checkpoint
records, the timeout and shared-step failures, shipping a checkpoint, and the compile step's executables. The
program compiles once per test session (jax_ppo keeps it per shape); the trainings on a real Brax task:
test_jax_learner.py."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_programs import TINY
from point_env import PointEnv

from bird.learners import jax_ppo
from bird.learners.jax_ppo import GroupError, GroupTraining, _checkpoints, group_key, train_jax_ppo
from bird.learners.job import make_job
from bird.reward.jax_export import ExportedReward, JaxProgram
from bird.types import FailureKind

HORIZON = 6
RANDOM_Q, SCALE = 0.1, 3.0
FIELDS = [["x", 0, 1], ["v", 1, 1], ["one", 2, 1]]


class PointAdapter:
    """What GroupTraining reads of a Brax adapter."""

    def __init__(self, env_cfg) -> None:
        self.spec = SimpleNamespace(suite=env_cfg.id.partition("/")[0])
        self.task, self.backend, self.env = "point", "point", PointEnv()
        self.cfg = SimpleNamespace(horizon=HORIZON)
        self.defn = SimpleNamespace(score="displacement")

    def score_normalisation(self) -> tuple[float, float]:
        return RANDOM_Q, SCALE


@pytest.fixture(autouse=True)
def point(monkeypatch):
    from bird.envs import registry

    monkeypatch.setattr(registry, "make_adapter", PointAdapter)


@pytest.fixture(scope="module")
def cfg(compose_cfg):
    return compose_cfg(*TINY, "train.jax.unroll_length=2", "train.jax.num_envs=2", "train.jax.batch_size=2",
                       "train.jax.num_updates_per_batch=1", "train.jax.normalize_observations=true")


def job(cfg, tmp_path, cid: str = "c0", seed: int = 0, env_steps: int = 48, **changes):
    """Settings: 2 envs, 2 segments of 2 decisions: 4 decisions per update, 8 rows per slot, 8 env steps per
    update: 48 steps = 6 updates."""
    return replace(make_job(cfg, cid, None, seed, env_steps, tmp_path / cid), **changes)


def artefact(fn, rows: int = 8, names: tuple[str, ...] = ()) -> ExportedReward:
    """A real exported artefact of compute_reward `fn` for the point env's fields."""
    prog = JaxProgram(fn, FIELDS, 3, 1, rows=rows)
    return ExportedReward(prog.serialize(), tuple(prog.names), 3, 1, rows)


def ENV_REWARD(obs, action, nxt, info):  # the env's own reward (x' + a / 4): own return = reference return
    r = nxt["x"] + action[:, 0] / 4
    return r, {"x": nxt["x"], "two": 2 * nxt["one"]}


def CONST(obs, action, nxt, info):
    return jnp.ones_like(nxt["x"]), {"one": nxt["one"]}


def NAN(obs, action, nxt, info):
    return jnp.log(nxt["x"] - 100.0), {}


# -- grouping and checkpoints ------------------------------------------------------------------------------------
def test_jobs_share_a_program_only_with_the_same_task_budget_and_evaluation(cfg, tmp_path):
    a = job(cfg, tmp_path)
    same = replace(a, candidate_id="other", seed=3, code="x = 1")
    assert group_key(same) == group_key(a)
    for change in (dict(env=replace(a.env, id="brax/hopper")), dict(env=replace(a.env, backend="mjx")),
                   dict(env=replace(a.env, horizon=77)), dict(env_steps=96), dict(n_checkpoints=9),
                   dict(eval_episodes=7), dict(collect_episodes=5)):
        assert group_key(replace(a, **change)) != group_key(a), change


@pytest.mark.parametrize(("n_updates", "n_checkpoints", "marks"), [
    (10, 3, [4, 7, 10]), (2, 5, [1, 2]), (7, 1, [7]), (6, 4, [2, 3, 5, 6])])
def test_checkpoints_fall_at_the_ceiling_of_each_fraction_of_the_updates(n_updates, n_checkpoints, marks):
    assert _checkpoints(n_updates, n_checkpoints) == marks


# -- construction and load ---------------------------------------------------------------------------------------
def test_a_group_on_another_suite_is_refused_naming_the_env(cfg, tmp_path):
    j = job(cfg, tmp_path)
    with pytest.raises(ValueError, match=r"^train.learner=jax_ppo trains Brax tasks \(env=brax/...\), not "
                                         r"mujoco/inverted_pendulum$"):
        GroupTraining([replace(j, env=replace(j.env, id="mujoco/inverted_pendulum"))], 1)


def test_a_group_keeps_its_width_settings_and_normalisation(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)]
    g = GroupTraining(jobs, 1)
    assert g.width == 2 and g.rows == 8 and g.settings.n_updates == 6 and g.settings.num_envs == 2
    assert (g.random_q, g.scale) == (RANDOM_Q, SCALE)
    assert g.curves == {0: [], 1: []} and g.failures == {} and g.live == [] and g.updates == 0
    assert "compile_s" in g.timing and not g.label
    assert g.summary() == {"settings": g.settings.to_json(), "batch_size_k": 0, "timing": g.timing, "slots": 2}
    assert GroupTraining(jobs, 3).width == 3


def test_load_refuses_source_wrong_sizes_and_corrupt_bytes_each_alone(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, f"c{i}", seed=i) for i in range(5)]
    jobs[1] = replace(jobs[1], code="def compute_reward(o, a, n, i):\n    return 0.0, {}\n")
    good = artefact(ENV_REWARD)
    wrong = artefact(ENV_REWARD, rows=12)
    corrupt = replace(good, hlo=good.hlo[:40] + bytes(20) + good.hlo[60:])
    g = GroupTraining(jobs, 5)
    failures = g.load([good, None, wrong, corrupt, None])
    assert sorted(failures) == [1, 2, 3]
    assert failures[1].kind == FailureKind.TRAIN_ERROR and failures[1].reason == (
        "train.learner=jax_ppo trains exported programs only (reward.language=jax); this job carries Python source")
    assert failures[2].kind == FailureKind.BAD_OUTPUT and failures[2].reason == (
        "exported for 12 rows; this training's rollout has 8 per slot")
    assert failures[3].kind in (FailureKind.BAD_OUTPUT, FailureKind.REJECTED) and failures[3].reason
    assert g.live == [0, 4] and g.slot_jobs == [0, 4, 0, 0, 0]
    assert g.exported[1] is None and g.exported[0] is not None and g.exported[2] is not None
    assert g.jobs[0].program is good and g.jobs[4].program is None
    assert g.state.key.shape == (5, 2)


def test_sizes_are_written_with_thousands_separators(cfg, tmp_path):
    g = GroupTraining([job(cfg, tmp_path, env_steps=48)], 1)
    g.settings = replace(g.settings, num_envs=1000, unroll_length=1, batch_size=1000, num_minibatches=2)
    failures = g.load([artefact(ENV_REWARD, rows=12)])
    assert failures[0].reason == "exported for 12 rows; this training's rollout has 2,000 per slot"


def test_a_program_that_does_not_compile_for_the_training_fails_alone(cfg, tmp_path, monkeypatch):
    from bird.learners import jax_rewards

    real = jax_rewards.RewardStep.compile

    def compile_(self, roll, acc):
        if self.k == 1 and self.slots[0][1].out_avals[0].shape[1] == 2:  # the CONST program: 1 + 1 columns
            raise RuntimeError("no kernel for that " + "x" * 400)
        return real(self, roll, acc)

    monkeypatch.setattr(jax_rewards.RewardStep, "compile", compile_)
    jobs = [job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)]
    g = GroupTraining(jobs, 2)
    failures = g.load([artefact(CONST), artefact(ENV_REWARD)])
    assert list(failures) == [0] and failures[0].kind == FailureKind.RUNTIME_ERROR
    assert failures[0].reason == ("the exported program does not compile for this training: RuntimeError: no kernel "
                                  f"for that {'x' * 281}")  # the error's first 300 characters
    assert g.live == [1] and g.slot_jobs == [1, 1]


def test_programs_that_compile_alone_but_not_together_are_the_groups_error(cfg, tmp_path, monkeypatch):
    from bird.learners import jax_rewards

    real = jax_rewards.RewardStep.compile

    def compile_(self, roll, acc):
        if self.k > 1:
            raise RuntimeError("together" + "!" * 400)
        return real(self, roll, acc)

    monkeypatch.setattr(jax_rewards.RewardStep, "compile", compile_)
    g = GroupTraining([job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)], 2)
    with pytest.raises(GroupError) as err:
        g.load([artefact(CONST), artefact(ENV_REWARD)])
    assert str(err.value) == f"the group's reward step does not compile: RuntimeError: together{'!' * 292}"


def test_load_takes_one_program_per_job(cfg, tmp_path):
    g = GroupTraining([job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)], 2)
    with pytest.raises(ValueError, match="zip"):
        g.load([artefact(CONST)])


def test_a_refused_export_keeps_the_first_500_characters_of_its_reason(cfg, tmp_path, monkeypatch):
    from bird.reward import jax_export

    def refuse(prog):
        raise jax_export.ExportError("rejected", "r" * 600)

    monkeypatch.setattr(jax_export, "load", refuse)
    g = GroupTraining([job(cfg, tmp_path)], 1)
    failures = g.load([artefact(CONST)])
    assert failures[0].kind == FailureKind.REJECTED and failures[0].reason == "r" * 500


def test_each_program_is_compiled_alone_for_one_slots_rollout(cfg, tmp_path, monkeypatch):
    from bird.learners import jax_rewards

    real, leading = jax_rewards.RewardStep.compile, []

    def compile_(self, roll, acc):
        leading.append((self.k, {x.shape[0] for x in jax.tree.leaves(roll)}))
        return real(self, roll, acc)

    monkeypatch.setattr(jax_rewards.RewardStep, "compile", compile_)
    g = GroupTraining([job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)], 2)
    g.load([artefact(CONST), artefact(ENV_REWARD)])
    assert leading == [(1, {1}), (1, {1}), (2, {2})]  # alone: one slot; together: the group's two


def test_each_slot_is_evaluated_on_its_jobs_seeds_the_same_at_every_checkpoint(cfg, tmp_path):
    from bird.learners.job import EVAL_SEED_BASE

    jobs = [job(cfg, tmp_path, "a", seed=3, eval_episodes=2), job(cfg, tmp_path, "b", seed=5, eval_episodes=2)]
    g = GroupTraining(jobs, 3)
    g.load([artefact(CONST), None])
    seeds = [3, 5, 3]  # the padding slot repeats job 0
    want = [[jax.random.PRNGKey(EVAL_SEED_BASE + 1000 * s + e) for e in range(2)] for s in seeds]
    np.testing.assert_array_equal(g.eval_keys, np.asarray(want))
    np.testing.assert_array_equal(g.eval_key, np.asarray([jax.random.PRNGKey(s + 7) for s in seeds]))
    np.testing.assert_array_equal(g.state.key, np.asarray([jax.random.split(jax.random.PRNGKey(s), 4)[3]
                                                           for s in seeds]))


def test_a_group_whose_programs_all_fail_trains_nothing(cfg, tmp_path):
    g = GroupTraining([job(cfg, tmp_path)], 1)
    assert list(g.load([artefact(ENV_REWARD, rows=4)])) == [0]
    assert g.live == [] and not hasattr(g, "state")
    g.train()
    assert g.updates == 0 and g.curves == {0: []} and g.rollouts() == {} and g.trained() == []


# -- training ----------------------------------------------------------------------------------------------------
def test_checkpoints_record_score_returns_lengths_and_component_means(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, "env", n_checkpoints=2), job(cfg, tmp_path, "one", seed=1, n_checkpoints=2),
            job(cfg, tmp_path, "ref", seed=2, n_checkpoints=2)]
    g = GroupTraining(jobs, 3)
    g.load([artefact(ENV_REWARD), artefact(CONST), None])
    updates, seen = [], []
    g.train(on_update=updates.append, on_checkpoint=lambda i, c: seen.append((i, c)))
    assert updates == [1, 2, 3, 4, 5, 6] and g.updates == 6
    assert [(i, c.env_steps) for i, c in seen] == [(0, 24), (1, 24), (2, 24), (0, 48), (1, 48), (2, 48)]
    for c in g.curves[2]:  # the reference reward: no components, own return = reference return
        assert c.components == {} and c.own_return == c.reference_return
    for i in (0, 1):
        assert [c.env_steps for c in g.curves[i]] == [24, 48]
    for c in g.curves[0]:
        assert c.score == pytest.approx((c.quantity - RANDOM_Q) / SCALE)
        assert c.own_return == pytest.approx(c.reference_return, rel=1e-5)  # the env's own reward
        assert 1 <= c.episode_length <= HORIZON and math.isnan(c.eval_own_return)
        assert set(c.components) == {"x", "two"} and c.components["two"] == pytest.approx(2.0)
    for c in g.curves[1]:
        assert c.components == {"one": pytest.approx(1.0)}
        assert c.own_return != pytest.approx(c.reference_return)
        assert 1 <= c.own_return <= HORIZON  # one per decision: the training episodes' mean length
    # each checkpoint's window: sums restart, so the first and second differ
    assert g.curves[0][0].own_return != g.curves[0][1].own_return
    assert float(g.sums.steps) == 0.0 and float(g.state.window.episodes[0]) == 0.0
    assert set(g.timing) >= {"compile_s", "first_update_s", "train_s", "steady_env_steps_per_s"}
    assert g.timing["steady_env_steps_per_s"] > 0 and g.summary()["batch_size_k"] == 3


def test_checkpoint_values_are_worked_out_in_float64(cfg, tmp_path, monkeypatch):
    """From the float32 evaluation and window sums, as numpy's float64 gives them (float32 would round them)."""
    g = GroupTraining([job(cfg, tmp_path, env_steps=40, n_checkpoints=1, eval_episodes=3)], 1)  # 6 episodes
    g.load([artefact(ENV_REWARD)])
    seen = {}
    evaluate, reset = g.program.evaluate, g.program.reset_window
    monkeypatch.setattr(g.program, "evaluate", lambda *a: seen.setdefault("eval", evaluate(*a)))
    monkeypatch.setattr(g.program, "reset_window", lambda state: seen.setdefault("window", state.window) and
                        reset(state))
    g.train()
    (c,) = g.curves[0]
    q, length = (np.asarray(x[0], dtype=np.float64) for x in seen["eval"])
    w = seen["window"]
    own_sum, ref_sum, eps = (float(np.asarray(x[0], dtype=np.float64)) for x in (w.own_sum, w.ref_sum, w.episodes))
    assert c.score == float(np.mean((q - RANDOM_Q) / SCALE)) and c.quantity == float(q.mean())
    assert c.own_return == own_sum / eps and c.reference_return == ref_sum / eps
    assert c.episode_length == float(length.mean())


def test_the_evaluation_own_return_is_measured_when_a_rule_reads_it(cfg, tmp_path):
    j = job(cfg, tmp_path, n_checkpoints=1)
    j = replace(j, train=replace(j.train, checkpoint_selection="best_own_return"))
    g = GroupTraining([j], 1)
    assert g.label
    g.load([artefact(CONST)])
    g.train()
    (c,) = g.curves[0]
    assert 1 <= c.eval_own_return <= HORIZON  # one per greedy decision until done


def test_a_non_finite_reward_fails_its_job_at_the_checkpoint_and_the_others_train_on(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, "nan", n_checkpoints=2), job(cfg, tmp_path, "ok", seed=1, n_checkpoints=2)]
    g = GroupTraining(jobs, 2)
    g.load([artefact(NAN), artefact(CONST)])
    g.train()
    assert list(g.failures) == [0] and g.failures[0].kind == FailureKind.NON_FINITE
    assert g.failures[0].reason == ("reward or a component was non-finite during training (seen at the checkpoint "
                                    "after 24 steps)")
    assert g.curves[0] == [] and len(g.curves[1]) == 2 and g.trained() == [1]


def test_a_training_past_its_timeout_fails_every_live_job_after_the_update(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)]
    jobs = [replace(j, train=replace(j.train, timeout_s=1e-9)) for j in jobs]
    g = GroupTraining(jobs, 2)
    g.load([artefact(CONST), artefact(ENV_REWARD, rows=4)])
    g.train()
    assert g.updates == 1 and list(g.failures) == [1, 0]
    assert g.failures[0].kind == FailureKind.TIMEOUT and g.failures[0].reason == (
        "training exceeded train.timeout_s=1e-09")
    assert g.failures[1].kind == FailureKind.BAD_OUTPUT  # its own failure is kept
    assert "train_s" not in g.timing


def test_a_failing_shared_step_is_the_groups_error(cfg, tmp_path, monkeypatch):
    g = GroupTraining([job(cfg, tmp_path)], 1)
    g.load([artefact(CONST)])
    calls = []

    def boom(state, roll, reward):
        calls.append(1)
        raise FloatingPointError("x" * 400)

    monkeypatch.setattr(g.program, "update", boom)
    with pytest.raises(GroupError) as err:
        g.train()
    assert str(err.value) == f"training update 1 failed: FloatingPointError: {'x' * 300}" and calls == [1]


# -- outputs -----------------------------------------------------------------------------------------------------
def test_shipping_restores_each_jobs_chosen_checkpoint_into_its_slot(cfg, tmp_path, monkeypatch):
    import flax.serialization

    from bird.learners import jax_rollouts

    jobs = [job(cfg, tmp_path, "best", n_checkpoints=3), job(cfg, tmp_path, "last", seed=1, n_checkpoints=3)]
    jobs[0] = replace(jobs[0], train=replace(jobs[0].train, checkpoint_selection="best_own_return"))
    returns = iter([[5.0, 0.0], [9.0, 0.0], [1.0, 0.0]])  # the second checkpoint is job 0's best
    monkeypatch.setattr(jax_rollouts, "eval_own_returns", lambda *a: np.asarray(next(returns)))
    g = GroupTraining(jobs, 2)
    g.load([artefact(CONST), artefact(CONST)])
    at = []
    g.train(on_checkpoint=lambda i, c: i == 0 and at.append(g._params(0)))
    assert [c.eval_own_return for c in g.curves[0]] == [5.0, 9.0, 1.0]
    live_last = g._params(1)
    assert g.ship() == {0: 1, 1: 2}
    restored = g._params(0)
    jax.tree.map(np.testing.assert_array_equal, restored, at[1])  # the second checkpoint's parameters
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(at[1]), jax.tree.leaves(at[2]), strict=True))
    jax.tree.map(np.testing.assert_array_equal, g._params(1), live_last)  # final: the live policy
    params = flax.serialization.from_bytes(restored, g.policy(0))
    jax.tree.map(np.testing.assert_array_equal, params, restored)
    assert g.policy(1) == flax.serialization.to_bytes(live_last)


def test_a_checkpoint_before_any_episode_ended_has_no_returns_and_no_warning(cfg, tmp_path):
    import warnings

    g = GroupTraining([job(cfg, tmp_path, n_checkpoints=6)], 1)  # a checkpoint after each update of 4 decisions
    g.load([artefact(CONST)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g.train()
    first = g.curves[0][0]
    assert math.isnan(first.own_return) and math.isnan(first.reference_return)  # 0 / 0: no episode of 6 ended


def test_component_means_divide_by_the_transitions_even_one(cfg, tmp_path):
    j = job(cfg, tmp_path, env_steps=2, n_checkpoints=2)  # a checkpoint after each update of one transition
    jax_cfg = replace(j.train.jax, num_envs=1, batch_size=1, num_minibatches=1, unroll_length=1)
    g = GroupTraining([replace(j, train=replace(j.train, jax=jax_cfg))], 1)
    assert g.rows == 1 and g.settings.n_updates == 2
    g.load([artefact(CONST, rows=1)])
    g.train()
    assert [c.components for c in g.curves[0]] == [{"one": 1.0}, {"one": 1.0}]


def test_restoring_writes_only_the_given_slot(cfg, tmp_path):
    g = GroupTraining([job(cfg, tmp_path, "a"), job(cfg, tmp_path, "b", seed=1)], 2)
    g.load([artefact(CONST), artefact(CONST)])
    g.train()  # the slots' observation normalisers differ once they trained
    before = [g._params(0), g._params(1)]
    g._restore(0, before[1])
    jax.tree.map(np.testing.assert_array_equal, g._params(0), before[1])
    jax.tree.map(np.testing.assert_array_equal, g._params(1), before[1])
    for part in (0, 1):  # (normaliser, policy): both differed
        assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before[0][part]),
                                                             jax.tree.leaves(before[1][part]), strict=True))


def test_rollouts_are_recorded_only_for_jobs_that_trained(cfg, tmp_path):
    jobs = [job(cfg, tmp_path, "nan", collect_episodes=2, n_checkpoints=1),
            job(cfg, tmp_path, "ok", seed=1, collect_episodes=2, n_checkpoints=1)]
    g = GroupTraining(jobs, 2)
    g.load([artefact(NAN), artefact(ENV_REWARD)])
    g.train()
    out = g.rollouts()
    assert list(out) == [1] and out[1]["length"].shape == (2,)
    assert set(out[1]) >= {"obs", "reward", "comp/x", "comp/two", "score"}
    quiet = GroupTraining([job(cfg, tmp_path, "q", collect_episodes=0)], 1)
    quiet.load([artefact(CONST)])
    quiet.train()
    assert quiet.rollouts() == {}


# -- the compile step's executables ------------------------------------------------------------------------------
def test_the_compile_steps_executables_load_in_place_of_compiling(cfg, tmp_path, monkeypatch):
    from jax._src.compilation_cache import reset_cache

    from bird.learners.jax_executables import Executables

    monkeypatch.setattr(jax_ppo, "_COMPILED", {})
    keep = Executables(None, write=True)
    # the compile step's process has no JAX cache; this one has the session's (tests/jaxpath/conftest.py), which JAX
    # looks at again after reset_cache (test_jax_executables.py)
    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    reset_cache()
    try:
        first = GroupTraining([job(cfg, tmp_path)], 1, keep=keep)
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        reset_cache()
    assert set(keep.serialized) == {"init", "collect", "update", "evaluate", "reset_window"}
    data = first.serialized_program(keep)
    monkeypatch.setattr(jax_ppo, "_COMPILED", {})
    monkeypatch.setattr(jax_ppo, "time", Clock())
    second = GroupTraining([job(cfg, tmp_path)], 1, executables=data)
    monkeypatch.undo()
    assert second.timing == {"compile_s": 0.0, "load_executables_s": 0.31}  # seconds to 2 places
    assert second.program is not first.program and second.program.shapes is not None
    for g in (first, second):
        g.load([artefact(CONST)])
        g.train()
    assert [c.own_return for c in first.curves[0]] == [c.own_return for c in second.curves[0]]
    monkeypatch.setattr(jax_ppo, "_COMPILED", {})
    third = GroupTraining([job(cfg, tmp_path)], 1, executables=b"not a pickle")  # compiled again, with a warning
    assert "load_executables_s" not in third.timing and third.timing["compile_s"] >= 0.0


class Clock:
    """jax_ppo's `time` with a clock that advances 0.3125 s per reading."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        self.now += 0.3125
        return self.now


class Builds:
    """jax_ppo's `_load` and `_compile` without tracing or compiling: what each was given; `_load` fails."""

    def __init__(self) -> None:
        self.compiled, self.loaded = [], []

    def compile(self, program, width, eval_episodes, keep=None):
        self.compiled.append((program, width, eval_episodes, keep))
        return {"compile_s": 0.25}

    def load(self, program, data):
        self.loaded.append((program, data))
        raise RuntimeError("e" * 300)


@pytest.fixture
def builds(monkeypatch):
    b = Builds()
    monkeypatch.setattr(jax_ppo, "_COMPILED", {})
    monkeypatch.setattr(jax_ppo, "_compile", b.compile)
    monkeypatch.setattr(jax_ppo, "_load", b.load)
    return b


def test_a_new_shape_gets_the_tasks_settings_and_compiles_through_the_store_once_for_every_budget(cfg, tmp_path,
                                                                                                  builds):
    from bird.learners.jax_executables import Executables, store_dir

    j = job(cfg, tmp_path, eval_episodes=3)
    j = replace(j, train=replace(j.train, normalize_reward=True,
                                 jax=replace(j.train.jax, tasks={"point": {"entropy_cost": 0.25}})))
    g = GroupTraining([j, replace(j, seed=1, eval_episodes=5)], 3)
    assert g.settings.entropy_cost == 0.25 and g.settings.normalize_reward is True  # train.jax.tasks.<task>
    ((program, width, eval_episodes, keep),) = builds.compiled
    assert program is g.program and (width, eval_episodes) == (3, 3)  # the first job's evaluation
    assert (program.k, program.horizon, program.kind) == (3, HORIZON, "displacement")
    assert type(keep) is Executables and keep.store == store_dir() and keep.write is False  # reads the store only
    assert g.timing == {"compile_s": 0.25}
    other = GroupTraining([replace(j, env_steps=16)], 3)  # another budget: the same program
    assert other.settings.n_updates != g.settings.n_updates and other.program is g.program
    assert len(builds.compiled) == 1 and builds.loaded == []


def test_executables_that_do_not_load_are_compiled_again_with_a_warning(cfg, tmp_path, builds, caplog):
    keep = object()
    with caplog.at_level("WARNING", logger="bird.learners.jax_ppo"):
        g = GroupTraining([job(cfg, tmp_path)], 1, executables=b"from another jaxlib", keep=keep)
    assert builds.loaded == [(g.program, b"from another jaxlib")]
    assert builds.compiled == [(g.program, 1, g.jobs[0].eval_episodes, keep)] and g.timing == {"compile_s": 0.25}
    assert [r.getMessage() for r in caplog.records] == [
        f"the compile step's executables do not load here (RuntimeError: {'e' * 200}); compiling them again"]


def test_compile_time_is_recorded_in_seconds_to_two_places(cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(jax_ppo, "_COMPILED", {})
    monkeypatch.setattr(jax_ppo, "time", Clock())
    g = GroupTraining([job(cfg, tmp_path, eval_episodes=3)], 1)
    assert g.timing == {"compile_s": 0.31}


@pytest.mark.parametrize(("tick", "timing"), [
    (1.375, {"first_update_s": 1.38, "train_s": 8.25, "steady_env_steps_per_s": 11.6}),
    (0.125, {"first_update_s": 0.12, "train_s": 0.75, "steady_env_steps_per_s": 128.0}),
    (0.0625, {"first_update_s": 0.06, "train_s": 0.38, "steady_env_steps_per_s": 256.0})])
def test_training_times_the_first_update_the_whole_and_the_steady_rate_after_the_first(cfg, tmp_path, monkeypatch,
                                                                                       tick, timing):
    """A clock at 100 s that advances `tick` s per update; the time limit is exactly the 6 updates' time (exceeded
    only past it). After the first update, 5 updates of 8 env steps in 2 slots in 5 ticks."""
    clock = SimpleNamespace(now=100.0)
    clock.monotonic = lambda: clock.now
    monkeypatch.setattr(jax_ppo, "time", clock)
    jobs = [job(cfg, tmp_path, "a", n_checkpoints=1), job(cfg, tmp_path, "b", seed=1, n_checkpoints=1)]
    g = GroupTraining([replace(j, train=replace(j.train, timeout_s=6 * tick)) for j in jobs], 2)
    g.load([artefact(CONST), artefact(CONST)])
    collect = g.program.collect

    def timed_update(state):
        clock.now += tick
        return collect(state)

    monkeypatch.setattr(g.program, "collect", timed_update)
    g.train()
    assert g.failures == {} and g.updates == 6
    timed = {k: v for k, v in g.timing.items() if k != "compile_s"}  # compile_s: of the session's first compile
    assert timed == timing


@pytest.mark.parametrize(("env_steps", "steady"), [(8, False), (16, True)])
def test_the_steady_rate_is_recorded_only_when_there_are_updates_after_the_first(cfg, tmp_path, env_steps, steady):
    g = GroupTraining([job(cfg, tmp_path, env_steps=env_steps, n_checkpoints=1)], 1)
    g.load([artefact(CONST)])
    g.train()
    assert g.settings.n_updates == env_steps // 8 and g.updates == env_steps // 8
    assert "train_s" in g.timing and ("steady_env_steps_per_s" in g.timing) is steady


def test_train_jax_ppo_trains_each_group_and_records_a_crash_per_job(cfg, tmp_path):
    import time

    jobs = [job(cfg, tmp_path, "a", n_checkpoints=1, collect_episodes=2, save_policy=True),
            job(cfg, tmp_path, "nan", seed=1, n_checkpoints=1), job(cfg, tmp_path, "small", seed=2, n_checkpoints=1),
            job(cfg, tmp_path, "other", env_steps=16, n_checkpoints=1)]
    programs = [artefact(CONST), artefact(NAN), artefact(CONST, rows=4), artefact(CONST)]
    jobs = [replace(j, program=p) for j, p in zip(jobs, programs, strict=True)]
    jobs[3] = replace(jobs[3], env=replace(jobs[3].env, id="mujoco/inverted_pendulum"))  # its group cannot start
    progress = []
    start = time.monotonic()
    results = train_jax_ppo(jobs, lambda *a: progress.append(a))
    took = time.monotonic() - start
    assert [(r.candidate_id, r.seed) for r in results] == [("a", 0), ("nan", 1), ("small", 2), ("other", 0)]
    a, nan, small, other = results
    assert a.failure is None and a.env_steps == 48 and 0 < a.wall_s <= took
    assert a.policy_path and (tmp_path / "a" / "policy.msgpack").is_file()
    assert a.rollouts_path and (tmp_path / "a" / "rollouts.npz").is_file()
    assert nan.failure.kind == FailureKind.NON_FINITE and nan.env_steps == 48 and nan.policy_path is None
    assert small.failure.kind == FailureKind.BAD_OUTPUT and small.env_steps == 0
    assert other.failure.kind == FailureKind.TRAIN_ERROR and other.failure.reason.startswith(
        "ValueError: train.learner=jax_ppo trains Brax tasks")
    assert progress == [("a", 48, 48, a.curve[-1].score)]


def test_a_job_that_trained_without_save_policy_writes_no_policy(cfg, tmp_path):
    (res,) = train_jax_ppo([job(cfg, tmp_path, "quiet", n_checkpoints=1, program=artefact(CONST))])
    assert res.failure is None and res.curve and res.env_steps == 48
    assert res.policy_path is None and not (tmp_path / "quiet" / "policy.msgpack").exists()


def test_a_group_that_crashes_records_each_job_with_no_curve_steps_or_time(cfg, tmp_path):
    """The crash's reason: its first 500 characters."""
    long_id = "mujoco/" + "p" * 600
    jobs = [job(cfg, tmp_path, "a", program=artefact(CONST)), job(cfg, tmp_path, "b", seed=1)]
    jobs = [replace(j, env=replace(j.env, id=long_id)) for j in jobs]
    results = train_jax_ppo(jobs)
    want = f"ValueError: train.learner=jax_ppo trains Brax tasks (env=brax/...), not {long_id}"[:500]
    assert [(r.candidate_id, r.seed) for r in results] == [("a", 0), ("b", 1)]
    for r in results:
        assert (r.curve, r.env_steps, r.wall_s, r.policy_path) == ((), 0, 0.0, None)
        assert type(r.env_steps) is int and type(r.wall_s) is float
        assert r.failure.kind == FailureKind.TRAIN_ERROR and r.failure.reason == want and len(want) == 500
