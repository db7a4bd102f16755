"""Double-fork a daemon in a new session that outlives the check and acts later."""
# class: processes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            typing.sys.modules["time"].sleep(20)
            os.close(os.open("@SENTINEL@/p04", os.O_CREAT | os.O_WRONLY))
        os._exit(0)
    return next_obs["x"], {}
