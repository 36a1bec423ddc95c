"""The disk cache's one thread (``lm.cache.OneThreadDisk``) and ``make_lm(cache_dir=)``: a write is queued, not waited for, yet a later read
sees it, a failed write is logged and never raised, and a new cache over the same folder reads what the old one
queued."""

from __future__ import annotations

import dspy

from bineval_dspy.lm import cache

REQUEST = {"model": "custom/m", "messages": [{"role": "user", "content": "hi"}]}
REPLY = {"outputs": ["a reply"]}


def test_a_queued_write_is_read_back_in_order(tmp_path):
    installed = cache.install(tmp_path / "cache")
    installed.put(REQUEST, REPLY, enable_memory_cache=False)
    assert installed.get(REQUEST) == REPLY  # from disk: the memory tier was skipped


def test_a_new_cache_on_the_folder_reads_what_the_last_one_queued(tmp_path):
    first = cache.install(tmp_path / "cache")
    slow = first.disk_cache._disk.set
    first.disk_cache._disk.set = lambda *args: (__import__("time").sleep(0.3), slow(*args))[1]  # a write still queued
    first.put(REQUEST, REPLY, enable_memory_cache=False)
    second = cache.install(tmp_path / "cache")
    assert second is dspy.cache and second.get(REQUEST) == REPLY


def test_a_failed_write_is_logged_not_raised(tmp_path, monkeypatch):
    logged: list[str] = []  # the module's logger itself, whatever logging set-up the session's libraries left behind
    monkeypatch.setattr(cache.logger, "debug", lambda message, *args: logged.append(message % args))
    installed = cache.install(tmp_path / "cache")

    def broken(*args):
        raise OSError("disk full")

    installed.disk_cache._disk.set = broken
    installed.put(REQUEST, REPLY, enable_memory_cache=False)
    installed.disk_cache.flush()
    assert logged == ["disk cache write failed: disk full"]
    assert installed.get(REQUEST) is None


def test_make_lm_takes_a_cache_folder_and_refuses_what_it_does_not_know(tmp_path):
    """Issue 33, item 5: an unknown keyword was accepted and then failed every call deep inside the LM stack."""
    import pytest

    from bineval_dspy.lm.specs import make_lm

    with pytest.raises(TypeError, match="cache_folder"):
        make_lm("smollm2", cache_folder=tmp_path)  # type: ignore[call-arg]
    lm = make_lm("smollm2", cache_dir=tmp_path / "replies")
    assert lm.model.startswith("local/smollm2") and isinstance(dspy.cache, cache.ReplyCache)
    assert (tmp_path / "replies").is_dir()
    dspy.cache.put(REQUEST, REPLY)
    assert cache.install(tmp_path / "replies").get(REQUEST) == REPLY  # the replies went to that folder
