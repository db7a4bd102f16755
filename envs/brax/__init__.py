"""Brax suite (JAX physics): HalfCheetah, Hopper, Walker2d, Ant, Swimmer, InvertedPendulum, Reacher.

A separate suite from Gym MuJoCo (a different simulator), scored with the same definitions."""

from bird.envs.brax.adapter import BraxAdapter, make_task

__all__ = ["BraxAdapter", "make_task"]
