"""An escaped payload (escaped_payloads.py) inside a trainer's wall: what native code an artefact reached through an
XLA bug could try. It applies the trainer's layers (its deferred uid drop included) exactly as
bird/learners/trainer.py does, then runs the one attempt asked for and reports what happened."""

from __future__ import annotations

import os

from escaped_payloads import ATTEMPTS

from bird.reward import isolation
from bird.reward.worker import Session


def main(result_fd: int) -> None:
    session = Session(result_fd)
    init, _ = session.recv()
    cfg = isolation.IsolationConfig.from_json(init["isolation"])
    layers = isolation.apply(cfg)
    if cfg.defer_uid_drop and os.geteuid() == 0:  # the real trainer drops here, before any artefact arrives
        layers = [isolation.drop_identity(cfg) if x.name == "unprivileged_user" else x for x in layers]
    session.send({"ok": True, "layers": [layer.to_json() for layer in layers]})
    header, _ = session.recv()
    targets = {**header["targets"], "result_fd": result_fd}
    try:
        value = ATTEMPTS[header["attempt"]](targets)
        reply = {"ok": True, "outcome": "completed", "value": repr(value)[:300]}
    except BaseException as exc:  # noqa: BLE001 - what stopped it is the result
        reply = {"ok": True, "outcome": "raised", "error": type(exc).__name__, "errno": getattr(exc, "errno", None),
                 "text": str(exc)[:300]}
    session.send(reply)
