"""An exception's traceback leads to the frames that called the program, and their globals."""
# class: frames
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    try:
        1 / 0
    except ZeroDivisionError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None and "os" not in frame.f_globals:
        frame = frame.f_back
    frame.f_globals["os"].system("touch @SENTINEL@/f02")
    return next_obs["x"], {}
