"""`seqbench ui`: a read-only results dashboard served on loopback.

The stack is Python's own `http.server` (a threading server: one thread per request) with
pages rendered on the server (ui/pages.py) and charts drawn by matplotlib as inline SVG: no
new dependency, no JavaScript framework, nothing fetched from a CDN (every byte comes from
this process), and the charts are the figures `--plot` writes. Read-only by construction: the
server answers GET and HEAD only, opens the store read-only (`open_store(db, "read")`) and
reads reports through the store's reads (store/results.ReadStore) behind the walls of
`seqbench query` (SQLite: a mode=ro connection with query_only and an authorizer; PostgreSQL:
read-only transactions). Every read goes through the api, as the CLI's do: no SQL here.
"""

from __future__ import annotations

import contextlib
import html
import re
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from seqbench.errors import SeqbenchError
from seqbench.ui.markup import render_page
from seqbench.ui.pages import Dashboard, NotFound

# pages rendered at once; more requests wait their turn (the GIL runs one at a time anyway)
PAGE_SLOTS = 8
# a request's line and headers must have arrived this many seconds after it began (a client
# sending a byte at a time is dropped then: a socket timeout alone restarts at every byte)
HEADER_DEADLINE_S = 30
# a read or write that waits this long on the client ends its connection
REQUEST_TIMEOUT_S = 30
# connections served at once, one thread each; one more is answered 503 and closed at once
MAX_CONNECTIONS = 64
# a Host header: a name or an IPv4 address, or an IPv6 address in brackets; a port or nothing
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(:[0-9]{1,5})?")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The names a request's Host header may give (without its port): the loopback names, the
    address served on and any `extra`. Anything else is refused, so a page on another site
    that rebinds its DNS name to 127.0.0.1 cannot read the dashboard."""
    names = {*LOOPBACK_NAMES, host.strip("[]"), *(h.strip("[]") for h in extra)}
    return frozenset(n.lower() for n in names if n)


def _host_name(header: str) -> str | None:
    """The name in a Host header, without its port: 'a:8000' -> 'a', '[::1]:80' -> '::1'; None
    for anything else a Host header cannot be (userinfo 'a:80@b', '[::1]b', 'a:b:c', spaces)."""
    m = _HOST.fullmatch(header.strip().lower())
    return m.group(1).strip("[]") if m else None


def make_handler(board: Dashboard, hosts: frozenset[str] | None = None) -> type:
    """The request handler class of a server over `board`, answering to `hosts` (default:
    127.0.0.1's names), at most PAGE_SLOTS pages built at once."""
    hosts = hosts if hosts is not None else allowed_hosts("127.0.0.1")
    slots = threading.BoundedSemaphore(PAGE_SLOTS)
    return type("Handler", (_Handler,), {"board": board, "hosts": hosts, "slots": slots})


class _Handler(BaseHTTPRequestHandler):
    """The dashboard's answers; make_handler gives it its board, hosts and slots."""

    server_version = "seqbench-ui"
    timeout = REQUEST_TIMEOUT_S  # a half-open or slow client does not hold a thread forever
    board: Dashboard
    hosts: frozenset[str]
    slots: threading.BoundedSemaphore

    def log_message(self, fmt, *args):  # quiet: a dashboard is not a web server's log
        pass

    def _send(self, status: int, text: str, kind: str = "text/html; charset=utf-8",
              **headers: str):  # fmt: skip
        """Every answer of the dashboard's: its text, type and headers (`headers`: more, as
        Allow="GET, HEAD")."""
        data = text.encode("utf-8")
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'",
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):  # http.server calls do_<METHOD>
        url = urlsplit(self.path)
        refused = self._host_refusal(url)
        if refused:
            self._send(*refused)
            return
        with self.slots:
            try:
                status, page = self._page(url)
            finally:
                self.board.store.release()  # this thread's read connection
        self._send(status, page)

    do_HEAD = do_GET

    def _host_refusal(self, url) -> tuple[int, str, str] | None:
        """Every name the request gives must be ours: each Host header (one is the rule; two
        get 400) and an absolute-form request line's authority (GET http://other/ ...). The
        refusal (status, text, type), or None."""
        given = self.headers.get_all("Host") or []
        if len(given) != 1:
            return HTTPStatus.BAD_REQUEST, "one Host header, please\n", "text/plain"
        names = [_host_name(given[0])]
        if url.scheme or url.netloc:
            names.append((url.hostname or "").lower())
        if names[0] is None:
            return HTTPStatus.BAD_REQUEST, "a Host header is a name and a port\n", "text/plain"
        if any(n not in self.hosts for n in names):
            text = f"this dashboard answers only to {', '.join(sorted(self.hosts))}\n"
            return HTTPStatus.MISDIRECTED_REQUEST, text, "text/plain; charset=utf-8"
        return None

    def _page(self, url) -> tuple[int, str]:
        """The page at `url` and its status: a missing thing is a 404, a bad request a 400
        said on the page, an error of ours a 500 in one line (its traceback logged)."""
        where = self.board.store.display_url
        try:
            title, body, refresh = self.board.page(url.path, parse_qs(url.query))
            return HTTPStatus.OK, render_page(title, body, url.path, refresh, where)
        except NotFound as e:
            body = f"<p>{html.escape(self.board.words(str(e)))}</p>"
            return HTTPStatus.NOT_FOUND, render_page("not found", body, "", None, where)
        except SeqbenchError as e:  # a bad filter, an unknown run: said on the page
            body = f"<p class='error'>{html.escape(self.board.words(str(e)))}</p>"
            page = render_page("cannot show this", body, url.path, None, where)
            return HTTPStatus.BAD_REQUEST, page
        except Exception as e:  # ours: one line to the browser, the traceback logged
            sys.stderr.write(f"seqbench ui: error serving {self.path!r}:\n{traceback.format_exc()}")
            text = f"internal error ({type(e).__name__}); the server's log has the details"
            page = render_page("error", f"<p>{html.escape(text)}</p>", url.path, None, where)
            return HTTPStatus.INTERNAL_SERVER_ERROR, page

    def _refuse(self):
        self.close_connection = True
        text = "the dashboard is read-only: GET and HEAD only\n"
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, text, "text/plain; charset=utf-8",
                   Allow="GET, HEAD")  # fmt: skip

    def __getattr__(self, name: str):
        """Every other method (POST, OPTIONS, TRACE, CONNECT, a lowercase 'get'): 405 in one
        line, not http.server's 501 page."""
        if name.startswith("do_"):
            return self._refuse
        raise AttributeError(name)

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (a bad request line, a header too long): one line of
        text, as every answer of the dashboard's, not its HTML page."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # not parsed yet: a status line all the same
            self.request_version = "HTTP/1.0"
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self._send(code, f"{message or phrase}\n", "text/plain; charset=utf-8",
                   Connection="close")  # fmt: skip

    def handle_one_request(self):
        self.server.watchdog.watch(self.connection)  # until its headers are in
        try:
            super().handle_one_request()
        finally:
            self.server.watchdog.forget(self.connection)

    def parse_request(self) -> bool:
        ok = super().parse_request()  # reads the headers
        self.server.watchdog.forget(self.connection)
        return ok


class _Watchdog:
    """Shuts the connections whose request line and headers have not all arrived by their
    deadline: one thread for every connection, where a socket timeout per read lets a client
    that sends a byte every few seconds hold its thread for ever."""

    def __init__(self, deadline_s: float):
        self.deadline_s = deadline_s
        self._due: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ui-watchdog", daemon=True)
        self._thread.start()

    def watch(self, conn: socket.socket) -> None:
        with self._lock:
            self._due[conn] = time.monotonic() + self.deadline_s

    def forget(self, conn: socket.socket) -> None:
        with self._lock:
            self._due.pop(conn, None)

    def _run(self) -> None:
        while not self._stop.wait(min(0.5, self.deadline_s / 4)):
            now = time.monotonic()
            with self._lock:
                late = [c for c, due in self._due.items() if due <= now]
                for c in late:
                    del self._due[c]
            for c in late:
                with contextlib.suppress(OSError):  # its handler's read returns; thread ends
                    c.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst of connections waits, not refused

    def __init__(self, address, handler, *, max_connections: int = MAX_CONNECTIONS,
                 header_deadline_s: float = HEADER_DEADLINE_S):  # fmt: skip
        self.watchdog = _Watchdog(header_deadline_s)
        self._connections = threading.BoundedSemaphore(max_connections)
        self._slots: dict[socket.socket, bool] = {}  # a connection's slot, until claimed
        try:
            super().__init__(address, handler)
        except BaseException:
            self.watchdog.close()
            raise

    def process_request(self, request, client_address):
        """A thread for the connection while fewer than max_connections are open; past that,
        503 in one line and closed, so that the threads stay bounded."""
        if not self._connections.acquire(blocking=False):
            text = b"too many connections; try again\n"
            head = (
                "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(text)}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
            )
            try:
                request.settimeout(1)
                request.sendall(head.encode() + text)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        self._slots[request] = True
        try:
            super().process_request(request, client_address)
        except BaseException:
            # a SIGTERM can land while Thread.start waits for the thread it has already
            # started: the slot is released once, by whichever of the two claims it first
            # (a second release raised ValueError, which serve_forever logged, and the
            # Terminated it replaced was lost: the server did not stop)
            if self._slots.pop(request, None):
                self._connections.release()
            raise

    def process_request_thread(self, request, client_address):
        owns = self._slots.pop(request, None)
        try:
            super().process_request_thread(request, client_address)
        finally:
            if owns:
                self._connections.release()

    def server_close(self):
        super().server_close()
        self.watchdog.close()

    def handle_error(self, request, client_address):
        """A client that went away mid-answer (reset, broken pipe, timed out) is no error of
        ours: not worth a traceback on the server's log."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def serve_ui(
    db: str | None,
    host: str = "127.0.0.1",
    port: int = 8000,
    ready=None,
    allow_hosts: tuple[str, ...] = (),
    words: Callable[[str], str] = str,
) -> None:
    """Serve the dashboard until interrupted. `ready(url)` is called once it listens. `words`: as
    Dashboard's. Requests whose Host header names anything but loopback, `host` or
    `allow_hosts` are refused."""
    import errno

    board = Dashboard(db, words)
    try:
        try:
            httpd = _Server((host, port), make_handler(board, allowed_hosts(host, allow_hosts)))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise SeqbenchError(
                    f"port {port} on {host} is in use: give another with `port`"
                ) from None
            raise SeqbenchError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        url = f"http://{host}:{httpd.server_address[1]}/"
        if ready is not None:
            ready(url)
        try:
            httpd.serve_forever(poll_interval=0.2)
        finally:
            httpd.server_close()
    finally:
        board.close()
