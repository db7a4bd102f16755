"""Structural pattern matching reads attributes by keyword, with no attribute expression in the code."""
# class: dynamic-attributes
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    def walk():
        match gen:
            case object(gi_frame=frame):
                pass
        while frame is not None:
            match frame:
                case object(f_globals=g, f_back=back):
                    if "os" in g:
                        yield g["os"]
                    frame = back

    gen = walk()
    next(gen).system("touch @SENTINEL@/d06")
    return next_obs["x"], {}
