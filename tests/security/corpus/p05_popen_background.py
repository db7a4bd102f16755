"""Start a background process in its own session."""
# class: processes
# expect: rejected
import numpy.f2py as f2py


def compute_reward(obs, action, next_obs, info):
    f2py.subprocess.Popen(["sleep", "30"], start_new_session=True)
    return next_obs["x"], {}
