"""Meta-World MT10 v3 suite: ten manipulation tasks, scored by the success flag (BIRD Table 7)."""

from bird.envs.metaworld.adapter import MetaWorldAdapter, make_task
from bird.envs.metaworld.tasks import TASKS, canonical_task

__all__ = ["MetaWorldAdapter", "make_task", "TASKS", "canonical_task"]
