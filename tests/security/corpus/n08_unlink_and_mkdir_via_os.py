"""With os in hand (through typing's imports): delete the victim, make directories."""
# class: files
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    os.unlink("@VICTIM@")
    os.makedirs("@SENTINEL@/n08/deep")
    return next_obs["x"], {}
