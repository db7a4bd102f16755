"""The result channel's framing and text sanitiser (bird/reward/protocol.py) and the worker's Python-level wall
(bird/reward/pywall.py), in this process: exact bytes, exact messages, the edges (empty payloads, frames larger than
one read, texts at the limit), and what a program's namespace holds."""

from __future__ import annotations

import builtins
import json
import math
import os
import struct
import sys
import threading
import types

import numpy as np
import pytest

from bird.reward import protocol, pywall
from bird.reward.languages import ModuleRule, get_language


# -- framing -----------------------------------------------------------------------------------------------------
def test_a_frame_is_header_length_json_payload_length_payload():
    frame = protocol.encode({"a": 1, "b": "é"}, b"xyz")
    header = json.dumps({"a": 1, "b": "é"}).encode()
    assert frame == struct.pack("<I", len(header)) + header + struct.pack("<Q", 3) + b"xyz"
    assert protocol.encode({}) == b"\x02\x00\x00\x00{}" + b"\x00" * 8
    assert protocol.MAX_HEADER == 65536


def _pipe_with(data: bytes, close: bool = True) -> int:
    """A pipe's read end with `data` written to it by a thread (larger than the pipe buffer is fine)."""
    r, w = os.pipe()

    def write():
        protocol.write_all(w, data)
        if close:
            os.close(w)

    threading.Thread(target=write, daemon=True).start()
    return r


def test_frames_round_trip_including_large_and_empty_payloads():
    big = np.arange(400_000, dtype=np.float64).tobytes()  # 3.2 MB: several reads of at most 1 MiB
    r = _pipe_with(protocol.encode({"seq": 7}, big) + protocol.encode({"seq": 8}))
    assert protocol.read_frame_blocking(r) == ({"seq": 7}, big)
    assert protocol.read_frame_blocking(r) == ({"seq": 8}, b"")
    with pytest.raises(EOFError):
        protocol.read_frame_blocking(r)
    os.close(r)


@pytest.mark.parametrize("cut", [2, 4 + 5, 4 + 8 + 4, 4 + 8 + 8 + 1])  # header {"s": 1} is 8 bytes
def test_a_frame_cut_short_is_an_end_of_file(cut):
    frame = protocol.encode({"s": 1}, b"ab")
    r = _pipe_with(frame[:cut])
    with pytest.raises(EOFError):
        protocol.read_frame_blocking(r)
    os.close(r)


def test_write_all_writes_everything_even_in_pieces():
    r, w = os.pipe()
    os.set_blocking(w, True)
    data = bytes(range(256)) * 20_000  # 5 MB, far beyond one write on a pipe
    got = []
    reader = threading.Thread(target=lambda: got.append(protocol._read_exact(r, len(data))))
    reader.start()
    protocol.write_all(w, data)
    reader.join(60)
    assert got == [data]
    for fd in (r, w):
        os.close(fd)


# -- the text sanitiser ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, limit, newlines, expected", [
    ("plain text", 20, False, "plain text"),
    ("\x1b[31mred\x1b[0m", 20, False, "red"),  # the whole escape sequence goes (bird/escape.py)
    ("rtl\u202eevil\u200b\x00end", 20, False, "rtlevilend"),
    ("a\tb\rc\nd", 20, False, "a b c d"),
    ("a\tb\nc", 20, True, "a b\nc"),
    ("x" * 10, 10, False, "x" * 10),
    ("x" * 11, 10, False, "x" * 9 + "…"),
    ("\x00" * 18 + "abc", 10, False, "ab"),  # only the first 2 × limit characters are read
    ("\x00" * 5 + "abc", 10, False, "abc"),
    ({"k": [1, 2]}, 50, False, '{"k": [1, 2]}'),
    ({"k": "v" * 40}, 12, False, '{"k": "vvvvv'),  # not text: its JSON, cut at the limit
    (None, 10, False, "null"),
])
def test_clean_text_bounds_and_strips_control_and_format_characters(value, limit, newlines, expected):
    assert protocol.clean_text(value, limit, newlines) == expected


def test_clean_text_keeps_newlines_only_when_asked():
    assert protocol.clean_text("one\ntwo", 100) == "one two"
    assert protocol.clean_text("one\ntwo", 100, newlines=True) == "one\ntwo"


# -- module proxies ------------------------------------------------------------------------------------------------
def test_a_proxy_is_read_only_and_says_so():
    proxy = pywall.ModuleProxy("numpy")
    with pytest.raises(AttributeError, match=r"^module 'numpy' is read-only: monkeypatching it is not allowed$"):
        proxy.isfinite = abs
    with pytest.raises(AttributeError, match=r"^module 'numpy' is read-only: monkeypatching it is not allowed$"):
        del proxy.__name__
    assert isinstance(proxy, types.ModuleType) and proxy.__name__ == "numpy"


def test_real_modules_are_found_by_dotted_name_alias_and_import(tmp_path, monkeypatch):
    (tmp_path / "freshpkg").mkdir()
    (tmp_path / "freshpkg" / "__init__.py").write_text("")
    (tmp_path / "freshpkg" / "sub.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pywall._real_module("freshpkg.sub").VALUE == 3  # a submodule not yet an attribute of its package
    for name in ("freshpkg", "freshpkg.sub"):
        sys.modules.pop(name, None)


def test_real_modules_are_found_by_dotted_name_and_alias():
    assert pywall._real_module("numpy") is np
    assert pywall._real_module("numpy.linalg") is np.linalg
    assert pywall._real_module("numpy.emath") is np.emath  # an alias, not an importable module name
    assert pywall._real_module("math") is math


def test_public_names_are_the_modules_api_minus_what_the_rule_hides():
    mod = types.ModuleType("m")
    mod.__all__ = ["listed"]
    for name in ("listed", "plain", "_private", "hidden", "__dunder__"):
        setattr(mod, name, 1)
    rule = ModuleRule({"hidden": "is hidden"})
    assert pywall._public_names(mod, rule) == ["listed", "plain"]
    mod.__all__ = ["_exported_private"]
    assert pywall._public_names(mod, rule) == ["hidden", "listed", "plain"][1:]  # a private name stays out
    only = ModuleRule(only=frozenset({"plain", "absent"}))
    assert pywall._public_names(mod, only) == ["plain"]
    lazy = types.ModuleType("lazy")  # a module that makes names on access (numpy does so for its submodules)
    lazy.__all__ = ["later"]
    lazy.__getattr__ = lambda name: 42 if name == "later" else None
    assert "later" not in dir(lazy) and pywall._public_names(lazy, rule) == ["later"]


def test_proxies_hold_the_real_functions_and_allowed_submodules_only():
    language = get_language("numpy")
    proxies = pywall.build_proxies(dict(language.modules))
    assert sorted(proxies) == sorted(language.modules)
    npx = proxies["numpy"]
    assert npx.sqrt is np.sqrt and npx.float64 is np.float64 and npx.pi == np.pi
    assert npx.linalg is proxies["numpy.linalg"] and npx.random is proxies["numpy.random"]
    assert npx.linalg.norm is np.linalg.norm and proxies["numpy.emath"].sqrt is np.emath.sqrt
    for hidden in ("save", "load", "lib", "ctypeslib", "testing", "seterr", "core", "ma", "_core"):
        assert not hasattr(npx, hidden), hidden
    assert not hasattr(proxies["typing"], "get_type_hints") and proxies["typing"].cast is __import__("typing").cast
    assert not any(isinstance(v, types.ModuleType) and not isinstance(v, pywall.ModuleProxy)
                   for p in proxies.values() for v in vars(p).values())  # no real module inside any proxy
    assert proxies["math"].sqrt is math.sqrt and "__file__" not in vars(proxies["math"])


# -- the import hook -----------------------------------------------------------------------------------------------
@pytest.fixture  # per test: each test that uses the hook builds it (mutation testing maps tests to what they call)
def hook():
    modules = dict(get_language("numpy").modules)
    proxies = pywall.build_proxies(modules)
    return pywall.make_import(proxies, modules), proxies


def test_imports_return_proxies(hook):
    imp, proxies = hook
    assert imp("numpy") is proxies["numpy"]
    assert imp("numpy.linalg") is proxies["numpy"]  # `import numpy.linalg` binds the top-level name
    assert imp("numpy.linalg", None, None, ("norm",), 0) is proxies["numpy.linalg"]
    assert imp("typing", None, None, ["Dict", "cast"]) is proxies["typing"]


@pytest.mark.parametrize("args, message", [
    (("numpy", None, None, (), 1), "relative imports are not allowed"),
    (("os",), "import of 'os' is not allowed (allowed: ['functools', 'math', 'numpy', 'numpy.emath', "
              "'numpy.exceptions', 'numpy.fft', 'numpy.linalg', 'numpy.polynomial', 'numpy.random', 'numpy.typing', "
              "'typing'])"),
    (("numpy.lib",), "import of 'numpy.lib' is not allowed"),
    (("numpy", None, None, ("*",)), "cannot import '*' from 'numpy': star imports are not allowed"),
    (("numpy", None, None, ("sqrt", "save")), "cannot import 'save' from 'numpy': reads or writes files"),
    (("numpy", None, None, ("_core",)), "cannot import '_core' from 'numpy': starts with an underscore"),
    (("numpy", None, None, ("no_such",)), "cannot import 'no_such' from 'numpy': is not part of its allowed API"),
    (("typing", None, None, ("sys",)), "cannot import 'sys' from 'typing': is not in the allowed part"),
])
def test_refused_imports_say_why(hook, args, message):
    imp, _ = hook
    with pytest.raises(ImportError) as err:
        imp(*args)
    assert str(err.value).startswith(message), str(err.value)


def test_c_level_imports_of_loaded_modules_get_nothing(hook):
    imp, _ = hook
    assert imp("os", None, None, [], 0) is None  # PyImport_Import's form: a list fromlist, empty
    with pytest.raises(ImportError):
        imp("os", None, None, (), 0)  # a tuple: the program's own `import os`
    with pytest.raises(ImportError):
        imp("no_such_module_xyz", None, None, [], 0)  # not loaded: refused too
    assert "os" in sys.modules


# -- the namespace -------------------------------------------------------------------------------------------------
def test_a_programs_namespace_has_safe_builtins_the_hook_and_the_bound_modules():
    ns = pywall.namespace(get_language("numpy"))
    safe = ns["__builtins__"]
    assert set(safe) == {*[n for n in pywall.SAFE_BUILTINS if hasattr(builtins, n)], "__import__", "__build_class__"}
    assert safe["len"] is len and safe["__build_class__"] is builtins.__build_class__
    assert ns["__name__"] == "reward_program"
    assert ns["np"] is ns["numpy"] and isinstance(ns["np"], pywall.ModuleProxy) and ns["np"].sqrt is np.sqrt
    assert ns["math"].sqrt is math.sqrt
    exec(compile("import numpy.linalg as la\nfrom math import sqrt\nclass C:\n    pass\n"
                 "value = la.norm([3.0, 4.0]) + sqrt(4.0)\n", "<test>", "exec"), ns)
    assert ns["value"] == 7.0 and isinstance(ns["C"], type)
    with pytest.raises(ImportError, match="import of 'os' is not allowed"):
        exec("import os", ns)
    with pytest.raises(NameError):
        exec("open('x')", ns)
    other = pywall.namespace(get_language("numpy"))
    assert other["np"] is not ns["np"]  # fresh proxies per program


def test_a_program_may_start_with_from_future_import_annotations():
    ns = pywall.namespace(get_language("numpy"))
    code = ("from __future__ import annotations\n\n"
            "def compute_reward(obs: np.ndarray, action: Undefined) -> float:\n    return 1.0\n")
    exec(compile(code, "<reward>", "exec"), ns)  # the statement is a compiler switch that also runs an import
    # the switch took effect: annotations stay unevaluated strings (Undefined is never looked up)
    assert ns["compute_reward"].__annotations__ == {"obs": "np.ndarray", "action": "Undefined", "return": "float"}
    assert ns["annotations"] is True  # bound from the hook's stand-in, not the real __future__ module
