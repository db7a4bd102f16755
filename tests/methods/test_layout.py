"""methods/<name>/ is each method's home: a README for every method config, template sets that resolve, variants
that override their method's files, and package data that installs every file of the tree."""

import fnmatch
import tomllib
from pathlib import Path

import pytest

from bird.config.load import CONF_DIR, ConfigError
from bird.config.validate import METHODS_DIR, template_sets

ROOT = Path(__file__).resolve().parents[2]
METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))


@pytest.mark.parametrize("method", METHODS)
def test_every_method_config_has_a_home_with_a_readme(method):
    readme = METHODS_DIR / method / "README.md"
    assert readme.is_file(), f"methods/{method}/README.md is missing"
    assert f"conf/method/{method}.yaml" in readme.read_text()


@pytest.mark.parametrize("method", METHODS)
def test_every_method_renders_a_template_set_that_exists(compose_cfg, method):
    cfg = compose_cfg(f"method={method}", *(["env=metaworld/reach"] if method != "eureka" else []))
    assert cfg.generate.prompt in template_sets()


def test_unknown_template_set_is_rejected_listing_the_sets(compose_cfg):
    with pytest.raises(ConfigError, match=r"generate.prompt='nosuch'.*allowed: \['card'"):
        compose_cfg("generate.prompt=nosuch")


def test_a_variant_replaces_its_methods_files_and_inherits_the_rest(tmp_path, monkeypatch):
    import bird.prompts as prompts

    (tmp_path / "m" / "v").mkdir(parents=True)
    (tmp_path / "m" / "system.txt").write_text("method system")
    (tmp_path / "m" / "initial_user.txt").write_text("method user")
    (tmp_path / "m" / "v" / "initial_user.txt").write_text("variant user")
    monkeypatch.setattr(prompts, "METHODS_DIR", tmp_path)
    prompts.templates.cache_clear()
    try:
        assert prompts.templates("m") == {"initial_user": "method user", "system": "method system"}
        assert prompts.templates("m/v") == {"initial_user": "variant user", "system": "method system"}
        with pytest.raises(ValueError, match="no template folder"):
            prompts.templates("m/nosuch")
    finally:
        prompts.templates.cache_clear()


def test_package_data_installs_every_file_under_methods():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["*"] + data["bird.methods"]
    files = [p.relative_to(METHODS_DIR).as_posix() for p in METHODS_DIR.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"]
    assert files and "eureka/system.txt" in files
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pat) and f.count("/") == pat.count("/") for pat in patterns)]
    assert not missing, f"not installed by [tool.setuptools.package-data]: {missing}"
