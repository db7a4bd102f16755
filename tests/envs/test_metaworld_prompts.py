"""Reward-leak prevention: no rendered env representation shows Meta-World's reward or success code."""

from __future__ import annotations

import ast
import inspect
import re

import pytest

from bird.config.schema import EnvConfig
from bird.envs.metaworld.source import strip_reward_code
from bird.envs.metaworld.tasks import TASKS
from bird.envs.registry import make_adapter
from bird.registry import get, names

REPRESENTATIONS = ["full_source", "abstraction", "obs_code", "obs_index"]


def _spec(task: str):
    return make_adapter(EnvConfig(id=f"metaworld/{task}", description="Do the task.", horizon=500)).spec


def _reward_names(task: str) -> set[str]:
    """Names a prompt must not contain, read from Meta-World's own source (not from our stripper)."""
    from metaworld import sawyer_xyz_env
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS
    from metaworld.utils import reward_utils

    out = {"reward_utils", "TARGET_RADIUS", "_TARGET_RADIUS"}
    out |= {n for n, obj in vars(reward_utils).items() if inspect.isfunction(obj)} - {"annotations"}
    for module in (inspect.getmodule(ALL_V3_ENVIRONMENTS[TASKS[task].mw_name]), sawyer_xyz_env):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.FunctionDef) and (
                node.name in ("evaluate_state", "compute_reward") or "reward" in node.name or "success" in node.name
            ):
                out.add(node.name)
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "success" for k in node.keys):
                out |= {f"'{k.value}'" for k in node.keys if isinstance(k, ast.Constant)}  # info keys, quoted
                out |= {f'"{k.value}"' for k in node.keys if isinstance(k, ast.Constant)}
    return out


def _leaks(text: str, forbidden: set[str]) -> list[str]:
    return sorted(n for n in forbidden if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_no_rendered_representation_contains_reward_or_success_code(task):
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    spec = _spec(task)
    forbidden = _reward_names(task)
    assert {"evaluate_state", "compute_reward", "_gripper_caging_reward", "tolerance", "'success'"} <= forbidden
    raw = inspect.getsource(inspect.getmodule(ALL_V3_ENVIRONMENTS[TASKS[task].mw_name]))
    caught = set(_leaks(raw, forbidden))  # positive control: Meta-World's own module shows them
    assert {"evaluate_state", "compute_reward"} <= caught and {"'success'", '"success"'} & caught
    for rep in [r for r in REPRESENTATIONS if r in names("env_representation")]:
        text = get("env_representation", rep)(spec)
        assert text.strip(), rep
        leaks = _leaks(text, forbidden)
        assert not leaks, f"{task}/{rep} shows {leaks}"


@pytest.mark.parametrize("rep", ["full_source", "abstraction"])
def test_source_and_abstraction_name_every_live_observation_field(rep):
    spec = _spec("peg_insert_side")
    text = get("env_representation", rep)(spec)
    for f in spec.obs_index.fields:
        if not f.always_zero:
            assert f.name in text, f.name
    if rep == "full_source":
        assert "def reset_model" in text and "def _get_pos_objects" in text and "class SawyerXYZEnv" in text


def test_the_class_abstraction_refuses_other_suites():
    spec = make_adapter(EnvConfig(id="mujoco/hopper", description="x", horizon=1000)).spec
    with pytest.raises(ValueError, match="not available for suite mujoco"):
        get("env_representation", "abstraction")(spec)


def test_stripper_removes_reward_members_thresholds_and_their_dead_state():
    toy = (
        "from metaworld.utils import reward_utils\n"
        "class Toy(Base):\n"
        '    """Changelog: reward tuned for success."""\n'
        "    TARGET_RADIUS = 0.05\n"
        "    def reset_model(self):\n"
        "        self.height = 1.0\n"
        "        self.max_dist = self.height * 2\n"
        "        self.kept = 3\n"
        "        return self.obs()\n"
        "    def evaluate_state(self, obs, action):\n"
        "        return self.compute_reward(action, obs), {'success': 1.0}\n"
        "    def compute_reward(self, action, obs):\n"
        "        return reward_utils.tolerance(self.max_dist)\n"
        "    def _reward_pos(self):\n"
        "        return 0\n"
        "    def obs(self):\n"
        "        return self.kept\n"
    )
    out = strip_reward_code(toy)
    expected = (
        "class Toy(Base):\n\n"
        "    def reset_model(self):\n"
        "        self.kept = 3\n"
        "        return self.obs()\n\n"
        "    def obs(self):\n"
        "        return self.kept"
    )
    assert out == expected


def test_success_thresholds_are_read_where_the_success_check_computes_them():
    """evaluate_state's own comparison (push), a flag computed in the reward code (hammer's nail joint, box-close's lid
    distance), numpy's constants (lever-pull's pi / 24), and a check that compares two positions (disassemble: none)."""
    import math

    from bird.envs.hidden import hidden_facts

    expected = {"push": (0.05,), "hammer": (0.09,), "box_close": (0.08,), "lever_pull": (round(math.pi / 24, 9),),
                "disassemble": ()}
    for task, thresholds in expected.items():
        assert hidden_facts(f"metaworld/{task}").thresholds == thresholds, task
