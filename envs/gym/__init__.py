"""The gym suite: tasks written as files (env/gym/<task>.yaml, typed by bird/config/schema.py TaskFileConfig) over any
Gymnasium env; docs/task_files.md."""

from bird.envs.gym.adapter import GymTaskAdapter, make_task

__all__ = ["GymTaskAdapter", "make_task"]
