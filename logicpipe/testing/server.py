"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies and injectable faults.

Tests and benchmarks run the real `openai` client against it: no network, no mock of Python code.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..data import load_programs
from ..data.program_files import is_written
from ..llm.declared import HEADERS
from .kb_replies import KBReplies

KB_PURPOSES = ("kb-goals", "kb-context", "kb-answer", "kb-claims")  # what kb ask and kb validate send


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops the connections a client opens at once beyond it (the client
    # tries again a second later): real servers take a burst of 64 or more.
    request_queue_size = 1024


@dataclass
class Fault:
    """What the next request gets instead of a normal reply."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    malformed: bool = False  # a 200 whose JSON body stops half-way
    body: bytes | None = None  # a 200 with exactly these bytes as its body (nested brackets, bad UTF-8)
    usage: dict[str, Any] | None = None  # replaces the reply's usage block (prompt_tokens "10" or 10.5)
    content: str | None = None  # replaces the reply's text (lone surrogates)
    oversize: int = 0  # pads the reply's text to this many bytes (a last line of x's)
    trickle: float = 0.0  # seconds between single bytes of the reply
    endless: bool = False  # a 200 whose body never ends
    reset: bool = False  # a 200 that sends half its body, then resets the connection (TCP RST)


class FakeOpenAI:
    """`max_in_flight`: a rate limit, as providers have one: a chat request that arrives while that many
    are being answered gets a 429 at once (counted in `rate_limited`, not kept in `requests`, which
    holds the requests answered or given an injected fault); `peak_in_flight` is the most answered at
    once."""

    def __init__(self, reply: Callable[[dict], str], latency: float = 0.0, port: int = 0,
                 max_in_flight: int | None = None, batch_delay: float = 0.5, create_delay: float = 0.0):
        self.reply = reply
        # The batch API (/v1/files, /v1/batches): a batch goes validating -> in_progress -> finalizing ->
        # completed over batch_delay seconds, each line answered by `reply` (routed on its custom_id's
        # problem and purpose); `batches` holds every batch created, in order, with its lines' custom_ids.
        self.batch_delay = batch_delay
        self.create_delay = create_delay  # seconds between creating a batch and saying so (a kill's window)
        self.create_errors = 0  # the next this many batch creates get a 500 and create nothing
        self.batches: list[dict] = []
        self.files: dict[str, bytes] = {}
        self._made = 0  # files made so far
        self.line_errors: dict[str, int] = {}  # problem id -> how many of its next batch lines fail
        self.batch_fates: deque[str] = deque()  # "expired" or "cancelled": the next batches end so
        self.latency = latency
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self.peak_in_flight = 0
        self.rate_limited = 0
        self.requests: list[dict] = []
        self._faults: deque[Fault] = deque()
        # A fault chosen by the request itself (its _logicpipe purpose, problem, sample), after the queued ones.
        self.fault_for: Callable[[dict], Fault | None] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # ends endless and trickling replies at shutdown
        self._server = _Server(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def _file(self, data: bytes) -> str:
        with self._lock:
            return self._store(data)

    def _store(self, data: bytes) -> str:
        """A new file (under the lock): ids are never reused, also after a test removes one."""
        self._made += 1
        identifier = f"file-{self._made}"
        self.files[identifier] = data
        return identifier

    def _create_batch(self, request: dict) -> dict | None:
        with self._lock:
            data = self.files.get(str(request.get("input_file_id")))
            if data is None:
                return None
            lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
            batch = {"id": f"batch_{len(self.batches) + 1}", "object": "batch", "endpoint": request.get("endpoint"),
                     "input_file_id": request["input_file_id"], "completion_window": request.get("completion_window"),
                     "status": "validating", "output_file_id": None, "error_file_id": None, "errors": None,
                     "created_at": int(time.time()), "metadata": request.get("metadata"),
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
            self.batches.append({"batch": batch, "lines": lines, "custom_ids": [line["custom_id"] for line in lines],
                                 "started": time.monotonic(),
                                 "fate": self.batch_fates.popleft() if self.batch_fates else "completed"})
            return dict(batch)

    def _listed(self, query: str) -> dict:
        """GET /v1/batches: the batches newest first, `limit` a page, after the id `after`."""
        from urllib.parse import parse_qs

        asked = parse_qs(query)
        limit = int(asked.get("limit", ["20"])[0])
        with self._lock:
            ids = [entry["batch"]["id"] for entry in reversed(self.batches)]
        after = asked.get("after", [None])[0]
        start = ids.index(after) + 1 if after in ids else 0
        page = [batch for identifier in ids[start:start + limit] if (batch := self._batch(identifier)) is not None]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": start + limit < len(ids)}

    def _batch(self, identifier: str, cancel: bool = False) -> dict | None:
        """The batch's state now: its status advances with the time since it was created; once it ends,
        its output and error files are made (once)."""
        with self._lock:
            entry = next((b for b in self.batches if b["batch"]["id"] == identifier), None)
            if entry is None:
                return None
            batch = entry["batch"]
            if cancel and batch["status"] not in ("completed", "expired", "cancelled", "failed"):
                entry["fate"], entry["cancelled"] = "cancelled", True
            if batch["status"] in ("completed", "expired", "cancelled", "failed"):
                return dict(batch)
            elapsed = (time.monotonic() - entry["started"]) / max(self.batch_delay, 1e-9)
            if entry.get("cancelled"):
                self._end(entry, "cancelled", answered=0)
            elif elapsed >= 1:
                self._end(entry, entry["fate"],
                          answered=len(entry["lines"]) if entry["fate"] == "completed" else len(entry["lines"]) // 2)
            else:
                batch["status"] = "validating" if elapsed < 0.25 else "in_progress" if elapsed < 0.75 else "finalizing"
            return dict(batch)

    def _end(self, entry: dict, status: str, answered: int) -> None:
        """Answer the first `answered` lines (a line of a problem in line_errors fails instead); the
        rest get batch_expired or batch_cancelled in the error file, as OpenAI writes them."""
        out, errors = [], []
        for number, line in enumerate(entry["lines"]):
            problem, purpose, sample, *_ = line["custom_id"].split(":")
            result = {"id": f"req-{number}", "custom_id": line["custom_id"]}
            if number >= answered:
                errors.append({**result, "response": None, "error": {
                    "code": f"batch_{status}", "message": f"the batch was {status} before this request ran"}})
                continue
            if self.line_errors.get(problem, 0) > 0:
                self.line_errors[problem] -= 1
                errors.append({**result, "response": {"status_code": 500, "request_id": f"r{number}", "body": {
                    "error": {"message": "injected line error", "type": "server_error"}}}, "error": None})
                continue
            body = dict(line["body"])
            body["_logicpipe"] = {"purpose": purpose, "problem": problem, "phase": "", "sample": sample}
            text = self.reply(body)  # under this server's lock: a batch ends once
            out.append({**result, "response": {"status_code": 200, "request_id": f"r{number}",
                                               "body": completion(body, text)}, "error": None})
        batch = entry["batch"]
        for name, items in (("output_file_id", out), ("error_file_id", errors)):
            if items:
                batch[name] = self._store("".join(json.dumps(item) + "\n" for item in items).encode())
        batch["status"] = status
        batch["request_counts"] = {"total": len(entry["lines"]), "completed": len(out),
                                   "failed": sum(item["response"] is not None for item in errors)}

    def _next(self, body: dict) -> Fault | None:
        with self._lock:
            self.requests.append(body)
            if self._faults:
                return self._faults.popleft()
            return self.fault_for(body) if self.fault_for is not None else None

    def _enter(self) -> bool:
        """Count a chat request in flight; False (and not counted) when the rate limit refuses it."""
        with self._lock:
            if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
                self.rate_limited += 1
                return False
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return True

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                return None

            def _head(self, status: int, length: int | None, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if length is not None:
                    self.send_header("Content-Length", str(length))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self._done()  # before the reply goes out: a client that sends again at once is not refused
                self._head(status, len(payload), headers)
                self.wfile.write(payload)

            def _done(self) -> None:
                if getattr(self, "_counted", False):
                    self._counted = False
                    fake._leave()

            def _trickle(self, payload: bytes, pause: float) -> None:
                self._head(200, len(payload))
                for index in range(len(payload)):
                    if fake._stopping.wait(pause):
                        return
                    self.wfile.write(payload[index:index + 1])
                    self.wfile.flush()

            def _endless(self) -> None:
                # No Content-Length and no end: the body goes on until the client hangs up.
                self.close_connection = True
                self._head(200, None)
                self.wfile.write(b'{"id": "x", "choices": [{"message": {"content": "')
                while not fake._stopping.wait(0.01):
                    self.wfile.write(b"and on " * 64)
                    self.wfile.flush()

            def _reset(self, payload: bytes) -> None:
                # SO_LINGER of zero makes close() send a RST instead of a FIN: the client's read fails
                # mid-body, as when a proxy or a crashed server drops the connection.
                self.close_connection = True
                self._head(200, len(payload))
                self.wfile.write(payload[:len(payload) // 2])
                self.wfile.flush()
                time.sleep(0.05)  # the half body reaches the client before the reset does
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()

            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a reply (its deadline) or hung up a kept-alive connection

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = self.path.split("?")[0]
                parts = path.rstrip("/").split("/")
                if path.startswith("/v1/files/") and path.endswith("/content") and len(parts) == 5:
                    data = fake.files.get(parts[3])
                    if data is not None:
                        self._send(200, data)
                        return
                elif path == "/v1/batches":
                    self._send(200, json.dumps(fake._listed(self.path.partition("?")[2])).encode())
                    return
                elif path.startswith("/v1/batches/") and len(parts) == 4:
                    batch = fake._batch(parts[3])
                    if batch is not None:
                        self._send(200, json.dumps(batch).encode())
                        return
                self._send(404, b'{"error": {"message": "not found"}}')

            def _batch_api(self, path: str, raw: bytes) -> None:
                parts = path.rstrip("/").split("/")
                if path == "/v1/files":
                    from email.parser import BytesParser
                    from email.policy import HTTP

                    head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
                    form = BytesParser(policy=HTTP).parsebytes(head + raw)
                    fields = {part.get_param("name", header="content-disposition"): part
                              for part in form.iter_parts()} if form.is_multipart() else {}
                    upload, purpose = fields.get("file"), fields.get("purpose")
                    if upload is None or purpose is None or purpose.get_payload(decode=True) != b"batch":
                        self._send(400, b'{"error": {"message": "expected a multipart file with purpose batch"}}')
                        return
                    data = upload.get_payload(decode=True)
                    data = data if isinstance(data, bytes) else b""
                    identifier = fake._file(data)
                    self._send(200, json.dumps({"id": identifier, "object": "file", "bytes": len(data),
                                                "created_at": int(time.time()), "filename": upload.get_filename(),
                                                "purpose": "batch", "status": "processed"}).encode())
                    return
                if path == "/v1/batches":
                    with fake._lock:
                        refused, fake.create_errors = fake.create_errors > 0, max(0, fake.create_errors - 1)
                    if refused:
                        self._send(500, b'{"error": {"message": "injected create error", "type": "server_error"}}')
                        return
                    batch = fake._create_batch(json.loads(raw or b"{}"))
                    time.sleep(fake.create_delay)
                    if batch is None:
                        self._send(400, b'{"error": {"message": "no such input file"}}')
                    else:
                        self._send(200, json.dumps(batch).encode())
                    return
                if len(parts) == 5 and parts[4] == "cancel":
                    batch = fake._batch(parts[3], cancel=True)
                    if batch is not None:
                        self._send(200, json.dumps(batch).encode())
                        return
                self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                path = self.path.split("?")[0]
                if path.startswith(("/v1/files", "/v1/batches")):
                    self._batch_api(path, raw)
                    return
                body = json.loads(raw or b"{}")
                # Reply functions route on what the request is for, never on prompt wording.
                body["_logicpipe"] = {"purpose": self.headers.get("X-Logicpipe-Purpose", ""),
                                      "problem": self.headers.get("X-Logicpipe-Problem", ""),
                                      "phase": self.headers.get("X-Logicpipe-Phase", ""),
                                      "sample": self.headers.get("X-Logicpipe-Sample", "0")}
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                if not fake._enter():
                    error = {"error": {"message": f"rate limit: over {fake.max_in_flight} requests in flight",
                                       "type": "rate_limit_exceeded"}}
                    self._send(429, json.dumps(error).encode())
                    return
                self._counted = True
                try:
                    self._answer(body)
                finally:
                    self._done()

            def _answer(self, body: dict) -> None:
                fault = fake._next(body) or Fault()
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status:
                    error = {"error": {"message": f"injected {fault.status}", "type": "injected"}}
                    self._send(fault.status, json.dumps(error).encode(), fault.headers)
                    return
                if fault.malformed:
                    self._send(200, b'{"id": "x", "choices": [{"message": ')
                    return
                if fault.body is not None:
                    self._send(200, fault.body)
                    return
                if fault.endless:
                    self._endless()
                    return
                time.sleep(fake.latency)
                text = fake.reply(body) if fault.content is None else fault.content
                if body["_logicpipe"]["phase"] == "1":
                    text = declarations(text)
                if fault.oversize > len(text):  # a line of filler no program extraction strips
                    text += "\n" + "x" * (fault.oversize - len(text) - 1)
                payload = json.dumps(completion(body, text, fault.usage)).encode()
                if fault.trickle:
                    self._trickle(payload, fault.trickle)
                elif fault.reset:
                    self._reset(payload)
                else:
                    self._send(200, payload)

        return Handler


def completion(body: dict, text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chat-completion reply carrying `text`, with token counts estimated at four characters a token."""
    prompt = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
    counted = {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
               "total_tokens": prompt + len(text) // 4}
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {**counted, **(usage or {})},
    }


def declarations(text: str) -> str:
    """What a server decoding the first phase (llm/declared.py) under its grammar writes, simplified:
    the reply up to and including its constraints header line (all of it where there is none)."""
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if any(header.match(line.rstrip("\n")) for header in HEADERS.values()):
            return "".join(lines[:number + 1]).rstrip("\n") + "\n"
    return text


class ScriptedReplies:
    """Replies for logicpipe's requests, routed on the request's purpose and problem id (the
    X-Logicpipe-* headers): the problem's program for formulate, a scripted repair for refine, a
    given option letter for the Standard and CoT questions, and for kb ask and kb validate what
    `kb` scripts for the question or answer (kb_replies.py). A problem may have several programs,
    served in turn (samples differ, as at temperature > 0)."""

    def __init__(self, programs: dict[str, list[str]], answers: dict[str, str] | None = None,
                 repairs: dict[str, str] | None = None, kb: KBReplies | None = None):
        self.programs = programs  # problem id -> programs, served in rotation
        self.answers = answers or {}  # problem id -> option letter
        self.repairs = repairs or {}  # text in the broken program -> repaired program
        self.kb = kb  # kb ask's goals, contexts and answers, and kb validate's claims
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    @classmethod
    def from_logic_lm(cls, programs_file: Path, **kwargs) -> ScriptedReplies:
        """Replies from programs as `logicpipe run --programs` reads them (a JSON list of records with id
        and raw_logic_programs, and the answer the baselines give where a record has one; or a JSONL
        file or folder a person wrote, which hold programs only)."""
        programs = {key: [text] for key, text in load_programs(programs_file).items()}
        answers: dict[str, str] = {}
        if not is_written(programs_file):  # load_programs has checked it is a list of records
            records = json.loads(programs_file.read_text())
            answers = {str(r["id"]): r["answer"] for r in records if isinstance(r.get("answer"), str)}
        return cls(programs, answers=answers, **kwargs)

    def __call__(self, body: dict) -> str:
        meta = body.get("_logicpipe", {})
        purpose, problem = meta.get("purpose", ""), meta.get("problem", "")
        if purpose in KB_PURPOSES and self.kb is not None:
            return self.kb.reply(purpose, problem, body)
        if purpose == "refine":
            user = body["messages"][-1]["content"]
            for marker, repaired in self.repairs.items():
                if marker in user:
                    return f"Here is the fix.\n```\n{repaired}\n```"
            return "I cannot repair this program."
        if purpose in ("standard", "cot"):
            letter = self.answers.get(problem, "A")
            return f"Step by step, the constraints settle it.\nThe correct option is: {letter}"
        if purpose != "formulate" or problem not in self.programs:
            return "I cannot translate this problem."
        with self._lock:
            if meta.get("phase") in ("", "1"):  # a later phase of a request gets the same program
                self._served[problem] += 1
            turn = self._served[problem] - 1
        options = self.programs[problem]
        return options[turn % len(options)]
