"""Fixtures of the console tests: the server's application (JSON API and console) over a real repository, driven
through Starlette's test client, and an HTML parser that checks what a page holds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from cfgtool.console import console_parts
from cfgtool.serve.app import Api
from cfgtool.serve.routes import starlette_app
from cfgtool.serve.service import Options, Service
from cfgtool.serve.tokens import add_token
from tests.conftest import GitRepo
from tests.serve.conftest import publish_change, published, shared_small, small, start_server

__all__ = ["published", "shared_small", "small", "start_server"]  # the server tests' fixtures, used here too

STORE = {
    "store/_CONFIG_STORE": "name: small\n",
    "store/main.conf": "owner = platform\nretention.days = 7\n",
    "store/data/main.conf": "tier = gold\n",
    "store/data/open/main.conf": 'size = 1\nlabel = "open-data"\n',
    "store/data/open/includes": "/tags/t\n",
    "store/data/secret-project/main.conf": 'size = 2\nlabel = "classified-label"\n',
    "store/data/secret-project/includes": "/tags/t\n",
    "store/tags/t/main.conf": "tagged = true\n",
    "store/_ACL.yaml": (
        "super_users: [User:admin]\n"
        "acls:\n"
        "  - {principal: User:alice, operation: read, key: /, pattern: prefixed, permission: allow}\n"
        "  - {principal: User:alice, operation: all, key: /data/secret-project, pattern: prefixed, permission: deny}\n"
    ),
}


@pytest.fixture
def small_acl(tmp_path: Path) -> GitRepo:
    """A store with an ACL: alice may read everything but /data/secret-project (not even describe it)."""
    repo = GitRepo(tmp_path / "small")
    publish_change(repo, dict(STORE), "v1")
    return repo


MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    """`make_client(repo, tokens=None)`: a test client of the server's whole application over `repo` (its versions
    loaded as the server's loader loads them)."""
    services: list[Service] = []

    def make(repo: GitRepo, tokens: Path | None = None) -> TestClient:
        options = Options(location=str(repo.root), cache=tmp_path / "cache", cache_time=0, tokens=tokens)
        service = Service(options)
        service.refresh()
        services.append(service)
        return TestClient(
            Api(service, starlette_app, console_parts()), base_url="http://127.0.0.1:8750", follow_redirects=False
        )

    yield make
    for service in services:
        service.close()


@pytest.fixture
def token_of(tmp_path: Path) -> Callable[[str], str]:
    """`token_of("User:alice")`: a new token of that principal in `tmp_path / "tokens.json"`."""

    def make(principal: str) -> str:
        return add_token(tmp_path / "tokens.json", principal)[1]

    return make


def sign_in(client: TestClient, token: str) -> None:
    """Sign `client` in with `token` (the console's sign-in form)."""
    found = client.post("/ui/login", data={"token": token, "next": "/ui/"})
    assert found.status_code == 303, found.text


SignedIn = Callable[[GitRepo, str], TestClient]


@pytest.fixture
def signed_in(make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path) -> SignedIn:
    """`signed_in(repo, "User:alice")`: a test client over `repo` with access control on, signed in as that
    principal with a new token."""

    def make(repo: GitRepo, principal: str) -> TestClient:
        token = token_of(principal)
        client = make_client(repo, tmp_path / "tokens.json")
        sign_in(client, token)
        return client

    return make


class Page(HTMLParser):
    """A parsed page: its elements as (tag, attributes) in order, its text, and its links."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.texts).split())

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.elements if name == tag]

    @property
    def links(self) -> list[str]:
        found = [a.get("href") for a in self.all("a")] + [a.get("hx-get") for _, a in self.elements]
        return [str(x) for x in found if x]


def settled(
    client: TestClient,
    url: str,
    headers: dict[str, str] | None = None,
    timeout: float = 120,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    """`url`'s answer once it is no longer a "being computed" page (202: a diff computed in a worker process, or a
    search while its version is indexed in one)."""
    deadline = time.monotonic() + timeout
    found = client.get(url, headers=headers, params=params)
    while found.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.2)
        found = client.get(url, headers=headers, params=params)
    return found
