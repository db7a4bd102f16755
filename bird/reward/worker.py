"""Reward-program worker: isolates itself, then imports and runs one untrusted program.

Started by the host (sandbox.launch) as `python -I -c BOOT RESULT_FD PATHS` in a new session, with an empty
working directory, an environment of thread counts only, stdin = requests, stdout/stderr = /dev/null and
RESULT_FD = the result pipe. Sequence:
  1. init {language, isolation}  -> layers applied (isolation.apply)  -> {ok, layers}, or {ok: false, refused}
     when the worker could not read what it needs after the uid drop (the host raises SandboxSetupError)
  2. load {code, entry, contract, fields} -> module-level code run under the per-call limits -> {ok[, plan_list]}
  3. calls, one per request, until stdin closes.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

from bird.reward import isolation, protocol
from bird.reward.languages import Language, get_language
from bird.reward.pywall import namespace

__all__ = ["main", "start"]


def _error(kind: str, exc: BaseException, memory_mb: int) -> dict[str, Any]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    detail = "".join(line for line in tb if "bird/reward/" not in line)[-4000:]
    reason = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError):
        reason = f"the memory limit fired (address space, memory_mb={memory_mb} MiB): {reason}"
    elif isinstance(exc, RecursionError):
        reason = f"the recursion limit fired: {reason}"
    return {"ok": False, "kind": kind, "reason": reason[:500], "detail": detail}


class Session:
    """The worker's two channels and its limits."""

    def __init__(self, result_fd: int) -> None:
        self.result_fd = result_fd
        self.seq = 0
        self.memory_mb = 0
        self.call_timeout_s = 5.0

    def recv(self) -> tuple[dict[str, Any], bytes]:
        header, payload = protocol.read_frame_blocking(0)
        self.seq = int(header.get("seq", 0))
        return header, payload

    def send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        protocol.write_all(self.result_fd, protocol.encode({**header, "seq": self.seq}, payload))


def start(result_fd: int) -> tuple[Session, Language]:
    """Steps shared by every worker entry point: read init, apply the layers, report them."""
    session = Session(result_fd)
    init, _ = session.recv()
    language = get_language(init["language"])
    iso = init["isolation"]
    cfg = isolation.IsolationConfig(
        memory_mb=int(iso["memory_mb"]), call_timeout_s=float(iso["call_timeout_s"]), host_pid=int(iso["host_pid"]),
        threads=language.threads, read_modules=tuple(language.preload),
        preload=(language.runner.partition(":")[0],),  # bird/ itself is not readable once the layers are on
        extra_syscalls=language.extra_syscalls, extra_read_paths=language.extra_read_paths,
    )
    session.memory_mb, session.call_timeout_s = cfg.memory_mb, cfg.call_timeout_s
    apply_layers(session, cfg)
    return session, language


def apply_layers(session: Session, cfg: isolation.IsolationConfig) -> list[isolation.Layer]:
    """Apply the layers and report them to the host; a refusal (isolation.SetupRefused) is reported and ends the
    process (the host raises SandboxSetupError with its message)."""
    try:
        layers = isolation.apply(cfg)
    except isolation.SetupRefused as exc:
        session.send({"ok": False, "refused": str(exc)})
        sys.exit(0)
    session.send({"ok": True, "layers": [layer.to_json() for layer in layers]})
    return layers


def start_configured(result_fd: int) -> tuple[Session, isolation.IsolationConfig]:
    """The start of a walled process whose host sends its IsolationConfig whole (the trainer, the inspector): read
    init, apply the layers, report them."""
    session = Session(result_fd)
    init, _ = session.recv()
    cfg = isolation.IsolationConfig.from_json(init["isolation"])
    apply_layers(session, cfg)
    return session, cfg


def _load(session: Session, language: Language) -> Any:
    header, _ = session.recv()
    ns = namespace(language)
    module, _, attr = language.runner.partition(":")
    make_runner = getattr(importlib.import_module(module), attr)
    try:
        isolation.arm_cpu_limit(session.call_timeout_s)
        exec(compile(header["code"], "<reward>", "exec"), ns)
        runner = make_runner(ns, header["contract"], header["entry"], header["fields"])
    except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt from a program are failures too
        session.send(_error("runtime_error", exc, session.memory_mb))
        return None
    session.send({"ok": True, **runner.meta})
    return runner


def main(result_fd: int) -> None:
    session, language = start(result_fd)
    runner = _load(session, language)
    if runner is None:
        return
    while True:
        try:
            header, payload = session.recv()
        except EOFError:
            return
        try:
            isolation.arm_cpu_limit(session.call_timeout_s)
            reply, data = runner(header, payload)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported to the host
            reply, data = _error("runtime_error", exc, session.memory_mb), b""
        session.send(reply, data)


if __name__ == "__main__":
    main(int(sys.argv[1]))
