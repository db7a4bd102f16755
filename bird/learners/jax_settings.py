"""The JAX PPO learner's resolved hyper-parameters: command line > the task's Brax setting > Brax's default,
then the rollout batch fitted to the budget. Computed once per training batch, written to jax_ppo.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from bird.config.schema import JaxPPOConfig

__all__ = ["PPOSettings", "resolve_settings", "BRAX_DEFAULTS"]

# brax.training.agents.ppo.train.train defaults (brax 0.14.2) and ppo_networks.make_ppo_networks' layer sizes
BRAX_DEFAULTS: dict[str, Any] = {
    "num_envs": 1, "unroll_length": 10, "batch_size": 32, "num_minibatches": 16, "num_updates_per_batch": 2,
    "learning_rate": 1e-4, "entropy_cost": 1e-4, "discounting": 0.9, "gae_lambda": 0.95, "clipping_epsilon": 0.3,
    "reward_scaling": 1.0, "normalize_observations": False, "action_repeat": 1, "max_grad_norm": None,
    "policy_hidden_layer_sizes": (32, 32, 32, 32), "value_hidden_layer_sizes": (256, 256, 256, 256, 256),
}


@dataclass(frozen=True)
class PPOSettings:
    """Brax ppo.train's knobs plus what the budget derives from them. One update = batch_size × num_minibatches
    trajectories of unroll_length decisions, collected by num_envs envs per candidate."""

    num_envs: int
    unroll_length: int
    batch_size: int
    num_minibatches: int
    num_updates_per_batch: int
    learning_rate: float
    entropy_cost: float
    discounting: float
    gae_lambda: float
    clipping_epsilon: float
    reward_scaling: float
    normalize_observations: bool
    action_repeat: int
    max_grad_norm: float | None
    policy_hidden_layer_sizes: tuple[int, ...]
    value_hidden_layer_sizes: tuple[int, ...]
    normalize_reward: bool  # train.normalize_reward: divide by the running std of the discounted return
    n_updates: int = 0  # derived: PPO updates in one training
    scaled_from: dict[str, int] | None = None  # derived: the task setting before fitting to the budget

    @property
    def rollouts_per_update(self) -> int:
        return self.batch_size * self.num_minibatches // self.num_envs

    @property
    def decisions_per_update(self) -> int:
        """Policy steps per env per update (T of the rollout)."""
        return self.rollouts_per_update * self.unroll_length

    @property
    def steps_per_update(self) -> int:
        """Env steps per update per candidate (counted in simulator steps, as Brax counts them)."""
        return self.batch_size * self.num_minibatches * self.unroll_length * self.action_repeat

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "steps_per_update": self.steps_per_update}


def _fit(s: PPOSettings, env_steps: int, min_updates: int) -> PPOSettings:
    """Halve num_envs and batch_size together (then num_minibatches) until the budget affords min_updates updates."""
    start = {"num_envs": s.num_envs, "batch_size": s.batch_size, "num_minibatches": s.num_minibatches}
    while env_steps < min_updates * s.steps_per_update:
        if s.batch_size > 1 and s.num_envs > 1:
            nxt = replace(s, batch_size=s.batch_size // 2, num_envs=s.num_envs // 2)
        elif s.num_minibatches > 1 and s.num_envs > 1:
            nxt = replace(s, num_minibatches=s.num_minibatches // 2, num_envs=s.num_envs // 2)
        else:
            break
        if (nxt.batch_size * nxt.num_minibatches) % nxt.num_envs:
            break
        s = nxt
    changed = start != {"num_envs": s.num_envs, "batch_size": s.batch_size, "num_minibatches": s.num_minibatches}
    return replace(s, scaled_from=start if changed else None)


def resolve_settings(cfg: JaxPPOConfig, task: str, env_steps: int, normalize_reward: bool) -> PPOSettings:
    """The settings one training uses; raises ValueError naming the bad key when they cannot work."""
    table = cfg.tasks.get(task, {})
    unknown = sorted(set(table) - set(BRAX_DEFAULTS))
    if unknown:
        raise ValueError(f"train.jax.tasks.{task}: unknown keys {unknown}; allowed: {sorted(BRAX_DEFAULTS)}")
    values = {}
    for f in fields(PPOSettings):
        if f.name in BRAX_DEFAULTS:
            given = getattr(cfg, f.name)
            values[f.name] = given if given is not None else table.get(f.name, BRAX_DEFAULTS[f.name])
    for key in ("policy_hidden_layer_sizes", "value_hidden_layer_sizes"):
        values[key] = tuple(int(v) for v in values[key])
    s = PPOSettings(**values, normalize_reward=normalize_reward)
    for key in ("num_envs", "unroll_length", "batch_size", "num_minibatches", "num_updates_per_batch", "action_repeat"):
        if int(getattr(s, key)) < 1:
            raise ValueError(f"train.jax.{key}={getattr(s, key)}: must be >= 1")
    if (s.batch_size * s.num_minibatches) % s.num_envs:
        raise ValueError(f"train.jax: batch_size × num_minibatches ({s.batch_size} × {s.num_minibatches}) must be a "
                         f"multiple of num_envs ({s.num_envs}), as in Brax")
    s = _fit(s, env_steps, cfg.min_updates)
    return replace(s, n_updates=max(1, -(-env_steps // s.steps_per_update)))
