"""Run sandbox code in a forked child of the test process, the way the worker runs it on itself: the child applies
OS layers to itself (which cannot be undone, so never in the test process), tries what a layer forbids, and reports
back as JSON on a pipe.

Why a fork and not a fresh interpreter (as tests/security does): the child runs the very modules this process has
imported, so a mutation-testing run (`make mutate`, mutmut) that swaps a function here also swaps it in the child.
mutmut learns which tests cover a function by recording calls in the test process; a child records its own, so
each message from the child carries the calls it recorded and the parent adds them to its own record. Outside a
mutmut run that part does nothing.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Child", "attempt", "in_child", "limits", "send", "spawn", "vm_size_mb"]

_channel: int | None = None  # the child's end of its report pipe


def _recorded_calls() -> list[str]:
    """Functions mutmut's statistics run recorded in this process (empty outside mutmut)."""
    state = sys.modules.get("mutmut.state")
    return sorted(state.state()._stats) if state is not None else []


def _add_recorded_calls(names: list[str]) -> None:
    state = sys.modules.get("mutmut.state")
    if state is not None and names:
        state.state()._stats.update(names)


def send(message: dict[str, Any]) -> None:
    """Child side: one JSON line to the parent (with the calls recorded so far)."""
    assert _channel is not None, "send() is for the child"
    data = (json.dumps({**message, "calls": _recorded_calls()}, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(_channel, view):]


@dataclass
class Child:
    """A forked child: its pid, the messages it sent, and once waited for, how it ended."""

    pid: int
    fd: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    status: int | None = None  # exit code, or -signal number
    cpu_s: float = 0.0  # user + system CPU time it used
    _buffer: bytes = b""

    @property
    def result(self) -> Any:
        done = [m for m in self.messages if "result" in m or "error" in m]
        assert done, f"the child sent no result (status {self.status}); messages {self.messages}"
        assert "error" not in done[-1], done[-1]["error"]
        return done[-1]["result"]

    def read(self, timeout: float) -> bool:
        """Read what the child sent until it closes its end or `timeout` passes; True when it closed."""
        deadline = time.monotonic() + timeout
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poll.poll(max(1, int(left * 1000))):
                return False
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return True
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                _add_recorded_calls(message.pop("calls", []))
                self.messages.append(message)

    def wait(self, timeout: float = 60.0) -> Child:
        """Collect its messages and its exit; a child still running after `timeout` is killed (and fails)."""
        closed = self.read(timeout)
        if not closed:
            os.kill(self.pid, signal.SIGKILL)
        _, status, usage = os.wait4(self.pid, 0)
        os.close(self.fd)
        self.status = os.waitstatus_to_exitcode(status)
        self.cpu_s = usage.ru_utime + usage.ru_stime
        assert closed, f"child {self.pid} still running after {timeout} s: killed; messages {self.messages}"
        return self


def spawn(fn: Callable[..., Any], *args: Any, keep: tuple[int, ...] = (), stdin: int | None = None,
          cwd: str | None = None) -> Child:
    """Fork; the child runs fn(*args) and sends {"result": value} (or {"error": text}), then exits 0.

    :param keep: file descriptors the child keeps open (besides 0-2 and its report pipe); all others are closed.
    :param stdin: a descriptor to become the child's fd 0.
    :param cwd: the child's working directory.
    """
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test process
        global _channel
        try:
            _channel = w
            # a SIGCHLD handler of the test runner (mutmut's fork server writes to a pipe it holds) would write into
            # whatever descriptor reuses that pipe's number once the fds below are closed
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            if stdin is not None:
                os.dup2(stdin, 0)
            for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
                if fd > 2 and fd not in (w, *keep):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            if cwd is not None:
                os.chdir(cwd)
            send({"result": fn(*args)})
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            try:
                send({"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}"})
            except BaseException:  # noqa: BLE001
                pass
        finally:
            try:
                os._exit(0)
            finally:  # an exit a test patched and that raised: never back into the test process
                os.kill(os.getpid(), signal.SIGKILL)
    os.close(w)
    return Child(pid, r)


def in_child(fn: Callable[..., Any], *args: Any, timeout: float = 60.0, **kw: Any) -> Child:
    """spawn(...) and wait for it."""
    return spawn(fn, *args, **kw).wait(timeout)


def vm_size_mb() -> int:
    """This process's mapped address space (a child's starts the same): address-space limits are set above it."""
    with open("/proc/self/status") as fh:
        line = next(ln for ln in fh if ln.startswith("VmSize:"))
    return int(line.split()[1]) // 1024


def limits() -> dict[str, tuple[str, str]]:
    """/proc/self/limits: name -> (soft, hard), as the kernel reports them."""
    out = {}
    with open("/proc/self/limits") as fh:
        for line in list(fh)[1:]:
            parts = line[26:].split()
            out[line[:26].strip()] = (parts[0], parts[1])
    return out


def attempt(fn: Callable[[], Any]) -> str:
    """'ok' when fn() succeeds, else the exception's type and errno (e.g. 'PermissionError:1')."""
    try:
        fn()
        return "ok"
    except BaseException as exc:  # noqa: BLE001
        return f"{type(exc).__name__}:{getattr(exc, 'errno', '') or ''}"
