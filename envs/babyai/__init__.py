"""BabyAI (minigrid 3.2.0): GRACE's 20 levels, the BabyAI bot as the scripted expert, the symbolic grid as the state."""

from bird.envs.babyai.adapter import BabyAIAdapter, make_task
from bird.envs.babyai.levels import LEVELS, level

__all__ = ["BabyAIAdapter", "make_task", "LEVELS", "level"]
