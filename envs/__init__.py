"""Environment adapters (installed as bird.envs)."""
