"""EPIC in the benchmark: reference rewards on stored transitions, the estimator on them, sandboxed candidates,
and `python -m bird.analysis epic` end to end on a real smoke run (tiny competent-policy budget)."""

from __future__ import annotations

import csv
import math
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from bird.analysis.epic_bench import (
    EpicSettings,
    TaskReference,
    candidate_reward,
    distance,
    random_rewards,
    task_reference,
)
from bird.analysis.epic_data import _mean_samples, competent_dataset, rollout
from bird.envs.mujoco.reference import EXTRA_FIELDS, extra_state, reference_reward

TASKS = sorted(EXTRA_FIELDS)
GAMMA = 0.99


def _with_mean(ds, n_mean: int = 256, seed: int = 0):
    ds.mean_obs, ds.mean_acts = _mean_samples(ds, n_mean, np.random.default_rng(seed))
    return ds


@pytest.mark.parametrize("task", TASKS)
def test_reference_matches_env_random_policy(task: str) -> None:
    ds = rollout(f"mujoco/{task}", None, 400, seed=3)
    assert set(ds.obs) == {"obs", *EXTRA_FIELDS[task]}
    r = reference_reward(task)(ds.obs, ds.acts, ds.next_obs)
    np.testing.assert_allclose(r, ds.env_reward, rtol=0, atol=1e-6)
    assert ds.env_reward.std() > 0


@pytest.mark.parametrize("task", TASKS)
def test_reference_matches_env_trained_policy(task: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path))
    ds = competent_dataset(f"mujoco/{task}", policy_steps=512, n_transitions=300, n_mean=64, seed=0, log=lambda m: None)
    assert (tmp_path / "epic" / f"mujoco__{task}" / "ppo_steps512_seed0" / "policy.npz").is_file()
    r = reference_reward(task)(ds.obs, ds.acts, ds.next_obs)
    np.testing.assert_allclose(r, ds.env_reward, rtol=0, atol=1e-6)
    assert len(ds.mean_acts) == 64 and ds.mean_obs["obs"].shape[0] == 64


def test_hopper_healthy_check_uses_unclipped_qvel() -> None:
    """The observation clips qvel to [-10, 10]; v5's healthy range is (-100, 100) on the raw qvel."""
    import gymnasium as gym

    env = gym.make("Hopper-v5")
    env.reset(seed=0)
    u = env.unwrapped
    qvel = u.data.qvel.copy()
    qvel[3] = 5000.0  # a joint spinning far beyond the healthy range: still 10 in the observation
    u.set_state(u.data.qpos.copy(), qvel)
    obs, ext = u._get_obs(), extra_state("hopper", env)
    nxt, r, term, _, _ = env.step(np.zeros(3))
    assert term and np.abs(nxt[5:]).max() <= 10
    s = {"obs": obs[None], **{k: v[None] for k, v in ext.items()}}
    s2 = {"obs": nxt[None], **{k: v[None] for k, v in extra_state("hopper", env).items()}}
    np.testing.assert_allclose(reference_reward("hopper")(s, np.zeros((1, 3)), s2), [r], atol=1e-9)
    env.close()


@pytest.fixture(scope="module")
def hopper_ds():
    return _with_mean(rollout("mujoco/hopper", None, 600, seed=5))


def _ref(ds, task: str) -> TaskReference:
    from bird.analysis.epic import canonicalize_samples

    canon, scale = canonicalize_samples(reference_reward(task), ds.obs, ds.acts, ds.next_obs, ds.mean_obs,
                                        ds.mean_acts, GAMMA, return_scale=True)
    return TaskReference(f"mujoco/{task}", ds, canon, scale)


def test_reference_to_itself_and_shaped_is_zero(hopper_ds) -> None:
    ref, rr = _ref(hopper_ds, "hopper"), reference_reward("hopper")
    w = np.random.default_rng(0).normal(size=hopper_ds.obs["obs"].shape[1])

    def phi(s):
        return np.sin(s["obs"]) @ w + 3.0 * s["x_position"][:, 0] + s["qvel"][:, 0] ** 2

    def shaped(s, a, s2):
        return 2.5 * rr(s, a, s2) + GAMMA * phi(s2) - phi(s) + 7.0

    assert distance(rr, ref, GAMMA) == pytest.approx(0.0, abs=1e-6)
    assert distance(shaped, ref, GAMMA) == pytest.approx(0.0, abs=1e-6)
    assert distance(lambda s, a, s2: -rr(s, a, s2), ref, GAMMA) == pytest.approx(1.0, abs=1e-6)


def test_random_rewards_are_seeded_and_near_uncorrelated(hopper_ds) -> None:
    ref = _ref(hopper_ds, "hopper")
    a = [distance(r, ref, GAMMA) for r in random_rewards(hopper_ds, 6, seed=1)]
    b = [distance(r, ref, GAMMA) for r in random_rewards(hopper_ds, 6, seed=1)]
    assert a == b and all(0.0 < d < 1.0 for d in a)


IP_NEGATED = """import numpy as np

def compute_reward(obs, action, next_obs, info):
    alive = (np.abs(next_obs['hinge_angle']) <= 0.2).astype(float)
    return -alive, {'alive': alive}
"""


@pytest.fixture(scope="module")
def pendulum():
    from bird.config.schema import EnvConfig
    from bird.envs.registry import make_adapter

    ds = _with_mean(rollout("mujoco/inverted_pendulum", None, 500, seed=2), 128)
    index = make_adapter(EnvConfig(id="mujoco/inverted_pendulum", description="")).spec.obs_index
    return _ref(ds, "inverted_pendulum"), index


def test_negated_program_in_sandbox_is_one(pendulum) -> None:
    ref, index = pendulum
    with candidate_reward(IP_NEGATED, index, EpicSettings()) as neg:
        assert distance(neg, ref, GAMMA) == pytest.approx(1.0, abs=1e-6)
    same = IP_NEGATED.replace("return -alive", "return 2 * alive + 1")
    with candidate_reward(same, index, EpicSettings()) as pos:
        assert distance(pos, ref, GAMMA) == pytest.approx(0.0, abs=1e-6)


def test_metaworld_reference_is_nan_with_reason() -> None:
    ref = task_reference("metaworld/push", EpicSettings())
    assert ref.canon is None and "Meta-World" in ref.reason and math.isnan(ref.random_median)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_end_to_end_on_a_real_smoke_run(smoke_runs: Path, tmp_path, monkeypatch, capsys) -> None:
    from bird.analysis import load_runs
    from bird.analysis.__main__ import main
    from bird.analysis.plots import plot_epic

    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    for name in ("eureka-s0", "zeroshot-s0"):
        shutil.copytree(smoke_runs / "mujoco-inverted_pendulum" / name, runs / name)
    broken = runs / "zeroshot-s0" / "candidates" / "it1-c0" / "reward.py"
    broken.write_text("def compute_reward(obs, action, next_obs, info):\n    raise ValueError('boom')\n")
    args = ["epic", str(runs), "--policy-steps", "1024", "--n-transitions", "512", "--n-mean", "128",
            "--n-random", "4"]
    assert main(args) == 0
    assert "random median" in capsys.readouterr().out
    good = _csv(runs / "eureka-s0" / "epic.csv")
    assert [int(r["iteration"]) for r in good] == [1, 2]
    assert all(0.0 <= float(r["distance"]) <= 1.0 and 0.0 < float(r["random_median"]) < 1.0 for r in good)
    bad = _csv(runs / "zeroshot-s0" / "epic.csv")
    assert bad[0]["distance"] == "" and "boom" in bad[0]["reason"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        epic = load_runs([runs], level="epic")
    assert epic["distance"].notna().sum() == 2 and epic["random_median"].notna().all()
    fig, _ = plot_epic(epic, n_resamples=200)
    assert fig is not None
