"""SB3 PPO's features for a categorical grid observation (BabyAI): a small CNN over embedded (type, colour, state)
ids, a character embedding of the text field (the mission), and the remaining fields as they are.

The SB3 learner (sb3_ppo.py) picks it when the task's observation holds a field of shape (H, W, C): `policy_for`
gives the policy kwargs, and the ids are not normalised. It stands in for GRACE's VLM policy
(llava-onevision-qwen2-0.5b-ov-hf, App. A.4 Table 4); the label is in the task's substitutes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from bird.envs.base import TaskSpec

__all__ = ["GridMissionExtractor", "policy_for"]

_IDS = 16  # ids per grid channel (Minigrid's largest, object type, is 10)
_CHARS = 128  # mission characters beyond ASCII share the last embedding


class GridMissionExtractor(BaseFeaturesExtractor):
    """obs (B, D) -> features (B, features_dim).

    :param grid: (start, H, W, C) of the grid field; :param text: (start, length) of the text field or None;
    :param rest: the other slots (start, size) pairs, fed as floats.
    """

    def __init__(self, observation_space: gym.spaces.Box, grid: tuple[int, int, int, int],
                 text: tuple[int, int] | None, rest: list[tuple[int, int]], features_dim: int = 128) -> None:
        super().__init__(observation_space, features_dim)
        self.grid, self.text, self.rest = grid, text, rest
        _, _, _, c = grid
        self.cell = nn.Embedding(c * _IDS, 8)
        self.register_buffer("offsets", torch.arange(c) * _IDS, persistent=False)
        self.cnn = nn.Sequential(nn.Conv2d(8 * c, 32, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d((4, 4)), nn.Flatten())
        n_text = 0
        if text is not None:
            self.char = nn.Embedding(_CHARS, 4)
            self.words = nn.Linear(text[1] * 4, 64)
            n_text = 64
        n_rest = sum(size for _, size in rest)
        self.head = nn.Sequential(nn.Linear(32 * 16 + n_text + n_rest, features_dim), nn.ReLU())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        start, h, w, c = self.grid
        b = obs.shape[0]
        ids = obs[:, start : start + h * w * c].long().clamp(0, _IDS - 1).view(b, h, w, c) + self.offsets
        cells = self.cell(ids).view(b, h, w, c * 8).permute(0, 3, 1, 2)
        parts = [self.cnn(cells)]
        if self.text is not None:
            chars = obs[:, self.text[0] : self.text[0] + self.text[1]].long().clamp(0, _CHARS - 1)
            parts.append(torch.relu(self.words(self.char(chars).view(b, -1))))
        parts += [obs[:, s : s + k] for s, k in self.rest]
        return self.head(torch.cat(parts, dim=1))


def policy_for(spec: TaskSpec) -> dict[str, Any] | None:
    """SB3 policy kwargs for a task whose observation holds a (H, W, C) grid field, else None (SB3's MlpPolicy)."""
    fields = spec.obs_index.fields
    grid = next((f for f in fields if len(f.shape) == 3), None)
    if grid is None:
        return None
    text = next((f for f in fields if f.kind == "text"), None)
    rest = [(f.start, f.size) for f in fields if f is not grid and f is not text]
    return {"features_extractor_class": GridMissionExtractor,
            "features_extractor_kwargs": {"grid": (grid.start, *grid.shape),
                                          "text": None if text is None else (text.start, text.size), "rest": rest}}
