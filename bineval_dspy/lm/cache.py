"""DSPy's LM cache, made to keep only replies that gave a result.

DSPy stores every reply before any adapter reads it, so a reply that gave no verdict (no choices, null or empty
content, text that does not parse) would be replayed on every rerun: the row could never be retried, whatever
the server does now. ``ReplyCache`` never stores a reply without text; ``ForgetUnparsed``, installed with the cache,
forgets the entries of any LM call whose reply an adapter could not parse, whoever made the call (a question writer,
a holistic scorer, a judge); and a ``reply_journal`` block records the cache entries its LM calls read or wrote, so
a caller can ``forget`` them when a parsed reply still proved unusable (an answer that is neither yes nor no).

A reply that came with logprobs also answers the same request without them: logprobs are a read-out of the reply,
not an input to it. So a hard-answer judge after a P(yes) judge on the same questions costs no LM call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.clients.cache import Cache
from dspy.utils.callback import BaseCallback

from bineval_dspy.core.errors import redacted_value
from bineval_dspy.lm.usage import cached_reply_tokens, report_cache_hit

logger = logging.getLogger(__name__)
_journal: ContextVar[Journal | None] = ContextVar("bineval_reply_journal", default=None)
_last_call: ContextVar[list[tuple[ReplyCache, str]] | None] = ContextVar("bineval_last_call", default=None)
_peek: ContextVar[list[dict[str, Any]] | None] = ContextVar("bineval_cache_peek", default=None)


class Journal:
    """The cache entries one block's LM calls touched (``reply_journal``)."""

    def __init__(self) -> None:
        self.entries: list[tuple[ReplyCache, str]] = []

    def forget(self) -> None:
        """Remove every entry recorded here: a rerun sends these requests again."""
        for cache, key in self.entries:
            cache.forget(key)
        self.entries.clear()


@contextmanager
def reply_journal() -> Iterator[Journal]:
    """Record the cache keys the LM calls of this block (in this thread) read or write."""
    journal = Journal()
    token = _journal.set(journal)
    try:
        yield journal
    finally:
        _journal.reset(token)


def has_text(record: Any) -> bool:
    """Whether a cached call result holds at least one reply with non-blank text (DSPy's record, or a raw
    provider response with ``choices``)."""
    if isinstance(record, dict) and "outputs" in record:
        outputs = record["outputs"] or []
    else:
        outputs = [getattr(c, "message", None) for c in (getattr(record, "choices", None) or [])]
    texts = [_text(output) for output in outputs]
    return bool(texts) and all(text.strip() for text in texts)


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    value = output.get("text", output.get("content")) if isinstance(output, dict) else getattr(output, "content", None)
    return value if isinstance(value, str) else ""


LOGPROB_ARGS = ("logprobs", "top_logprobs")


def without_logprobs(request: dict[str, Any]) -> dict[str, Any]:
    """The same request, not asking for logprobs: the one a reply with logprobs also answers."""
    return {k: v for k, v in request.items() if k not in LOGPROB_ARGS}


@contextmanager
def peeking() -> Iterator[list[dict[str, Any]]]:
    """The requests DSPy's LM calls in this block look up in the cache, each answered as a miss with nothing read:
    how the verdict fast path learns the exact request a call is keyed by (``lm.fastpath``)."""
    seen: list[dict[str, Any]] = []
    token = _peek.set(seen)
    try:
        yield seen
    finally:
        _peek.reset(token)


class ReplyCache(Cache):
    """A ``dspy`` cache that refuses replies without text and can forget an entry (memory and disk). ``read`` and
    ``write`` take a key already made (``cache_key``), for a caller that keys its requests itself."""

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        if (peek := _peek.get()) is not None:
            peek.append(request)
            return None
        value = super().get(request, ignored_args_for_cache_key)
        if value is not None:
            self._record(request, ignored_args_for_cache_key)
            report_cache_hit(cached_reply_tokens(value))
        return value

    def read(self, key: str) -> Any:
        """The entry under ``key`` (memory, then disk, read in this thread: ``OneThreadDisk.read_here``), or None.
        The entry is shared, not copied: the caller only reads it."""
        if self.enable_memory_cache:
            with self._lock:
                value = self.memory_cache.get(key)
            if value is not None:
                return value
        if not self.enable_disk_cache:
            return None
        disk = self.disk_cache
        try:
            value = disk.read_here(key) if isinstance(disk, OneThreadDisk) else disk.get(key)
        except Exception:  # what DSPy does with an entry it cannot read: a miss (the next write replaces it)
            return None
        if value is not None and self.enable_memory_cache:
            with self._lock:
                self.memory_cache[key] = value
        return value

    def write(self, keys: tuple[str, ...], value: Any) -> None:
        """Keep ``value`` under each of ``keys`` (a reply with logprobs also answers the request without them),
        unless it holds no text."""
        if not has_text(value):
            return
        value = redacted_value(value)  # a key the server echoed into its reply is never kept
        for key in keys:
            if self.enable_memory_cache:
                with self._lock:
                    self.memory_cache[key] = value
            if self.enable_disk_cache:
                try:
                    self.disk_cache.set(key, value)
                except Exception as exc:  # as DSPy's ``put``: the reply is kept in memory, not on disk
                    logger.debug("disk cache write failed: %s", exc)

    def put(
        self,
        request: dict[str, Any],
        value: Any,
        ignored_args_for_cache_key: list[str] | None = None,
        enable_memory_cache: bool = True,
    ) -> None:
        if not has_text(value):
            return
        value = redacted_value(value)  # a key the server echoed into its reply is never kept
        for keyed in (request, without_logprobs(request)) if request.get("logprobs") else (request,):
            super().put(keyed, value, ignored_args_for_cache_key, enable_memory_cache)
            self._record(keyed, ignored_args_for_cache_key)

    def forget(self, key: str) -> None:
        """Drop one entry from both tiers."""
        with self._lock:
            self.memory_cache.pop(key, None)
        if self.enable_disk_cache:
            self.disk_cache.delete(key)

    def _record(self, request: dict[str, Any], ignored: list[str] | None) -> None:
        journal, last = _journal.get(), _last_call.get()
        if journal is None and last is None:
            return
        try:
            key = self.cache_key(request, ignored)
        except Exception:  # a request DSPy itself could not key was never cached
            return
        for entries in (journal.entries if journal is not None else None, last):
            if entries is not None:
                entries.append((self, key))


class ForgetUnparsed(BaseCallback):
    """No unusable reply is replayed: when an adapter cannot parse a reply, the cache entries the LM call before it
    read or wrote (in this thread) are forgotten, so a rerun asks again instead of failing the same way forever."""

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        _last_call.set([])

    def on_adapter_parse_end(self, call_id: str, outputs: dict[str, Any] | None, exception: BaseException | None = None) -> None:
        if exception is not None:
            for cache, key in _last_call.get() or []:
                cache.forget(key)


class OneThreadDisk:
    """The disk cache with every operation run on one thread of its own. diskcache opens an SQLite connection per
    thread and shard (16 shards), so a run with hundreds of threads (``judge --concurrency``) would hold thousands
    of connections and hundreds of MB; SQLite serializes the writes anyway.

    A write (or delete) is queued, not waited for: the caller already holds the reply. Queued changes land in order,
    together in one transaction per shard (a commit per reply cost a third of the thread's CPU), before any read
    queued after them, so a later read of the key sees them. The thread is joined at exit, so queued writes land."""

    def __init__(self, disk: Any) -> None:
        self._disk = disk
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bineval-disk-cache")
        self._changes: list[tuple[str, str, Any]] = []  # (operation, key, value), in the order asked
        self._lock = threading.Lock()

    def _run(self, name: str, *args: Any) -> Any:
        return self._thread.submit(getattr(self._disk, name), *args).result()

    def read_here(self, key: str) -> Any:
        """A read in the caller's thread, not queued: for one busy thread (the verdict fast path's I/O loop), where a
        hand-off per read to the disk's thread and back costs more than the read. It opens that thread's own SQLite
        connections once; a write still queued is not seen, but a reply written in this process is in the memory
        tier until ``MEMORY_ENTRIES`` later ones."""
        return self._disk.get(key)

    def get(self, key: str) -> Any:
        return self._run("get", key)

    def set(self, key: str, value: Any) -> None:
        self._change("set", key, value)

    def delete(self, key: str) -> None:
        self._change("delete", key, None)

    def _change(self, operation: str, key: str, value: Any) -> None:
        with self._lock:
            self._changes.append((operation, key, value))
            first = len(self._changes) == 1
        if first:  # one landing queued for all the changes made before it runs
            self._thread.submit(self._land)

    def _land(self) -> None:
        with self._lock:
            changes, self._changes = self._changes, []
        try:
            with self._disk.transact():
                for operation, key, value in changes:
                    if operation == "set":
                        self._disk.set(key, value)
                    else:
                        self._disk.delete(key)
        except Exception as exc:  # what DSPy does with a failed write: the reply is kept in memory, not on disk
            logger.debug("disk cache write failed: %s", exc)

    def flush(self) -> None:
        """Wait for the writes queued so far."""
        self._thread.submit(lambda: None).result()

    def __contains__(self, key: str) -> bool:
        return bool(self._run("__contains__", key))


_install_lock = threading.Lock()


# diskcache's defaults map 64 MB of each shard file and cache 32 MB of its pages per SQLite connection: memory that
# would grow with the cache file. No mapping, and 256 pages (1 MB) cached per connection.
SQLITE_PER_CONNECTION = {"sqlite_mmap_size": 0, "sqlite_cache_size": 256}
MEMORY_ENTRIES = 4096  # replies kept in memory as well: the disk keeps every one, so a long run's memory stays flat


_installed: list[Path | None] = [None]  # the disk folder of the cache ``install`` last made


def installed_dir() -> Path | None:
    """The folder the process's LM replies are kept in (None: memory only): where other per-call results that are
    as costly as a reply (hidden-state readings) are kept beside them."""
    return _installed[0]


def install(cache_dir: Path | None) -> ReplyCache:
    """Make a ``ReplyCache`` DSPy's cache: memory (the latest ``MEMORY_ENTRIES`` replies), plus disk at
    ``cache_dir`` when given."""
    cache = ReplyCache(
        enable_disk_cache=cache_dir is not None,
        enable_memory_cache=True,
        memory_max_entries=MEMORY_ENTRIES,
        disk_cache_dir=str(cache_dir) if cache_dir is not None else None,
        disk_size_limit_bytes=DISK_CACHE_LIMIT,
    )
    if cache.enable_disk_cache:
        for setting, value in SQLITE_PER_CONNECTION.items():
            cache.disk_cache.reset(setting, value)
        cache.disk_cache = OneThreadDisk(cache.disk_cache)
    with getattr(dspy, "_cache_lock", _install_lock):  # the lock DSPy's lazy build of its cache holds
        previous = vars(dspy).get("cache")  # not getattr: DSPy would build its default cache under this lock
        if isinstance(getattr(previous, "disk_cache", None), OneThreadDisk):
            previous.disk_cache.flush()  # its queued writes land before this cache reads the same folder
        dspy.cache = cache
        _installed[0] = cache_dir
    callbacks = list(dspy.settings.get("callbacks") or [])
    if not any(isinstance(callback, ForgetUnparsed) for callback in callbacks):
        dspy.settings.configure(callbacks=[*callbacks, ForgetUnparsed()])
    return cache
