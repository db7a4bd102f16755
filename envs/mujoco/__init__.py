"""Gym MuJoCo v5 suite: HalfCheetah, Hopper, Swimmer, InvertedPendulum, Reacher."""

from bird.envs.mujoco.adapter import MujocoAdapter, make_task

__all__ = ["MujocoAdapter", "make_task"]
