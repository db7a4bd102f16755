"""Clean programs still pass: for every task (mujoco/*, metaworld/* and the gym suite's task files) and every contract, the offline
synthesiser's programs (from the structured context a method with that contract sends: task text, observation
fields, action size, contract) pass the static checks and run in the isolated worker on the task's transitions,
at the smoke check's size and at a training rollout's size."""

from __future__ import annotations

import numpy as np
import pytest

MUJOCO = ["half_cheetah", "hopper", "swimmer", "inverted_pendulum", "reacher"]
METAWORLD = ["button_press_topdown", "door_open", "drawer_close", "drawer_open", "peg_insert_side", "pick_place",
             "push", "reach", "window_close", "window_open"]
TASKS = [f"mujoco/{t}" for t in MUJOCO] + [f"metaworld/{t}" for t in METAWORLD] + ["gym/pendulum",
                                                                                    "gym/hopper_hop_in_place"]
# what a task outside Meta-World lacks, set so each contract's method composes there (the programs do not depend on it):
# Meta-World's abstraction and success flag (prm4rl), a reference reward (gym/hopper_hop_in_place, no native signal)
ELSEWHERE = {"progress_program": ["generate.env_representation=obs_index", "reward.form=raw_progress"]}
NO_REFERENCE = ["feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score"]
METHODS = {"compute_reward": "eureka", "reward_class": "grace", "progress_program": "prm4rl"}
SAMPLES = 2


@pytest.fixture(scope="module")
def task():
    from bird.envs.registry import make_adapter
    from bird.reward.checks import random_transitions

    cache = {}

    def get(env_cfg):
        if env_cfg.id not in cache:
            adapter = make_adapter(env_cfg)
            cache[env_cfg.id] = (adapter.spec, random_transitions(adapter, 64, 0))
        return cache[env_cfg.id]

    return get


@pytest.mark.parametrize("env", TASKS)
def test_offline_programs_pass_in_the_sandbox(compose_cfg, task, env):
    from bird.llm.base import Message, Request
    from bird.llm.offline.synth import OfflineSynthesiser
    from bird.prompts import obs_fields_context
    from bird.registry import get
    from bird.reward.sandbox import SandboxedReward
    from bird.reward.static import CONTRACT_ENTRIES, check_source

    rows = None
    for contract, method in METHODS.items():
        if contract == "reward_class" and not env.startswith("metaworld/"):
            continue  # GRACE needs demonstrations; only Meta-World has scripted experts (envs/metaworld/adapter.py)
        extra = [] if env.startswith("metaworld/") else ELSEWHERE.get(contract, [])
        cfg = compose_cfg(f"method={method}", f"env={env}", *extra, *(NO_REFERENCE if "hop_in_place" in env else []))
        assert cfg.reward.contract == contract
        spec, batch = task(cfg.env)
        rows = np.tile(np.arange(len(batch["obs"])), 32)  # 2,048 rows: a training rollout's size
        context = {"task": cfg.env.description, "obs_fields": obs_fields_context(spec),
                   "action_dim": spec.action_dim, "contract": contract, "iteration": 1}
        for sample in range(SAMPLES if contract == "compute_reward" else 1):
            request = Request("reward", (Message("user", "write a reward"),), context, sample_index=sample, seed=0)
            text = OfflineSynthesiser("offline").complete(request).text
            code = get("contract", contract).extract(text).code
            assert code is not None, text[:500]
            assert check_source(code, CONTRACT_ENTRIES[contract], contract=contract) is None, (contract, code)
            with SandboxedReward(code, spec.obs_index, 10.0, contract=contract) as program:
                assert program.inactive_layers == {}
                for idx in (np.arange(8), rows):
                    reward, comps = program(batch["obs"][idx], batch["actions"][idx], batch["next_obs"][idx],
                                            dones=batch["dones"][idx], n_envs=4)
                    assert reward.shape == (len(idx),) and np.isfinite(reward).all()
                    assert all(np.isfinite(v).all() for v in comps.values())
