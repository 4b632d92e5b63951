"""How the interop set-up reacts to a machine without Node.js or without a route to the
registries: a skip with the reason, a failure under ``CI=true``, and a real error for
anything else. The registry here is a closed port on 127.0.0.1, so nothing leaves the
machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import toolchain
from .conftest import _need

CLOSED = "http://127.0.0.1:9/"  # the discard port: nothing listens there


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(toolchain, "CACHE", tmp_path / "cache")
    return tmp_path / "cache"


def test_no_node_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no node, no npm
    with pytest.raises(toolchain.Unavailable, match="node and npm not found on PATH"):
        toolchain.node_version()


def test_an_unreachable_registry_is_unavailable_and_a_broken_install_is_an_error(cache: Path) -> None:
    cache.mkdir()
    offline = "echo 'npm error code ECONNREFUSED' >&2; exit 1"
    with pytest.raises(toolchain.Unavailable, match="could not reach the package registry"):
        toolchain._run(["sh", "-c", offline], cache, "npm ci")
    with pytest.raises(RuntimeError, match="npm ci failed with exit status 1:\nno such version"):
        toolchain._run(["sh", "-c", "echo 'no such version' >&2; exit 1"], cache, "npm ci")


@pytest.mark.parametrize("install", ["ensure_js_client", "ensure_browser_client"])
def test_npm_ci_against_a_closed_registry_is_unavailable(
    cache: Path, monkeypatch: pytest.MonkeyPatch, install: str
) -> None:
    try:
        toolchain.node_version()
    except toolchain.Unavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("npm_config_registry", CLOSED)
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(cache.parent / "npm-cache"))  # nothing cached to fall back on
    with pytest.raises(toolchain.Unavailable, match="npm ci .* could not reach the package registry"):
        getattr(toolchain, install)()
    folder = "js" if install == "ensure_js_client" else "browser-client"
    assert not (cache / folder / ".installed").exists()  # the next run tries again


def test_pip_against_a_closed_index_is_unavailable(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", CLOSED)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(toolchain.Unavailable, match="could not reach the package registry"):
        toolchain.ensure_genkit_python()
    assert not (cache / "genkit-py" / ".installed").exists()


@pytest.mark.parametrize("ci", ["", "true"])
def test_unavailable_skips_except_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)

    def missing() -> Path:
        raise toolchain.Unavailable("node and npm not found on PATH")

    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="node and npm not found on PATH") as info:
        _need(missing)
    assert str(info.value).startswith("CI=true and ") == bool(ci)


def test_the_cache_ignores_itself(cache: Path) -> None:
    with toolchain._locked("probe"):
        pass
    assert (cache / ".gitignore").read_text() == "*\n"  # whatever the repository's .gitignore says
