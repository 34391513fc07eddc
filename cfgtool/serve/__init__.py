"""`cfgtool serve` (docs/serving.md): published versions of a repository's stores over HTTP/JSON. It has Keystone
freshness for `current` reads and a Kafka-style change feed. An optional extra: `pip install -e '.[serve]'` in a
cfgtool checkout.

- `timeline`: the pure function from (versions with dates, now, T, store, key) to the visible version and
  max-age; `feed`: the change feed and its long polls; `store`, `loaded`, `source`: versions in memory,
  prebuilt answers, the repository or its bare mirror; `app`, `routes`: the HTTP API; `tokens`, `metrics`.
- `options.Options` and `start.serve(options)` check the settings and start a server; the CLI is `cfgtool serve`.

Starting a real server in tests: `tests/serve/conftest.py` has the fixture `start_server`, which runs
`cfgtool serve --port 0 ...` as a subprocess on a free loopback port, waits until `/healthz` answers 200
and stops it (SIGTERM) when the test ends::

    def test_example(published_repo, start_server):
        server = start_server(published_repo.root, "--cache-time", "0")
        httpx.get(f"{server.url}/v1/demo/current/keys/data/tracking/PageViewEvent")

`server.url` is `http://127.0.0.1:PORT`. `start_server(repo, *args, ready=False)` returns as soon as the port
answers, for tests of the not-ready state. `server.stop()` stops it early. `server.log()` is its stderr.
"""
