"""`progagent view` and `progagent export`: trajectories as a page to read, and as a table for other tools.

progagent view runs/teacher.jsonl                  # writes runs/teacher.html (one file, works offline)
progagent view runs/teacher.jsonl --serve          # serves it on 127.0.0.1 until Ctrl-C
progagent export trajectories runs/teacher.jsonl --format parquet -o teacher.parquet
"""

from __future__ import annotations

import hmac
import http.server
import secrets
import sys
import warnings
from pathlib import Path

from ..cli import UsageError, existing_file, positive_int
from .export import FORMATS
from .view import PAGE_MAX_BYTES, PAGE_MAX_EPISODES, PAGE_OBSERVATION_CHARS


def register(subparsers) -> None:
    _register_view(subparsers)
    _register_export(subparsers)


def _register_view(subparsers) -> None:
    parser = subparsers.add_parser(
        "view",
        help="the trajectories of a JSON-lines file as one HTML page (list, filters, turns)",
        description="Write the trajectories of FILE (what `progagent run --out` and the training pipeline write) as one "
        "self-contained HTML page: a list of episodes with filters by task, harness, stage and verdict, "
        "and the turns of the selected episode. The page fetches nothing (inline style and script), so it "
        "opens offline, from a file.",
    )
    parser.add_argument("file", metavar="FILE.jsonl", type=existing_file, help="trajectories, one JSON object a line")
    parser.add_argument(
        "-o",
        "--out",
        metavar="OUT.html",
        help="where to write the page (default: FILE with .html; with --serve, nothing is written unless given)",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the page on 127.0.0.1 (a free port, or --port) until Ctrl-C, and print its URL",
    )
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    parser.add_argument(
        "--max-observation-chars",
        type=positive_int,
        default=PAGE_OBSERVATION_CHARS,
        help=f"longer texts (observations, programs, model text) are cut, with a marker "
        f"(default {PAGE_OBSERVATION_CHARS})",
    )
    parser.add_argument(
        "--max-page-mb",
        type=positive_int,
        default=PAGE_MAX_BYTES // (1024 * 1024),
        help="turn views stop being added past this size; those episodes stay listed "
        f"(default {PAGE_MAX_BYTES // (1024 * 1024)})",
    )
    parser.add_argument(
        "--max-episodes",
        type=positive_int,
        default=PAGE_MAX_EPISODES,
        help=f"episodes listed at most (default {PAGE_MAX_EPISODES})",
    )
    parser.set_defaults(func=view_command)


def _register_export(subparsers) -> None:
    """`progagent export trajectories ...`. The same command's task formats (`export harbor|authors`) live in
    progagent_lib/synthesis/cli.py: the command table (progagent_lib/cli.py) loads one module or the other by the
    word after `export`."""
    parser = subparsers.add_parser("export", help="export trajectories as a parquet / HF datasets table")
    kinds = parser.add_subparsers(dest="export_kind", required=True, metavar="trajectories")
    trajectories = kinds.add_parser(
        "trajectories",
        help="trajectories as a table, one row per episode (parquet file or datasets folder)",
        description="One row per episode: messages (the chat, tool calls as recorded), tools (the schemas, as JSON), "
        "reward (R), score (R~) and the metrics (tool-output tokens, tool calls, turns, end reason, "
        "harness, task id, scale, seed, stage). parquet: datasets.load_dataset('parquet', data_files=OUT); "
        "hf: datasets.load_from_disk(OUT).",
    )
    trajectories.add_argument(
        "file", metavar="FILE.jsonl", type=existing_file, help="trajectories, one JSON object a line"
    )
    trajectories.add_argument("--format", required=True, choices=FORMATS, help="parquet (one file) or hf (a folder)")
    trajectories.add_argument("-o", "--out", required=True, help="the parquet file or the datasets folder to write")
    trajectories.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    trajectories.set_defaults(func=export_command)


def view_command(args) -> int:
    from .trajectory import iter_jsonl
    from .view import trajectories_page

    source = Path(args.file)
    with warnings.catch_warnings(record=True) as skipped:  # iter_jsonl warns once per line it cannot read
        warnings.simplefilter("always")
        page = trajectories_page(
            iter_jsonl(source),
            title=source.name,
            max_observation_chars=args.max_observation_chars,
            max_bytes=args.max_page_mb * 1024 * 1024,
            max_episodes=args.max_episodes,
            count_skipped=lambda: len(skipped),
        )
    if skipped:
        print(f"skipped {len(skipped)} line(s) of {source} that are not whole trajectories", file=sys.stderr)
    if args.out or not args.serve:
        out = Path(args.out) if args.out else source.with_suffix(".html")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write the page to {out}: {exc.strerror}") from None
        print(f"wrote {out} ({len(page.encode('utf-8')) // 1024} KB): {out.resolve().as_uri()}")
    if args.serve:
        return _serve_until_interrupted(page, args.port)
    return 0


def export_command(args) -> int:
    from .export import ExportError, export_trajectories
    from .trajectory import iter_jsonl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # each line iter_jsonl cannot read is reported, not only the first
            rows = export_trajectories(iter_jsonl(args.file), args.out, args.format, overwrite=args.overwrite)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, TypeError) as exc:  # pyarrow's errors for a field of the wrong type derive from these
        print(
            f"progagent export: error: {args.file}: a trajectory holds a value of the wrong type "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]})",
            file=sys.stderr,
        )
        return 1
    print(f"wrote {rows} episodes to {args.out} ({args.format})")
    return 0


# --- --serve ------------------------------------------------------------------------------------------------------


class PageServer(http.server.ThreadingHTTPServer):
    """The server of one page, with the URL (token included) that shows it."""

    url: str


def page_server(page: str, port: int = 0) -> PageServer:
    """A server on 127.0.0.1 that answers GET /<token> with the page and nothing else; `server.url` is its URL.

    Guarded as every server we start: the Host header must name this loopback port (a DNS-rebinding page, whose
    requests say `Host: evil.example`, gets 421), an Origin that is present must be this server's own (403), and
    the path holds a token made for this start (404 without it). The token is in the URL, as Jupyter's is, because
    a browser's navigation cannot send a header; it guards a read-only page."""
    body, token = page.encode("utf-8"), secrets.token_urlsafe(24)

    class PageHandler(http.server.BaseHTTPRequestHandler):
        server: PageServer

        def do_GET(self) -> None:
            port = self.server.server_port
            allowed = {f"127.0.0.1:{port}", f"localhost:{port}"}
            hosts, origins = self.headers.get_all("Host") or [], self.headers.get_all("Origin") or []
            if len(hosts) != 1 or hosts[0] not in allowed:  # a header sent twice is refused too
                return self._send(421, b"this server answers only to 127.0.0.1 and localhost on its port\n")
            if len(origins) > 1 or (origins and origins[0] not in {f"http://{h}" for h in allowed}):
                return self._send(403, b"cross-site pages may not read this page\n")
            if not hmac.compare_digest(self.path.encode("utf-8", "replace"), f"/{token}".encode()):
                return self._send(404, b"not found (the page's URL holds its token)\n")
            self._send(200, body, "text/html; charset=utf-8")

        def _send(self, status: int, payload: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args) -> None:  # quiet: the terminal shows the URL, not each request
            pass

    server = PageServer(("127.0.0.1", port), PageHandler)
    server.daemon_threads = True
    server.url = f"http://127.0.0.1:{server.server_address[1]}/{token}"
    return server


def _serve_until_interrupted(page: str, port: int) -> int:
    try:
        server = page_server(page, port)
    except OSError as exc:
        print(
            f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror}; choose another --port (0: a free one)",
            file=sys.stderr,
        )
        return 2
    print(f"serving the page at {server.url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()
    return 0
