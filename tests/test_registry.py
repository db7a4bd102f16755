"""The registry, the schema and the conf groups agree; no code branches on a method's name."""

import tomllib
from pathlib import Path

import pytest

from bird import registry
from bird.config.load import CONF_DIR
from bird.method_branches import method_branches, method_branches_in, method_names

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = ("bird", "methods", "envs", "analysis")


def test_every_declared_family_is_populated_and_every_registered_family_declared():
    declared = {f.name for f in registry.FAMILIES}
    assert set(registry.families()) <= declared
    for name in declared:
        assert registry.names(name), f"family {name} is declared but has no member"


def test_every_config_key_of_a_family_exists_in_the_schema(compose_cfg):
    cfg = compose_cfg()
    for kind in ("keys", "optional_keys", "list_keys"):
        for key in registry.config_keys(kind):
            section, _, name = key.partition(".")
            assert hasattr(getattr(cfg, section), name), key


def test_llm_options_are_registered_backends():
    for path in (CONF_DIR / "llm").glob("*.yaml"):
        assert path.stem in registry.names("llm")


def test_duplicate_registration_is_an_error(declare):
    declare("test_family")
    registry.register("test_family", "x")(object())
    with pytest.raises(ValueError, match="already registered"):
        registry.register("test_family", "x")(object())


def test_registering_into_an_undeclared_family_is_an_error():
    with pytest.raises(ValueError, match="unknown family 'fitnes'"):
        registry.register("fitnes", "x")(object())


def test_declarations_are_typed_and_default_to_nothing():
    assert registry.declared("fitness", "judge_score").needs_judgement
    assert not registry.declared("fitness", "benchmark_score").needs_judgement
    assert registry.declared("learner", "jax_ppo").batched and registry.get("learner", "jax_ppo").language == "jax"
    assert registry.get("learner", "sb3_ppo").trains and not registry.get("learner", "none").trains


NAMES = {"eureka", "grace", "card"}
# each known-bad form, the line it sits on and what the detector must say
BAD_FORMS = {
    "if_equals": ("if cfg.method == 'x':\n    pass\n", ["1 branches on the method"]),
    "elif_constant": ("if a:\n    pass\nelif name == 'grace':\n    pass\n", ["3 compares with 'grace'"]),
    "conditional_expression": ("y = 1 if kind == 'eureka' else 2\n", ["1 compares with 'eureka'"]),
    "while": ("while kind != 'grace':\n    pass\n", ["1 compares with 'grace'"]),
    "assert": ("assert self.cfg.method\n", ["1 branches on the method"]),
    "comprehension_filter": ("xs = [c for c in cs if c == 'card']\n", ["1 compares with 'card'"]),
    "flag_assignment": ("is_grace = cfg.method == name\n", ["1 branches on the method"]),
    "in_tuple": ("if name in ('eureka', 'card'):\n    pass\n", ["1 compares with 'card'", "1 compares with 'eureka'"]),
    "method_in_collection": ("if cfg.method in NEEDS_DEMOS:\n    pass\n", ["1 branches on the method"]),
    "substring": ("ok = 'grace' in label\n", ["1 compares with 'grace'"]),
    "match_subject": ("match cfg.method:\n    case _:\n        pass\n", ["1 branches on the method"]),
    "match_case": ("match kind:\n    case 'grace' | 'card':\n        pass\n",
                   ["2 matches 'card'", "2 matches 'grace'"]),
    "dict_dispatch": ("run = HANDLERS[cfg.method]\n", ["1 dispatches on the method"]),
    "dict_get_dispatch": ("run = HANDLERS.get(cfg.method, default)\n", ["1 dispatches on the method"]),
    "getattr_dispatch": ("run = getattr(handlers, cfg.method)\n", ["1 dispatches on the method"]),
    "dispatch_table": ("HANDLERS = {'eureka': a, 'other': b}\n", ["1 dispatch table keyed by 'eureka'"]),
    "dispatch_table_call": ("HANDLERS = dict(card=a)\n", ["1 dispatch table keyed by 'card'"]),
    "nested_config_attribute": ("if state.run_config.method == m:\n    pass\n", ["1 branches on the method"]),
    "config_item": ("if config['method'] == m:\n    pass\n", ["1 branches on the method"]),
    "config_get": ("if cfg.get('method', None) == m:\n    pass\n", ["1 branches on the method"]),
    "conf_name": ("if conf.method == m:\n    pass\n", ["1 branches on the method"]),
    "config_deeper_in_the_chain": ("if cfg.run.method == m:\n    pass\n", ["1 branches on the method"]),
    "config_from_a_call": ("if load_cfg().method == m:\n    pass\n", ["1 branches on the method"]),
    "lines_in_order": ("if a == 'card':\n    pass\n" + "x = 1\n" * 8 + "if b == 'eureka':\n    pass\n",
                       ["1 compares with 'card'", "11 compares with 'eureka'"]),
    "getattr_config": ("if getattr(cfg, 'method') == m:\n    pass\n", ["1 branches on the method"]),
    "omegaconf_select": ("if OmegaConf.select(cfg, 'method') == m:\n    pass\n", ["1 branches on the method"]),
}
ALLOWED = [
    "record = {'method': cfg.method, 'seed': cfg.seed}\n",  # recording the method is fine
    "print(f'{cfg.method} on {cfg.env.id}')\n",
    "fmt = get('feedback_format', cfg.feedback.format)\n",  # registry dispatch on a design-choice key
    "if cfg.generate.parent == 'latest':\n    pass\n",
    "rows = runs[runs['method'] == m]\n",  # analysis groups run tables by their method column
    "if request.method == 'POST':\n    pass\n",  # not a config object
    "if runs[0].method == m:\n    pass\n",
    "if getattr(request, 'method') == m:\n    pass\n",
    "if request.get('method') == m:\n    pass\n",
    "if cfg.get('seed') == m:\n    pass\n",
    "if build(cfg, 'method') == m:\n    pass\n",  # a call that is not getattr
    "if getattr(cfg, 'seed') == m:\n    pass\n",
    "if OmegaConf.select(cfg, 'seed') == m:\n    pass\n",
    "if OmegaConf.select(cfg) == m:\n    pass\n",
]


@pytest.mark.parametrize("form", sorted(BAD_FORMS))
def test_branch_detector_catches_each_known_bad_form(form):
    source, expected = BAD_FORMS[form]
    assert method_branches(source, NAMES, "snippet") == [f"snippet:{e}" for e in expected]


@pytest.mark.parametrize("source", ALLOWED)
def test_branch_detector_allows_reading_and_registry_dispatch(source):
    assert method_branches(source, NAMES, "snippet") == []


def test_branch_detector_scans_files_under_each_folder(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "ok.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "bad.py").write_text("x = 1\nif cfg.method == 'eureka':\n    pass\n")
    (tmp_path / "pkg" / "worse.py").write_text("y = 2 if kind == 'card' else 3\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "bad.py").write_text("if cfg.method:\n    pass\n")
    assert method_branches_in(tmp_path, ["pkg"], NAMES) == [
        "pkg/sub/bad.py:2 branches on the method", "pkg/sub/bad.py:2 compares with 'eureka'",
        "pkg/worse.py:1 compares with 'card'"]
    assert method_branches("if cfg.method:\n    pass\n", NAMES) == ["<source>:1 branches on the method"]


def test_method_names_are_the_method_option_files():
    assert method_names(CONF_DIR) == {p.stem for p in (CONF_DIR / "method").glob("*.yaml")}
    assert {"eureka", "grace", "card", "zeroshot"} <= method_names(CONF_DIR)


def test_no_code_branches_on_a_method_name():
    offenders = method_branches_in(ROOT, CODE_DIRS, method_names(CONF_DIR))
    assert not offenders, "\n".join(offenders)


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    mapping = {"bird": "bird", "methods": "bird.methods", "envs": "bird.envs", "analysis": "bird.analysis"}
    found = set()
    for folder, pkg in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "notebooks" in rel.parts or "__pycache__" in rel.parts:
                continue
            found.add(".".join([pkg, *rel.parts]))
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"


@pytest.fixture
def declare(monkeypatch):
    """declare(*names): test-only registry families, removed after the test with everything registered in them (a
    family left behind would fail the every-family test run after it)."""
    def _declare(*names):
        for name in names:
            monkeypatch.setitem(registry._BY_NAME, name, registry.Family(name, "a test family"))
            monkeypatch.setitem(registry._REGISTRY, name, {})
            monkeypatch.setitem(registry._DECLARED, name, {})
    return _declare


def test_register_returns_the_object_and_get_finds_it(declare):
    declare("test_lookup")
    obj = object()
    assert registry.register("test_lookup", "thing")(obj) is obj
    assert registry.get("test_lookup", "thing") is obj
    assert registry.register("test_lookup", "thing")(obj) is obj  # the same object again is not a duplicate
    assert registry.names("test_lookup") == ["thing"] and "test_lookup" in registry.families()
    assert registry.families() == sorted(registry.families())


def test_unknown_names_and_families_are_errors_listing_what_is_registered(declare):
    declare("test_listing")
    first = object()
    registry.register("test_listing", "b")(object())
    registry.register("test_listing", "a")(first)
    with pytest.raises(ValueError, match=r"^unknown test_listing 'c'; registered: \['a', 'b'\]$"):
        registry.get("test_listing", "c")
    with pytest.raises(ValueError, match=r"^unknown no_such_family 'x'; registered: \[\]$"):
        registry.get("no_such_family", "x")
    assert registry.names("no_such_family") == []
    with pytest.raises(ValueError, match=r"^registry: test_listing/a is already registered$"):
        registry.register("test_listing", "a")(object())
    assert registry.get("test_listing", "a") is first  # the first registration stays


def test_builtin_components_are_registered_on_first_use():
    assert {"argmax", "mu_plus_lambda"} <= set(registry.names("select"))
    assert "sb3_ppo" in registry.names("learner") and "offline" in registry.names("llm")


def test_a_registration_keeps_its_declarations_and_a_component_keeps_its_own(declare):
    declare("test_declared")

    def plain(x):
        return x + 1

    own = registry.Component(lambda x: x * 2, needs_judge=True)
    registry.register("test_declared", "plain", substitute="a stand-in", needs={"a.b": ("x",)})(plain)
    registry.register("test_declared", "own", needs_judge=False)(own)
    got = registry.declared("test_declared", "plain")
    assert (got.fn, got.substitute, dict(got.needs), got.needs_judge) == (plain, "a stand-in", {"a.b": ("x",)}, False)
    assert registry.declared("test_declared", "own") is own and own.needs_judge  # its own declarations, not these
    assert own(4) == 8 and got(x=4) == 5  # a component calls its function, with its keyword arguments
    with pytest.raises(ValueError, match=r"^unknown test_declared 'other'; registered: \['own', 'plain'\]$"):
        registry.declared("test_declared", "other")


def test_a_family_is_described_with_its_config_keys_and_each_members_first_doc_line(monkeypatch):
    monkeypatch.setitem(registry._BY_NAME, "test_described",
                        registry.Family("test_described", "what it is for", keys=("a.one",), optional_keys=("a.maybe",),
                                        list_keys=("a.many",)))
    monkeypatch.setitem(registry._BY_NAME, "test_bare", registry.Family("test_bare", "no keys"))
    monkeypatch.setitem(registry._REGISTRY, "test_described", {})
    monkeypatch.setitem(registry._DECLARED, "test_described", {})

    def documented():
        """First line.

        More."""

    registry.register("test_described", "zed")(documented)
    registry.register("test_described", "alpha")(lambda: None)
    assert registry.describe("test_described") == (
        "test_described: what it is for (config: a.one, a.maybe, a.many)\n  alpha\n  zed: First line.")
    assert registry.describe("test_bare") == "test_bare: no keys"
    with pytest.raises(ValueError, match=r"^unknown registry family 'test_nothing'; declared: \[.*'test_bare'"):
        registry.family("test_nothing")
