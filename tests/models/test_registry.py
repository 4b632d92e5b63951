"""Model names: built-in prefixes, register_model / register_provider, choose_model."""

from __future__ import annotations

import pytest
from helpers import text_response

import nb_agents as nba
from nb_agents.errors import NotFoundError
from nb_agents.models import base
from nb_agents.models.anthropic import AnthropicModel
from nb_agents.models.defaults import choose_model
from nb_agents.models.gemini import GeminiModel
from nb_agents.models.openai_compat import OpenAICompatModel
from nb_agents.testing import FunctionModel, ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _restore_registry() -> object:
    models, providers = dict(base._MODELS), dict(base._PROVIDERS)
    yield None
    base._MODELS.clear(), base._MODELS.update(models)
    base._PROVIDERS.clear(), base._PROVIDERS.update(providers)


def test_builtin_prefixes_resolve_without_keys() -> None:
    openai = base.resolve_model("openai/gpt-4o-mini")
    assert isinstance(openai, OpenAICompatModel) and openai.name == "openai/gpt-4o-mini"
    assert (
        openai.base_url == "https://api.openai.com/v1" and openai.max_tokens_field == "max_completion_tokens"
    )
    ollama = base.resolve_model("ollama/llama3.2")
    assert isinstance(ollama, OpenAICompatModel) and ollama.base_url == "http://127.0.0.1:11434/v1"
    assert ollama.api_key() is None  # a local server needs no key
    gemini = base.resolve_model("googleai/gemini-flash-latest")
    assert isinstance(gemini, GeminiModel) and gemini.model == "gemini-flash-latest"
    claude = base.resolve_model("anthropic/claude-haiku-4-5")
    assert isinstance(claude, AnthropicModel) and claude.name == "anthropic/claude-haiku-4-5"
    # model ids may contain slashes (OpenRouter-style ids behind a compatible server)
    assert base.resolve_model("openai/meta-llama/llama-3-70b").model == "meta-llama/llama-3-70b"  # type: ignore[attr-defined]


def test_ollama_host_and_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9999")
    assert base.resolve_model("ollama/qwen3").base_url == "http://127.0.0.1:9999/v1"  # type: ignore[attr-defined]
    with pytest.raises(
        NotFoundError, match=r"Unknown model 'mistral/large'.*anthropic, googleai, ollama, openai"
    ):
        base.resolve_model("mistral/large")
    with pytest.raises(NotFoundError, match="register_model"):
        base.resolve_model("gpt-4o")
    with pytest.raises(ValueError, match="needs base_url"):
        OpenAICompatModel("qwen", provider="vllm")


async def test_register_model_object_and_factory() -> None:
    shared = ScriptedModel([text_response("from the registry")], name="house")
    base.register_model("house", shared)
    agent = nba.define_agent("r", model="house", store=nba.InMemorySessionStore())
    out = await agent.run_text("hi")
    assert out.message is not None and out.message.text == "from the registry"
    built: list[FunctionModel] = []

    def factory() -> FunctionModel:
        built.append(FunctionModel(lambda r: "fresh", name="acme/big"))
        return built[-1]

    base.register_model("acme/big", factory)  # an exact name wins over a prefix
    first, second = base.resolve_model("acme/big"), base.resolve_model("acme/big")
    assert first is built[0] and second is built[1]
    base.register_model("house", ScriptedModel([], name="replaced"))  # re-running a cell replaces it
    assert base.resolve_model("house").name == "replaced"
    with pytest.raises(TypeError, match="needs a model object"):
        base.register_model("bad", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty name"):
        base.register_model("", shared)


def test_register_provider_overrides_a_builtin_prefix() -> None:
    base.register_provider("openai", lambda name: FunctionModel(lambda r: "local", name=f"mine/{name}"))
    assert base.resolve_model("openai/gpt-4o-mini").name == "mine/gpt-4o-mini"


def offline() -> FunctionModel:
    return FunctionModel(lambda r: "scripted", name="offline-demo")


def test_choose_model_offline_without_keys() -> None:
    fallback = offline()
    choice = choose_model(fallback)  # the conftest cleared every key from the environment
    assert choice.model is fallback and choice.real is False
    assert choice.description == "model: offline scripted demo model (no API key set)"


@pytest.mark.parametrize(
    ("env", "name", "why"),
    [
        ({"OPENAI_API_KEY": "sk", "ANTHROPIC_API_KEY": "a"}, "openai/gpt-4o-mini", "OPENAI_API_KEY is set"),
        (
            {"ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g"},
            "anthropic/claude-haiku-4-5",
            "ANTHROPIC_API_KEY is set",
        ),
        ({"GOOGLE_API_KEY": "g"}, "googleai/gemini-flash-latest", "GOOGLE_API_KEY is set"),
        ({"OPENAI_API_KEY": "  "}, None, None),  # blank counts as unset
    ],
)
def test_choose_model_by_key(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], name: str | None, why: str | None
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    choice = choose_model(offline())
    if name is None:
        assert choice.real is False
        return
    assert choice.real is True and choice.model.name == name
    assert choice.description == f"model: {name} ({why})"


def test_nb_agents_model_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    monkeypatch.setenv("NB_AGENTS_MODEL", "anthropic/claude-sonnet-4-5")
    choice = choose_model(offline())
    assert choice.model.name == "anthropic/claude-sonnet-4-5"
    assert choice.description == (
        "model: anthropic/claude-sonnet-4-5 (set by NB_AGENTS_MODEL; ANTHROPIC_API_KEY is not set, "
        "so calls will fail until it is)"
    )
    monkeypatch.setenv("NB_AGENTS_MODEL", "ollama/llama3.2")
    assert choose_model(offline()).description == "model: ollama/llama3.2 (set by NB_AGENTS_MODEL)"


def test_choose_model_from_an_explicit_mapping_passes_the_key() -> None:
    choice = choose_model(offline(), env={"GEMINI_API_KEY": "g-from-mapping"})
    assert isinstance(choice.model, GeminiModel)
    assert choice.model.api_key() == "g-from-mapping"  # not in os.environ, yet the model has it
