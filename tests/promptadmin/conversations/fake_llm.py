"""A small HTTP server that speaks OpenAI's chat-completions protocol, in a thread.

Tests script its answers (``Reply``): a status, headers, a delay, or a summary text; it
records every request it received and every answer it finished sending.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    text: str = "Ann hired 40 masons for the bridge over the Tarn."
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # Wait for this event before answering (a call in flight, for kill tests).
    hold: threading.Event | None = None
    # Sent as the body instead of a completion (a malformed answer).
    raw: bytes | None = None


@dataclass
class FakeLLM:
    replies: list[Reply] = field(default_factory=list)
    default: Reply = field(default_factory=Reply)
    requests: list[dict[str, Any]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each request arrived
    answered: int = 0
    received: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Answers worked out from the request, when no scripted reply is left.
    respond: Callable[[dict[str, Any]], Reply] | None = None

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            self.received.set()
            if self.replies:
                return self.replies.pop(0)
        return self.respond(body) if self.respond is not None else self.default


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = fake.next_reply(body)
            if reply.hold is not None:
                reply.hold.wait(60)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status == 200:
                payload: dict[str, Any] = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake-model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            else:
                payload = {"error": {"message": f"status {reply.status}", "type": "test"}}
            data = reply.raw if reply.raw is not None else json.dumps(payload).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except OSError:
                return  # the client went away (a killed worker): not answered
            if reply.status == 200:
                with fake.lock:
                    fake.answered += 1

    return Handler


@contextmanager
def fake_llm(*replies: Reply) -> Iterator[FakeLLM]:
    """Serve a fake endpoint on 127.0.0.1 (a free port); ``fake.url`` is its base URL."""
    fake = FakeLLM(replies=list(replies))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
