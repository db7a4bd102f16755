"""R*'s module-insert crossover: the child of two parents is a valid program that adds one of B's reward modules to A."""

import random

import numpy as np
import pytest

from bird.components.crossover import CrossoverError, crossover_share, module_insert
from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.reward.checks import random_transitions
from bird.reward.sandbox import SandboxedReward
from bird.reward.static import check_source

PARENT_A = '''import numpy as np

def compute_reward(obs, action, next_obs, info):
    # A: run forward, cheaply
    forward = 1.0 * next_obs["rootx_vel"]
    ctrl = -0.001 * np.sum(action ** 2, axis=-1)
    return forward + ctrl, {"forward": forward, "ctrl": ctrl}
'''

PARENT_B = '''import math
import numpy as np

SCALE = 0.5

def _height(obs):
    return obs["rootz_pos"] * SCALE

def compute_reward(obs, action, next_obs, info):
    forward = 5.0 * next_obs["rootx_vel"]          # clashes with A's name: must not leak into A's total
    temp = 0.3
    upright = np.exp(-next_obs["rooty_angle"] ** 2 / temp) + _height(next_obs) * math.pi
    comps = {"forward": forward}
    comps["upright"] = upright
    return forward + upright, comps
'''


@pytest.fixture(scope="module")
def hopper():
    adapter = make_adapter(EnvConfig(id="mujoco/hopper", description="Hop.", horizon=1000))
    return adapter.spec, random_transitions(adapter, 16, 0)


def _run(code, spec, batch):
    with SandboxedReward(code, spec.obs_index) as program:
        return program(batch["obs"], batch["actions"], batch["next_obs"])


def test_module_insert_adds_a_module_of_b_to_a_and_the_child_runs(hopper):
    spec, batch = hopper
    child, record = module_insert(PARENT_A, PARENT_B, random.Random(0))
    assert record["module"] == "upright"  # the one module of B that A lacks
    assert check_source(child) is None
    total_a, comps_a = _run(PARENT_A, spec, batch)
    _, comps_b = _run(PARENT_B, spec, batch)
    total, comps = _run(child, spec, batch)
    assert set(comps) == {"forward", "ctrl", "upright"}
    np.testing.assert_allclose(comps["upright"], comps_b["upright"])  # B's module, helpers and constants came along
    np.testing.assert_allclose(comps["forward"], comps_a["forward"])  # A's own `forward`, not B's (5×)
    np.testing.assert_allclose(total, total_a + comps_b["upright"])
    assert "ins_upright__height" in child and "ins_upright_SCALE = 0.5" in child


def test_parents_with_no_module_to_insert_give_no_child():
    b_only_forward = PARENT_B.replace('    comps["upright"] = upright\n', "")
    with pytest.raises(CrossoverError, match=r"no reward module that parent A lacks \(A computes \['ctrl', "
                                             r"'forward'\], B \['forward'\]\)$"):
        module_insert(PARENT_A, b_only_forward, random.Random(0))


@pytest.mark.parametrize("bad,match", [
    ("def compute_reward(obs, action, next_obs, info):\n    return 1.0\n", "not `return total, components`"),
    ("def compute_reward(obs, action, next_obs, info):\n    c = dict(a=1)\n    return 1.0, c\n", "not built as a dict"),
    ("def reward(obs):\n    return 1.0, {}\n", "no top-level compute_reward"),
    ("def compute_reward(obs, action, next_obs, info)\n", "does not parse"),
])
def test_a_parent_the_operator_cannot_read_raises_a_crossover_error(bad, match):
    with pytest.raises(CrossoverError, match=match):
        module_insert(PARENT_A, bad, random.Random(0))


def test_crossover_share_rescales_n_to_the_plans_k(compose_cfg):
    cfg = compose_cfg("method=rstar")  # n = 2 of K = 8
    assert [crossover_share(cfg.crossover, cfg.generate.n_candidates, k) for k in (1, 2, 4, 8)] == [0, 1, 1, 2]
    eureka = compose_cfg("method=eureka")
    assert crossover_share(eureka.crossover, eureka.generate.n_candidates, 8) == 0


def _xo_state(cfg, hopper, programs):
    from bird.state import Plan, SearchState
    from bird.types import Candidate, Report

    spec, batch = hopper
    state = SearchState(spec, Plan(8, 5, 1, 1, 1, 1, n_crossover=2), 0, batch)
    state.iteration = 2
    for cid, (code, fitness) in programs.items():
        state.candidates[cid] = Candidate(cid, 1, 0, [], code=code)
        state.reports[cid] = Report(cid, fitness, "")
    return state


def test_backfill_swaps_a_pair_that_gives_no_child_and_records_every_draw(compose_cfg, hopper):
    from bird.components.crossover import crossover_children

    cfg = compose_cfg("method=rstar")
    # softmax(T=1) draws the fitter B-rich parent first; it lacks nothing A has, so the pair is swapped
    lean = 'def compute_reward(obs, action, next_obs, info):\n    f = next_obs["rootx_vel"]\n    return f, {"forward": f}\n'
    state = _xo_state(cfg, hopper, {"rich": (PARENT_B, 10.0), "lean": (lean, 0.0)})
    children = crossover_children(cfg, state, 6, 0)
    assert [c.id for c in children] == ["it2-c6", "it2-c7"] and state.pending_crossovers == 0
    child = children[0]
    assert child.alive and (child.parent_id, child.co_parents) == ("lean", ("rich",)) and child.verified.ok
    draws = state.records["it2-c6"]["crossover.json"]["draws"]
    assert [d["parents"] for d in draws] == [["rich", "lean"], ["lean", "rich"]] and "error" in draws[0]


def test_crossover_children_wait_for_a_second_wave_while_there_is_no_archive(compose_cfg, hopper):
    from bird.components.crossover import crossover_children

    cfg = compose_cfg("method=rstar")
    state = _xo_state(cfg, hopper, {"only": (PARENT_A, 1.0)})
    assert crossover_children(cfg, state, 6, 0) == [] and state.pending_crossovers == 2
    owed = crossover_children(cfg, state, 6, 1)  # wave 1 still finds one ranked parent: recorded as skipped
    assert [c.failure.kind for c in owed] == ["skipped", "skipped"] and state.pending_crossovers == 0
