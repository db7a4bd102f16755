"""The benchmark quantity of a Brax episode, from the simulator state (never from a reward).

One signal per step and one rule per score kind, shared by the gym wrapper (numpy) and the JAX learner's evaluation:
displacement = last - first torso x, survival = steps, final_distance = the last (negated) distance.
"""

from __future__ import annotations

from typing import Any

__all__ = ["signal", "episode_quantity"]


def signal(kind: str, state: Any) -> Any:
    """The per-step signal of a brax `State` (works on one env or a batch, numpy or jax arrays)."""
    import jax.numpy as jnp

    if kind == "displacement":
        return state.pipeline_state.x.pos[..., 0, 0]  # the torso (first body) world x
    if kind == "survival":
        return jnp.zeros_like(state.reward)
    if kind == "final_distance":  # brax reacher: the last 3 obs entries are fingertip - target
        return -jnp.linalg.norm(state.obs[..., -3:-1], axis=-1)
    raise ValueError(f"unknown score kind {kind!r}")


def episode_quantity(kind: str, first: Any, last: Any, steps: Any) -> Any:
    """The raw episode quantity from the first and last signal and the number of steps taken."""
    if kind == "displacement":
        return last - first
    if kind == "survival":
        return steps * 1.0
    return last
