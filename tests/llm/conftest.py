"""Fixtures for the LLM backend tests: no network beyond 127.0.0.1, no real keys, a private cache directory."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator

import pytest

from bird.config.schema import BudgetConfig, LLMConfig

from .fake_servers import FakeLLMServer

SECRET = {"openai": "sk-test-SECRET-7f3a9c", "anthropic": "sk-ant-test-SECRET-51be02"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ENV_VARS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
    "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "ANTHROPIC_PROFILE", "BIRD_CACHE_DIR",
)


def _loopback_only(host: object) -> None:
    try:
        ok = host == "localhost" or ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise OSError(f"test network guard: connection to {host!r} refused (loopback only)")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Refuse every connection and name lookup that is not loopback; clear provider env vars."""
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _loopback_only(address[0])  # type: ignore[index]
        return real_connect(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host is not None:
            _loopback_only(host)
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))  # never the user's cache


@pytest.fixture(params=["openai", "anthropic"])
def wire(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def with_key(monkeypatch: pytest.MonkeyPatch, wire: str) -> str:
    """Put a recognisable fake key in the provider's env var; returns it."""
    monkeypatch.setenv(KEY_ENV[wire], SECRET[wire])
    return SECRET[wire]


@pytest.fixture
def server(wire: str) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(wire, "```python\nreturn 1\n```") as srv:
        yield srv


def llm_cfg(wire: str, srv: FakeLLMServer | None, tmp_path: object, **kw: object) -> LLMConfig:
    """A test config: tiny backoff, short timeout, private cache dir."""
    base = dict(
        backend=wire, model="test-model", base_url=srv.base_url if srv else None, max_retries=3,
        retry_base_s=0.001, retry_max_s=1.0, timeout_s=5.0, cache="off", cache_dir=str(tmp_path) + "/cache",
    )
    base.update(kw)
    return LLMConfig(**base)  # type: ignore[arg-type]


def no_budget() -> BudgetConfig:
    return BudgetConfig()
