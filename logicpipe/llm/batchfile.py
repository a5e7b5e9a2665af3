"""Offline batch files: a stage's model requests written in the OpenAI batch input format (what `vllm
run-batch -i` reads, and what OpenAI's /v1/batches takes), and an output file in that format (what
`vllm run-batch -o` writes) read back into the reply cache.

The run itself never changes: a request the cache can answer is answered, one it cannot is written to
the file instead of sent (BatchExport is the run's gate, as a spending cap is), and the run stops
between requests with what it could finish written. Once the file's replies are imported, the same
command answers those requests from the cache, exactly as a synchronous run that had asked them would
(the records are the same), and writes the next round's requests, if any.

A line's custom_id names the problem, the purpose (formulate, refine, cot, ...), the sample, and the
request's cache key, which is what the imported reply is stored under.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import DataError, LLMError, UsageError
from ..core.words import counted
from .cache import Cache, CachedReply
from .client import MalformedReply, cache_key, default_cache_path, parse_reply, request_body, text_bound
from .request import Completion, Request, endpoint

URL = "/v1/chat/completions"


def custom_id(request: Request, key: str) -> str:
    return f"{request.problem}:{request.purpose}:{request.sample}:{key}"


def batch_line(model: str, request: Request, key: str) -> str:
    """A request as a line of a batch input file (the OpenAI batch format)."""
    return json.dumps({"custom_id": custom_id(request, key), "method": "POST", "url": URL,
                       "body": request_body(model, request)}, ensure_ascii=False)


def key_of(identifier: str) -> str:
    return identifier.rsplit(":", 1)[-1]


class BatchExport:
    """The run's gate under --batch-export FILE: admits the requests the cache answers, writes the others
    to FILE (afresh for this command: the previous file's replies were imported already) and holds them."""

    held_as = "not sent"  # written to the file instead
    expected = True  # holding requests back is what --batch-export is for: the run pauses, it did not fail

    def __init__(self, path: Path, base_url: str | None, cache_path: Path | None,
                 imported: tuple[int, int] | None = None, source: Path | None = None):
        """`imported`: (stored, failed) of the --batch-import `source` read before, said with what is written."""
        self.path = path
        self.imported = imported
        self.source = str(source) if source is not None else None
        self.base_url = endpoint(base_url)
        self._cache_path = cache_path or default_cache_path()
        self._written: set[str] = set()
        self._started = False

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        cache = Cache(self._cache_path)  # opened where it is used: each stage sends from a thread of its own
        try:
            return self._admit(model, requests, cache)
        finally:
            cache.close()

    def _admit(self, model: str, requests: list[Request], cache: Cache) -> list[Request]:
        answered = []
        lines = []
        for request in requests:
            if request.then is not None:
                raise UsageError("--batch-export: constrained decoding in phases (--constrain on CSP or SMT) "
                                 "needs each phase's reply before the next request; run it without a batch")
            key = cache_key(model, self.base_url, request)
            if cache.get(key) is not None:
                answered.append(request)
            elif key not in self._written:
                self._written.add(key)
                lines.append(batch_line(model, request, key))
        if lines:
            with open(self.path, "a" if self._started else "w", encoding="utf-8") as out:
                out.write("\n".join(lines) + "\n")
            self._started = True
        return answered

    def failure(self, key: str) -> LLMError | None:
        return None

    def batched(self, source: str) -> bool:
        return source == self.source  # the output file this command imported

    def charge(self, result: Completion | LLMError) -> None:
        pass

    def stop(self) -> None:
        pass

    def cancelled(self) -> None:
        pass

    def open(self) -> bool:
        return False  # every request it admitted is in the cache

    def spent(self) -> str | None:
        read = ""
        if self.imported is not None:
            stored, failed = self.imported
            read = (f"--batch-import stored {counted(stored, 'reply', 'replies')}"
                    + (f" ({counted(failed, 'failed line')})" if failed else "") + "; ")
        return (f"{read}--batch-export: {counted(len(self._written), 'request')} written to {self.path} (run them, e.g. "
                f"`vllm run-batch -i {self.path} -o OUTPUT`, then re-run this command with --batch-import OUTPUT)")

    def resume(self) -> str:
        return "finished records are kept; the requests the cache answered are done"

    def finished(self) -> None:
        """The run ended with every request answered: a FILE this command did not write holds requests
        answered already (imported or cached), which a second `vllm run-batch` would pay for again."""
        if not self._started and self.path.is_file() and self.path.stat().st_size:
            self.path.write_text("", encoding="utf-8")


def exported_ids(path: Path, option: str = "--batch-export") -> set[str]:
    """The custom_ids of a batch input file a command wrote (--batch-export, or --batch's own)."""
    ids = set()
    for number, line in enumerate(_lines(path, option), start=1):
        try:
            ids.add(json.loads(line)["custom_id"])
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{option} {path}:{number}: not a batch request line") from None
    return ids


def output_lines(output: Path, exported: Path) -> list[dict]:
    """The lines of an output file, each checked to answer a request of the export file; DataError
    naming the first line that does not (checked with the options, before anything is written)."""
    return checked_lines(_lines(output, "--batch-import"), exported_ids(exported), f"--batch-import {output}",
                         str(exported))


def checked_lines(lines: list[str], wanted: set[str], where: str, given: str) -> list[dict]:
    """Output lines (of a file, or of a provider's output and error files) parsed, each checked to
    answer a request of `given` (whose custom_ids are `wanted`); DataError naming the first that does not."""
    items = []
    for number, line in enumerate(lines, start=1):
        try:
            item = json.loads(line)
            identifier = item["custom_id"]
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{where}:{number}: not a batch output line (no custom_id)") from None
        if identifier not in wanted:
            raise DataError(f"{where}:{number}: {identifier!r} is no request of {given}; give the output of that file")
        items.append(item)
    return items


def read_replies(items: list[dict], samples: int) -> tuple[list[tuple[str, CachedReply]], dict[str, str]]:
    """The replies of output lines as (cache key, reply), and the custom_ids of the lines that failed
    with why: an error, a status other than 200, a body that is no chat completion, a text no record
    could hold. A failed line is never cached, so its request is asked again (the next batch)."""
    bound = text_bound(samples + 1)
    replies = []
    failed: dict[str, str] = {}
    for item in items:
        identifier = item["custom_id"]
        response = item.get("response") or {}
        if item.get("error") or not isinstance(response, dict) or response.get("status_code") != 200:
            failed[identifier] = _why(item)
            continue
        try:
            reply = parse_reply(json.dumps(response.get("body")).encode())
        except MalformedReply as exc:
            failed[identifier] = str(exc)
            continue
        size = len(json.dumps(reply.text, ensure_ascii=False).encode("utf-8"))
        if size > bound:
            failed[identifier] = f"the reply's text is {size} bytes, over the {bound} bytes a record can hold"
            continue
        replies.append((key_of(identifier), reply))
    return replies, failed


def store_replies(replies: list[tuple[str, CachedReply]], model: str, cache_path: Path | None, source: str) -> None:
    """Put replies read from a batch's output into the reply cache (as a synchronous reply is put)."""
    cache = Cache(cache_path or default_cache_path())
    try:
        for key, reply in replies:
            cache.put(key, reply, model=model, batch=source)
    finally:
        cache.close()


def import_replies(output: Path, exported: Path, model: str, cache_path: Path | None, samples: int) -> tuple[int, int]:
    """Store the replies of an output file in the cache: (stored, failed). A failed line (read_replies)
    is not stored, so the next run writes its request again."""
    replies, failed = read_replies(output_lines(output, exported), samples)
    store_replies(replies, model, cache_path, str(output))
    return len(replies), len(failed)


def _why(item: dict) -> str:
    """What a failed output line says about its failure, short."""
    error = item.get("error")
    response = item.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    if not error and isinstance(body, dict):
        error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    status = response.get("status_code") if isinstance(response, dict) else None
    said = str(message)[:300] if message else "no reply"
    return f"HTTP {status}: {said}" if status is not None else said


def _lines(path: Path, option: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{option} {path}: cannot read it ({exc.__class__.__name__})") from None
    return [line for line in text.splitlines() if line.strip()]
