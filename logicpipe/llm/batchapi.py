"""--batch: a round's model requests through a provider's batch API (/v1/files with purpose batch,
/v1/batches, the output and error files), at about half the price of sending them one by one.

It is the run's gate, as --batch-export's file is (batchfile.py): before a round's requests are sent,
those the cache cannot answer are written to a file in the run folder (OUT/<dataset>/batches/), uploaded
and submitted in batches of at most --batch-size lines; the batches are polled, at most --batch-poll
seconds apart, until each has ended; their output and error files are read into the reply cache exactly
as `--batch-import` reads a file (batchfile.read_replies); and the round then goes on, answered from the
cache, in the same process.

No request is paid for twice: each batch is written to OUT/<dataset>/batches.json before it is created
(with its uploaded input file) and again with its id once it is, and any run into the folder (the same
one, or one after a kill) first polls and reads the batches recorded there that it has not read yet, and
submits only what the cache still cannot answer. One recorded without an id (a kill while it was being
created) is looked up among the provider's batches by its input file, and created only if it is not
there. --overwrite keeps the record (it is what was paid for; the run folder's OUTLIVES_OVERWRITE).
An expired, cancelled or failed batch so has only its unfinished lines submitted again; a line that
failed (an error in the error file) is not cached, so it goes in the next batch, up to --max-retries
times, after which its request gets a typed error record (transient: a re-run asks it again). Batches
still running at --batch-timeout stop the run between rounds, with what arrived written; a re-run
resumes polling them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import LLMError, RunStopped, UsageError
from ..core.words import counted
from .batchfile import URL, batch_line, checked_lines, exported_ids, key_of, read_replies, store_replies
from .cache import Cache
from .client import cache_key, default_cache_path
from .ledger import LEDGER, add_batch_to_ledger
from .request import Completion, Request, api_key, endpoint

RECORD = "batches.json"
FOLDER = "batches"
# What a folder records of money spent, which --overwrite keeps: a fresh start of the records is no
# refund, so a cap still counts what was spent and a batch still running is polled, not paid twice.
OUTLIVES_OVERWRITE = (RECORD, FOLDER, LEDGER)
LOOKBACK = 86400.0  # seconds before a batch's upload that a look-up for it goes back in the provider's list
MAX_REQUESTS = 50_000  # the OpenAI API's limits on one batch's input file
MAX_BYTES = 200 * 1000 * 1000
ENDED = ("completed", "expired", "cancelled", "failed")
FIRST_POLL = 0.2  # seconds before the first look at a new batch; each next waits 1.5 times longer


def _refused(error: LLMError) -> bool:
    """A create the provider refused outright (a 4xx other than a timeout, conflict or rate limit)."""
    status = getattr(error.__cause__, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429)


def pending(folder: Path) -> list[dict]:
    """The batches recorded in a run's folder that were not read yet (paid for, perhaps still running)."""
    return [b for b in read_record(folder) if not b["read"]]


def refuse_unread(folder: Path) -> None:
    """A model run into a folder with batches not read yet, without --batch, would pay for their
    requests a second time, one by one: refused in one line, before anything is written."""
    out = pending(folder)
    if out:
        raise UsageError(f"{folder / RECORD} names {counted(len(out), 'batch')} not read yet (paid for, perhaps still running): "
                         "re-run with --batch to collect them, nothing is submitted twice (to pay for their "
                         f"requests again one by one, remove {folder / RECORD})")


def read_record(folder: Path) -> list[dict]:
    """The batches recorded in a run's dataset folder (batches.json), oldest first; [] for none."""
    path = folder / RECORD
    if not path.exists():
        return []
    try:
        batches = json.loads(path.read_text(encoding="utf-8"))["batches"]
        if not all(isinstance(b, dict) and "id" in b and "read" in b for b in batches):
            raise TypeError("not a list of batches")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: cannot read it ({type(exc).__name__}); it names the batches submitted "
                         "(restore it, or remove it to submit what the cache lacks again)") from None
    return list(batches)


class BatchAPI:
    """The run's gate under --batch. `folder` is the run's dataset folder (batches.json, batches/)."""

    held_as = "not answered yet (submitted in batches)"

    def __init__(self, folder: Path, base_url: str | None, cache_path: Path | None, samples: int,
                 batch_requests: int = MAX_REQUESTS, timeout: float = 86400.0, poll: float = 30.0,
                 request_timeout: float = 120.0, retries: int = 5, max_bytes: int = MAX_BYTES,
                 progress: Callable[[int, int], None] | None = None):
        """`progress(ended, created)`: the run's batches that ended and were read, of all it created."""
        self.folder = folder
        self.progress = progress
        self.base_url = endpoint(base_url)
        self._api_key = api_key(base_url)
        self._cache_path = cache_path or default_cache_path()
        self.samples = samples
        self.batch_requests = min(batch_requests, MAX_REQUESTS)
        self.max_bytes = max_bytes
        self.poll = poll
        self.request_timeout = request_timeout
        self.retries = retries
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self._failed: dict[str, str] = {}  # cache key -> why its line failed in every batch it went in
        self._why: dict[str, str] = {}  # cache key -> why its line failed last
        self._held = 0
        self._lock = threading.Lock()  # stages may ask from threads of their own
        self._client: Any = None
        self._ids: set[str] | None = None  # the ids in batches.json, once read
        self._stopping = threading.Event()  # set by stop(): the polling gives up
        self.created = 0  # batches this command created
        self.resumed = 0  # batches an earlier command created that this one read
        self._started = time.time()

    # The gate (stages/context.py Gate)

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        with self._lock:
            for request in requests:
                if request.then is not None:
                    raise UsageError("--batch: constrained decoding in phases (--constrain on CSP or SMT) needs each "
                                     "phase's reply before the next request; run it without --batch")
            keys = [cache_key(model, self.base_url, request) for request in requests]
            self._finish(self._record())  # an earlier command's batches first: never submitted again
            tries = 0
            while True:
                wanted = self._uncached(requests, keys)
                if not wanted or tries > self.retries or self._late():
                    break
                self._submit(model, wanted)
                self._finish(self._record())
                tries += 1
            wanted = self._uncached(requests, keys)
            for key in wanted:
                if key in self._why:  # failed in its last batch, as often as it may be retried
                    self._failed[key] = self._why[key]
            self._held = sum(key in wanted and key not in self._failed for key in keys)
            return [request for request, key in zip(requests, keys, strict=True)
                    if key not in wanted or key in self._failed]

    def failure(self, key: str) -> LLMError | None:
        why = self._failed.get(key)
        if why is None:
            return None
        return LLMError(f"--batch: the request failed in each batch it went in (last: {why}); a re-run asks it "
                        "again", transient=True)

    def batched(self, source: str) -> bool:
        if self._ids is None:
            self._ids = {b["id"] for b in self._record()}
        return source in self._ids  # a batch recorded in this run's folder

    def charge(self, result: Completion | LLMError) -> None:
        pass

    def cancelled(self) -> None:
        pass

    def stop(self) -> None:
        self._stopping.set()

    def open(self) -> bool:
        return False  # every request admitted is answered by the cache or by its failure

    def spent(self) -> str | None:
        running = pending(self.folder)
        if not running:
            return f"--batch: requests left unanswered by {self.retries + 1} batches in turn (expired or cancelled)"
        return (f"--batch: {counted(len(running), 'batch')} still running after --batch-timeout {self.timeout:g} s "
                f"(ids in {self.folder / RECORD})")

    def resume(self) -> str:
        if pending(self.folder):
            return "finished records are kept; re-run the command to go on polling them (nothing is submitted twice)"
        return "finished records are kept; re-run the command to submit them again"

    # The batches

    def _uncached(self, requests: list[Request], keys: list[str]) -> dict[str, Request]:
        cache = Cache(self._cache_path)  # opened where it is used: each stage sends from a thread of its own
        try:
            wanted: dict[str, Request] = {}
            for request, key in zip(requests, keys, strict=True):
                if key not in wanted and cache.get(key) is None:
                    wanted[key] = request
            return wanted
        finally:
            cache.close()

    def _late(self) -> bool:
        return time.monotonic() >= self.deadline

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            # No retry of a create by the client: a create retried after its reply was lost would be a
            # second batch paid for. Polls and downloads are retried (they cost nothing).
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0,
                                         timeout=self.request_timeout)
        return self._client

    def _call(self, what: str, call: Any, retried: bool = True) -> Any:
        import openai

        attempts = self.retries + 1 if retried else 1
        for attempt in range(attempts):
            try:
                return call()
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code != 429 or attempt + 1 == attempts:
                    raise LLMError(f"--batch: {what}: HTTP {exc.status_code}: {str(exc)[:300]}", fatal=True) from exc
            except openai.APIError as exc:
                if attempt + 1 == attempts:
                    raise LLMError(f"--batch: {what}: {type(exc).__name__}: {str(exc)[:300]}", fatal=True) from exc
            time.sleep(min(2.0 ** attempt, 30.0))
        raise AssertionError("unreachable")

    def _submit(self, model: str, wanted: dict[str, Request]) -> None:
        """Upload and create batches for the requests, each recorded as soon as it is created."""
        lines = [batch_line(model, request, key) for key, request in wanted.items()]
        chunk: list[str] = []
        size = 0
        for line in lines:
            length = len(line.encode("utf-8")) + 1
            if chunk and (len(chunk) >= self.batch_requests or size + length > self.max_bytes):
                self._create(model, chunk)
                chunk, size = [], 0
            chunk.append(line)
            size += length
        if chunk:
            self._create(model, chunk)

    def _create(self, model: str, lines: list[str]) -> None:
        batches = self._record()
        folder = self.folder / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{len(batches) + 1:04d}.jsonl"
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (folder / name).write_bytes(data)
        client = self._openai()
        uploaded = self._call("uploading the batch file", lambda: client.files.create(
            file=(name, data, "application/jsonl"), purpose="batch"))
        entry = {"id": None, "input_file_id": uploaded.id, "file": f"{FOLDER}/{name}", "model": model,
                 "lines": len(lines), "created": time.time(), "status": "creating", "read": False}
        batches.append(entry)
        self._write(batches)  # before the create: a kill from here on finds the batch by its input file
        try:
            self._start(entry)
        finally:
            self._write(batches)

    def _start(self, entry: dict) -> None:
        """Create the batch of an entry's uploaded input file (once: never retried, see _openai). One the
        provider refuses (a 4xx: nothing was created, e.g. the file is gone) ends the entry as read with
        no reply, so its lines go in the next batch, uploaded anew, and no re-run looks for it."""
        client = self._openai()
        try:
            batch = self._call("creating the batch", lambda: client.batches.create(
                input_file_id=entry["input_file_id"], endpoint=URL, completion_window="24h",
                metadata={"logicpipe": f"{self.folder.name}/{entry['file']}"}), retried=False)
        except LLMError as exc:
            if _refused(exc):
                entry.update(status="refused", read=True, stored=0, failed=0, unfinished=entry["lines"],
                             why=str(exc)[:300])
            raise
        entry.update(id=batch.id, status=batch.status)
        self.created += 1

    def _found(self, entry: dict) -> None:
        """An entry recorded without an id (the command was killed while creating its batch): its batch
        if the provider has one of its input file, listed newest first; else it is created now."""
        client = self._openai()
        since = entry["created"] - LOOKBACK

        def look() -> Any:
            for batch in client.batches.list(limit=100):
                if batch.input_file_id == entry["input_file_id"]:
                    return batch
                if batch.created_at < since:
                    return None
            return None

        batch = self._call(f"looking up the batch of {entry['input_file_id']}", look)
        if batch is not None:
            entry.update(id=batch.id, status=batch.status)
            return
        try:
            self._start(entry)
        except LLMError:
            if not entry["read"]:
                raise

    def _finish(self, batches: list[dict]) -> None:
        """Poll the batches not read yet until each has ended (or --batch-timeout), and read each that
        ended into the cache."""
        pause = FIRST_POLL
        while True:
            pending = [b for b in batches if not b.get("read")]
            if not pending:
                return
            client = self._openai()
            for entry in pending:
                if entry["id"] is None:
                    self._found(entry)
                    self._write(batches)
                    if entry["read"]:  # refused: nothing to poll
                        continue
                batch = self._call(f"polling batch {entry['id']}",
                                   lambda e=entry, c=client: c.batches.retrieve(e["id"]))
                entry["status"] = batch.status
                if batch.status in ENDED:
                    self._read(entry, batch)
                    if entry["created"] < self._started:
                        self.resumed += 1
                self._write(batches)
            if self.progress is not None:
                self.progress(sum(1 for b in batches if b.get("read")), len(batches))
            if not any(not b.get("read") for b in batches) or self._late():
                return
            if self._stopping.wait(max(0.0, min(pause, self.deadline - time.monotonic()))):
                raise RunStopped("stopped while polling batches; re-run the command to go on polling them "
                                 "(nothing is submitted twice)")
            pause = min(pause * 1.5, self.poll)

    def _read(self, entry: dict, batch: Any) -> None:
        """An ended batch's output and error files into the cache, as --batch-import reads a file; the
        lines with no reply (failed, or never run: expired, cancelled) are asked in the next batch."""
        given = self.folder / entry["file"]
        wanted = exported_ids(given, "--batch")
        client = self._openai()
        items: list[dict] = []
        for field in ("output_file_id", "error_file_id"):
            file_id = getattr(batch, field, None)
            if not file_id:
                continue
            content = self._call(f"reading {file_id} of batch {entry['id']}", lambda f=file_id: client.files.content(f))
            text = content.content.decode("utf-8", errors="replace")
            items += checked_lines([line for line in text.splitlines() if line.strip()], wanted,
                                   f"--batch {entry['id']} {file_id}", str(given))
        replies, failed = read_replies(items, self.samples)
        store_replies(replies, entry["model"], self._cache_path, entry["id"])
        # Paid for: a later run into the folder under a spending cap counts them.
        add_batch_to_ledger(self.folder, entry["id"], len(replies), sum(r.prompt_tokens for _, r in replies),
                            sum(r.completion_tokens for _, r in replies))
        for identifier, why in failed.items():
            self._why[key_of(identifier)] = why
        for key, _reply in replies:
            self._why.pop(key, None)
        entry.update(read=True, stored=len(replies), failed=len(failed),
                     unfinished=len(wanted) - len(replies) - len(failed))

    def _record(self) -> list[dict]:
        return read_record(self.folder)

    def _write(self, batches: list[dict]) -> None:
        path = self.folder / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump({"batches": batches}, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        self._ids = {b["id"] for b in batches}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
