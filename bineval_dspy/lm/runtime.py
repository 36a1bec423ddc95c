"""Process-wide setup shared by the CLI and scripts: LM, disk cache, thread policy."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import dspy
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.cache_dir import CACHE_ENV, default_cache_dir
from bineval_dspy.core.console import quiet_dspy_logs
from bineval_dspy.core.errors import InputError, keep_secret, one_line
from bineval_dspy.lm import cache
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.lm.specs import DEFAULT_LM, check_provider_key, is_embedded, is_local, make_lm

logger = logging.getLogger(__name__)

DEFAULT_THREADS = 4  # parallel calls for remote LMs when --threads is not given


def run_cache_dir(given: Path | None, own: Path | None) -> Path | None:
    """The cache of a command that has a run folder: ``--cache-dir``, else ``$BINEVAL_CACHE_DIR``, else the run's
    ``own`` folder (None: the default cache)."""
    env = os.environ.get(CACHE_ENV)
    return given or (Path(env) if env else own)


class LMOptions(BaseModel):
    """The LM options the commands share, from the command line (``cli.options.lm_options``) to ``make_lm``; None: its default."""

    model_config = ConfigDict(frozen=True)

    spec: str = DEFAULT_LM
    api_base: str | None = None
    replicas: tuple[str, ...] = ()  # more servers for the same model beside api_base (a pool: lm.pool)
    api_key: str | None = Field(default=None, repr=False)  # the key itself, read from the --api-key-env variable
    temperature: float | None = None
    timeout: float | None = None
    max_tokens: int | None = None
    rpm: float | None = None  # client-side limits for a server at api_base (lm.retry.RateLimiter)
    tpm: float | None = None
    source: str = "`lm`"  # where the spec came from, for error messages

    @property
    def destination(self) -> tuple[str, ...]:
        """Where the LM's calls (and its key) go: its servers, else its provider (``openai`` of ``openai/gpt-4o``)."""
        return (self.api_base, *self.replicas) if self.api_base else (self.spec.split("/", 1)[0],)


def env_key(variable: str, where: str) -> str:
    """The API key in the environment variable ``variable`` (``where`` names who asked for it), one line when it
    is not set; kept secret from then on (``core.errors.redacted``)."""
    key = os.environ.get(variable)
    if key is None:
        raise InputError(f"{where} {variable}: environment variable {variable} is not set")
    keep_secret(key)
    return key


def configure(options: LMOptions | str | None = None, cache_dir: Path | None = None) -> dspy.LM:
    """Configure DSPy with one LM (a spec, or ``None``: the embedded default) and an on-disk LM cache at
    ``cache_dir`` (None: ``default_cache_dir()``), so reruns are free; replies that gave no result are not kept."""
    quiet_dspy_logs()
    if not isinstance(options, LMOptions):
        options = LMOptions(spec=options or DEFAULT_LM)
    lm = checked_lm(options)  # first: an LM that cannot work is refused before the cache folder is made or opened
    folder = cache_dir or default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"`cache_dir` {folder}: cannot create ({exc.strerror})") from None
    try:
        cache.install(folder)
    except Exception as exc:  # diskcache's sqlite refuses a damaged or foreign folder, or a full disk
        if _disk_full(exc):  # the cache is fine: deleting it would throw away every paid reply
            raise InputError(f"`cache_dir` {folder}: the disk is full ({one_line(exc)}); free some space, the cache is kept") from None
        raise InputError(f"`cache_dir` {folder}: not a usable LM cache ({one_line(exc)}); delete it or give another folder") from None
    dspy.configure(lm=lm)
    return lm


def _disk_full(exc: BaseException) -> bool:
    """Whether opening the cache failed for want of space (an OS error, or SQLite's own words for it)."""
    return (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "disk is full" in str(exc).lower()


def checked_lm(options: LMOptions) -> dspy.LM:
    """The LM the options describe, refused in one line before any row when it cannot work: a provider without its
    key, an embedded model llama.cpp cannot load."""
    if "/" in options.spec and not is_embedded(options.spec) and not options.api_base and not options.api_key:
        check_provider_key(options.spec, options.source)  # before any row: every call would be refused
    lm = make_lm(**options.model_dump(exclude_none=True))
    _check_loads(lm, options)
    return lm


def _check_loads(lm: dspy.LM, options: LMOptions) -> None:
    """Load an embedded model now, not at its first call: a file llama.cpp cannot read is one line, before any row."""
    if is_local(lm):
        try:
            engine_of(lm).load()
        except Exception as exc:
            raise InputError(f"{options.source} {options.spec}: llama.cpp cannot load it ({one_line(exc)})") from None


def effective_threads(lm: dspy.LM, threads: int, asked: bool = True) -> int:
    """An in-process model serializes calls; threads would only interleave prompts and defeat prefix reuse."""
    if is_local(lm) and threads > 1:
        if asked:
            logger.warning("note: the embedded model runs one call at a time; `threads` ignored")
        return 1
    return threads


SAMPLING_KEYS = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "seed")  # settings that change answers


def lm_identity(lm: dspy.LM) -> str:
    """Model string, API base and the sampling settings: what tells two LMs' answers apart in a fingerprint (a
    run resumed at another temperature or token limit would mix two kinds of answers in one file)."""
    kwargs = lm.kwargs or {}
    api_base = kwargs.get("api_base")
    name = f"{lm.model} @ {api_base}" if api_base else lm.model
    settings = {key: kwargs[key] for key in SAMPLING_KEYS if kwargs.get(key) is not None}
    return f"{name} {json.dumps(settings, sort_keys=True)}" if settings else name
