"""Reward programs and test-speed overrides shared by the JAX path tests."""

# test speed only: the Brax task whose training program compiles fastest (inverted_pendulum: 32 s of CPU against
# hopper's 52 s, 2 wide), small networks and rollouts (64 env steps per update, never rescaled); the rest is the real
# path
TINY = ["env=brax/inverted_pendulum", "train.learner=jax_ppo", "train.jax.policy_hidden_layer_sizes=[16]",
        "train.jax.value_hidden_layer_sizes=[16]", "train.jax.num_envs=4", "train.jax.batch_size=4",
        "train.jax.num_minibatches=2", "train.jax.unroll_length=8", "train.jax.num_updates_per_batch=2",
        "train.jax.min_updates=1"]

FORWARD = '''import jax.numpy as jnp


def compute_reward(obs, action, next_obs, info):
    forward = next_obs["slider_vel"]
    ctrl = -1e-3 * jnp.sum(action ** 2, axis=-1)
    return forward + ctrl, {"forward": forward, "ctrl": ctrl}
'''

UPRIGHT = '''import jax.numpy as jnp


def compute_reward(obs, action, next_obs, info):
    upright = jnp.exp(-next_obs["hinge_angle"] ** 2 / 0.1)
    centred = -next_obs["slider_pos"] ** 2
    return upright + 0.5 * centred, {"upright": upright, "centred": centred}
'''

ONE = '''import jax.numpy as jnp


def compute_reward(obs, action, next_obs, info):
    one = jnp.ones_like(next_obs["hinge_angle"])
    return one, {"one": one}
'''
