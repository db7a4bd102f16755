"""The same walk through a coroutine's cr_frame while it runs."""
# class: frames
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    box = []

    async def grab():
        frame = box[0].cr_frame.f_back
        while frame is not None and "os" not in frame.f_globals:
            frame = frame.f_back
        return frame.f_globals["os"]

    co = grab()
    box.append(co)
    try:
        co.send(None)
    except Exception as stop:  # StopIteration, whose name the sandbox may not provide
        stop.value.system("touch @SENTINEL@/f03")
    return next_obs["x"], {}
