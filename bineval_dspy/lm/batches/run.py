"""A batched run's rounds: judge to record requests, submit them, wait, read the replies, until every request the
judge needs is answered or failed."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel

from bineval_dspy.core.fingerprint import Fingerprint, combined
from bineval_dspy.core.jsonio import dumps_line, write_text_atomic
from bineval_dspy.core.settings import fingerprint_of
from bineval_dspy.lm.batches.api import BatchAPI, BatchInfo, Gone, RequestCounts
from bineval_dspy.lm.batches.engine import BatchEngine, Reply, batch_lm
from bineval_dspy.lm.batches.state import BatchState, SubmittedBatch, input_file, load_state, save_state, state_path
from bineval_dspy.lm.batches.target import ENDPOINT, MAX_BYTES, MAX_REQUESTS, BatchTarget

logger = logging.getLogger(__name__)

MAX_ROUNDS = 4  # rounds of batches one run submits at most: a request that depends on a reply needs one more
POLL_FIRST, POLL_GROWTH, POLL_CAP = 1.0, 1.5, 60.0  # seconds between status checks: 1, 1.5, 2.25 ... up to a minute
DONE = ("completed", "failed", "expired", "cancelled")  # a batch in one of these will not change again



class BatchSettings(BaseModel):
    """What the batch API adds to the run's fingerprint: where the batches went (another provider's answers differ)."""

    batch_api: str

def collect_replies(
    lm: dspy.LM,
    target: BatchTarget,
    judge_all: Callable[[], object],
    out: Path,
    fingerprint: Fingerprint,
    overwrite: bool = False,
    follow_ups: bool = True,
) -> dspy.LM:
    """Get every reply the judge needs through batches; configure DSPy with the LM that answers from them, and
    return it.

    ``judge_all`` judges the rows still to do with DSPy's configured LM (its results are thrown away): it runs
    once per round, recording the requests without a reply, until a pass records none or ``MAX_ROUNDS``
    rounds of batches were sent. ``fingerprint`` (the run's, plus the batch API's address) ties ``OUT.batch.json`` to these
    settings. ``follow_ups``: whether the judge may ask again after reading a reply (``--explanations failures``);
    without, a round it submitted answers every request it recorded and no pass checks again (each pass formats
    every prompt: on a large run it costs as much as the run's own formatting). The returned LM answers what the
    batches answered; any other call fails (an unanswered verdict).
    """
    batched, engine = batch_lm(lm, target)
    api = BatchAPI(target)
    path = state_path(out)
    fingerprint = combined(fingerprint, fingerprint_of(BatchSettings(batch_api=target.base_url)))
    state = load_state(path, fingerprint, overwrite)
    save_state(path, state)
    earlier = {b.id for b in state.batches if b.collected}  # their failures are asked again
    fetched: set[str] = set()
    rounds = 0
    try:
        while True:
            engine.recorded.clear()
            with dspy.context(lm=batched):
                judge_all()
            if not engine.recorded:
                break
            unread = [b for b in state.batches if b.id not in fetched]  # of an earlier or interrupted run: first
            fresh = not unread
            if fresh:
                if rounds == MAX_ROUNDS:
                    logger.warning(f"`batch`: {len(engine.recorded)} request(s) still unasked after {rounds} rounds of batches: unanswered")
                    break
                for chunk in _chunks(engine.recorded):
                    unread.append(_submit(api, chunk, out, path, state))
                rounds += 1
            for batch in unread:
                _collect(api, engine, batch, keep_failures=batch.id not in earlier, path=path, state=state)
                fetched.add(batch.id)
            if fresh and not follow_ups:  # every request recorded is answered or failed now
                break
    finally:
        api.close()
    engine.recording = False
    answered = sum(r.body is not None for r in engine.replies.values())
    failed = len(engine.replies) - answered
    if engine.replies:
        logger.info(f"`batch`: {answered:,} request(s) answered by {len(fetched)} batch(es)" + (f", {failed:,} failed there" if failed else ""))
    for batch in state.batches:
        batch.collected = True
        input_file(out, batch.number).unlink(missing_ok=True)
    save_state(path, state)
    dspy.configure(lm=batched)
    return batched


def _chunks(recorded: dict[str, dict[str, Any]]) -> Iterator[dict[str, str]]:
    """The recorded requests as batch input lines by key, in batches within the API's request and size limits."""
    lines: dict[str, str] = {}
    size = 0
    for key, body in recorded.items():
        line = dumps_line({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body})
        length = len(line.encode("utf-8"))
        if lines and (len(lines) == MAX_REQUESTS or size + length > MAX_BYTES):
            yield lines
            lines, size = {}, 0
        lines[key] = line
        size += length
    if lines:
        yield lines


def _submit(api: BatchAPI, lines: dict[str, str], out: Path, path: Path, state: BatchState) -> SubmittedBatch:
    """Write one batch input file beside the output, upload it, create the batch and record it in the state; Ctrl-C
    waits while the batch is created and recorded, so a batch the provider bills is never one the state lacks."""
    number = len(state.batches)
    text = "".join(lines.values())
    requests = input_file(out, number)
    write_text_atomic(requests, text)
    data = text.encode("utf-8")
    file_id = api.upload(requests.name, data)
    try:
        with _sigint_deferred():
            info = api.create(file_id)
            batch = SubmittedBatch(id=info.id, number=number, input_file_id=file_id, keys=list(lines), status=info.status)
            state.batches.append(batch)
            save_state(path, state)
    except KeyboardInterrupt:
        if len(state.batches) > number:
            _left_running(state.batches[number], path)
        raise
    logger.info(
        f"`batch`: submitted batch {info.id}: {len(lines):,} request(s) ({len(data):,} bytes, {requests.name}); "
        "waiting for it (Ctrl-C leaves it running: rerun to collect it)"
    )
    return batch


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Ctrl-C during the block is held back and raised when it ends (Python takes signals in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)  # the handler the Ctrl-C was kept from (it raises KeyboardInterrupt)
            raise KeyboardInterrupt


def _collect(api: BatchAPI, engine: BatchEngine, batch: SubmittedBatch, keep_failures: bool, path: Path, state: BatchState) -> None:
    """Wait for one batch to end, then read its replies into the engine (its failures only when ``keep_failures``:
    a batch of an earlier run lends only its answers)."""
    info = _wait(api, batch, path, state)
    if info.status == "failed":
        reasons = "; ".join(str(e.get("message", e)) for e in ((info.errors or {}).get("data") or [])[:3] if isinstance(e, dict))
        logger.warning(f"`batch`: batch {batch.id} failed{': ' + reasons if reasons else ''}; its requests are unanswered")
    elif info.status != "completed":
        logger.warning(f"`batch`: batch {batch.id} {info.status}: the requests it did not answer are unanswered")
    replies: dict[str, Reply] = {}
    for file_id in (info.output_file_id, info.error_file_id):
        if not file_id:
            continue
        try:
            text = api.content(file_id)
        except Gone as gone:  # its requests stay unanswered, and a rerun submits them again rather than jamming here
            logger.warning(f"`batch`: batch {batch.id}'s result file {file_id} is gone ({gone}): its requests are unanswered")
            continue
        replies.update(_read_results(text, f"{batch.id} file {file_id}"))
    for key, reply in replies.items():
        if reply.body is not None or keep_failures:
            engine.replies[key] = reply
    if keep_failures:  # requests of this batch with no line in its results: failed too
        for key in batch.keys:
            engine.replies.setdefault(key, Reply(error=f"batch {batch.id} ({info.status}) gave no result for it"))


def _wait(api: BatchAPI, batch: SubmittedBatch, path: Path, state: BatchState) -> BatchInfo:
    """Poll a batch until it ends, saying on stderr when its status or counts change; Ctrl-C leaves it running."""
    wait, shown = POLL_FIRST, ""
    try:
        while True:
            info = api.status(batch.id)
            if info.status != batch.status:
                batch.status = info.status
                save_state(path, state)
            counts = info.request_counts or RequestCounts()
            line = f"`batch`: batch {batch.id} {info.status}: {counts.completed:,} of {counts.total or len(batch.keys):,} done, {counts.failed:,} failed"
            if line != shown:
                logger.info(line)
                shown = line
            if info.status in DONE:
                return info
            time.sleep(wait)
            wait = min(POLL_CAP, wait * POLL_GROWTH)
    except KeyboardInterrupt:
        _left_running(batch, path)
        raise


def _left_running(batch: SubmittedBatch, path: Path) -> None:
    logger.warning(f"`batch`: batch {batch.id} is still running at the provider; {path.name} keeps it: rerun the same command to collect it")


def _read_results(text: str, where: str) -> dict[str, Reply]:
    """A batch result file (output or errors) as replies by ``custom_id``; a line we cannot read answers nothing."""
    replies: dict[str, Reply] = {}
    unreadable = 0
    for line in text.split("\n"):  # JSON Lines: only "\n" ends a line (splitlines would cut at a raw U+2028 in a string)
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key = item["custom_id"]
        except (ValueError, KeyError, TypeError):
            unreadable += 1
            continue
        replies[key] = _reply(item)
    if unreadable:
        logger.warning(f"`batch`: {unreadable} line(s) of batch {where} could not be read: their requests are unanswered")
    return replies


def _reply(item: dict[str, Any]) -> Reply:
    """One result line: a chat completion (HTTP 200 with choices), else the failure it reports."""
    raw = item.get("response")
    response: dict[str, Any] = raw if isinstance(raw, dict) else {}
    error = item.get("error")
    status = response.get("status_code")
    body = response.get("body")
    if not error and status == 200 and isinstance(body, dict) and body.get("choices"):
        return Reply(body=body)
    if isinstance(error, dict):
        return Reply(error=str(error.get("message") or error.get("code") or error))
    message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    return Reply(error=f"HTTP {status}: {message or 'no completion'}")
