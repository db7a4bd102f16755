"""Gym MuJoCo "full source" for prompts (BIRD Table 9, Eureka): the env module without its reference reward."""

import importlib.util
import inspect
import re
import sys

import gymnasium as gym
import pytest

from bird.config.schema import EnvConfig
from bird.envs.mujoco.source import full_source, hidden_names
from bird.envs.mujoco.tasks import TASKS
from bird.envs.registry import make_adapter
from bird.registry import get


@pytest.mark.parametrize("task", sorted(TASKS))
def test_full_source_keeps_dynamics_and_observations_and_drops_every_reward_name(task):
    spec = make_adapter(EnvConfig(id=f"mujoco/{task}", description="x", horizon=1000)).spec
    text = get("env_representation", "full_source")(spec)
    env_cls = type(gym.make(TASKS[task].gym_id).unwrapped)
    names = hidden_names(env_cls)
    assert names, "Gymnasium's reward names were not found"

    def leaks(shown: str) -> list[str]:
        return sorted(n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", shown))

    raw = set(leaks(inspect.getsource(inspect.getmodule(env_cls))))  # positive control: the raw module shows them
    assert {n for n in names if n[0] not in "'\""} <= raw and raw - {n for n in names if n[0] not in "'\""}
    assert not leaks(text), f"{task} full source shows {leaks(text)}"
    for member in ("def step(self, action)", "def _get_obs(self)", "def reset_model(self)", "self.do_simulation("):
        assert member in text, member
    assert '"""' not in text  # Gymnasium's docstrings describe the reward term by term


TOY = '''"""Toy env: reward = forward_reward_weight * x_velocity - ctrl_cost."""
__credits__ = ["someone"]
import numpy as np


class ToyEnv(Base):
    """The reward is documented here."""

    def __init__(self, frame_skip: int = 2, forward_reward_weight: float = 1.0, ctrl_cost_weight: float = 0.1,
                 reset_noise_scale: float = 0.1):
        Base.__init__(self, frame_skip, forward_reward_weight, ctrl_cost_weight)
        self._forward_reward_weight = forward_reward_weight
        self._ctrl_cost_weight = ctrl_cost_weight
        self._noise = reset_noise_scale

    def control_cost(self, action):
        return self._ctrl_cost_weight * np.sum(np.square(action))

    def step(self, action):
        x0 = self.x
        self.simulate(action)
        x_velocity = (self.x - x0) / self.dt
        reward, reward_info = self._get_rew(x_velocity, action)
        bonus = reward * 2
        info = {"x_velocity": x_velocity, "reward_bonus": bonus, **reward_info}
        return self.obs(), reward, False, False, info

    def _get_rew(self, x_velocity, action):
        forward_reward = self._forward_reward_weight * x_velocity
        return forward_reward - self.control_cost(action), {"reward_forward": forward_reward}

    def obs(self):
        return np.array([self.x]) * self._noise
'''

EXPECTED = '''import numpy as np

class ToyEnv(Base):

    def __init__(self, frame_skip: int=2, reset_noise_scale: float=0.1):
        Base.__init__(self, frame_skip)
        self._noise = reset_noise_scale

    def step(self, action):
        x0 = self.x
        self.simulate(action)
        x_velocity = (self.x - x0) / self.dt
        info = {'x_velocity': x_velocity}
        return (self.obs(), ..., False, False, info)

    def obs(self):
        return np.array([self.x]) * self._noise
'''


def test_stripper_removes_reward_methods_arguments_and_their_flow_on_a_toy_module(tmp_path, monkeypatch):
    path = tmp_path / "toy_env_module.py"
    path.write_text(TOY)
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("toy_env_module", path))
    module.Base = object
    monkeypatch.setitem(sys.modules, "toy_env_module", module)
    module.__loader__.exec_module(module)
    assert full_source(module.ToyEnv).split("\n", 1)[1] == EXPECTED
    assert {"_get_rew", "control_cost", "ctrl_cost_weight", "_forward_reward_weight", "'reward_forward'",
            "'reward_bonus'"} <= hidden_names(module.ToyEnv)
