"""Fixtures of the rollout tests: the server tests' fixtures (real `cfgtool serve` processes), and a real Prometheus.

`prometheus` is one Prometheus process per test session (Debian's `/usr/bin/prometheus`; `.ci/run` installs it),
on a free loopback port, with its storage in a temporary directory. It scrapes, every second, a metrics endpoint
that this process serves and the tests control: `prometheus.metrics.set('app_errors_total{pod="a"}', 3)` exposes a
sample and `remove(...)` drops it. `prometheus.wait_for(query, value)` waits until an instant query answers that
value (None: no data), so a test judges only what Prometheus has scraped. Tests sharing it use sample names of
their own. Where the binary is missing the tests that need it skip and say so.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.processes import Process, child_env
from tests.serve.conftest import misbehaving, small, start_server

__all__ = ["misbehaving", "small", "start_server"]  # the server tests' fixtures, used here

PROMETHEUS = shutil.which("prometheus") or next((p for p in ("/usr/bin/prometheus",) if Path(p).exists()), None)
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason="Prometheus is not installed (apt-get install prometheus; .ci/run installs it as root)"
)
START_TIMEOUT = 60.0

_CONFIG = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: app
    static_configs:
      - targets: ["127.0.0.1:{port}"]
"""


class Metrics:
    """A Prometheus text endpoint (`/metrics`) on a free loopback port, served by a thread of this process."""

    def __init__(self) -> None:
        self._samples: dict[str, float] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = outer.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set(self, sample: str, value: float) -> None:
        """Expose `sample` (a name with optional labels, `name{label="x"}`) with `value`."""
        with self._lock:
            self._samples[sample] = value

    def remove(self, sample: str) -> None:
        with self._lock:
            self._samples.pop(sample, None)

    def exposition(self) -> str:
        with self._lock:
            lines = [f"{sample} {'NaN' if math.isnan(v) else repr(float(v))}" for sample, v in self._samples.items()]
        return "".join(f"{line}\n" for line in lines)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PrometheusServer:
    """A running Prometheus: `url`, `metrics` (what it scrapes), `query(q)` and `wait_for(q, value)`."""

    def __init__(self, process: Process, url: str, metrics: Metrics) -> None:
        self.process = process
        self.url = url
        self.metrics = metrics

    def api(self, path: str) -> dict[str, object]:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as answer:
            found: dict[str, object] = json.load(answer)
        return found

    def query(self, query: str) -> float | None:
        """The sum of an instant query's samples (a scalar's value); None when it has none."""
        data = self.api(f"/api/v1/query?query={urllib.parse.quote(query)}")["data"]
        assert isinstance(data, dict)
        if data["resultType"] == "scalar":
            return float(data["result"][1])
        return math.fsum(float(s["value"][1]) for s in data["result"]) if data["result"] else None

    def wait_for(self, query: str, value: float | None, timeout: float = 30.0) -> None:
        """Wait until `query` answers about `value` (None: no data; NaN matches NaN)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.query(query)
            if found is None or value is None:
                if found is value:
                    return
            elif math.isclose(found, value) or (math.isnan(found) and math.isnan(value)):
                return
            assert time.monotonic() < deadline, f"{query} = {found}, not {value}:\n{self.process.log()}"
            time.sleep(0.2)

    def targets_up(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            data = self.api("/api/v1/targets")["data"]
            assert isinstance(data, dict)
            active = data["activeTargets"]
            return bool(active) and all(t["health"] == "up" for t in active)
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping a metrics endpoint of this process every second, up when it is yielded."""
    if PROMETHEUS is None:
        pytest.skip("Prometheus is not installed (apt-get install prometheus; .ci/run installs it as root)")
    directory = tmp_path_factory.mktemp("prometheus")
    metrics = Metrics()
    (directory / "prometheus.yml").write_text(_CONFIG.format(port=metrics.port), encoding="utf-8")
    port = _free_port()
    command = [
        PROMETHEUS,
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    process = Process.spawn(command, directory / "prometheus.log", child_env(), cwd=directory)
    server = PrometheusServer(process, f"http://127.0.0.1:{port}", metrics)
    try:
        process.wait_until(server.targets_up, START_TIMEOUT, "Prometheus scraping its target")
        yield server
    finally:
        process.stop()
        metrics.close()
