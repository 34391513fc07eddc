"""Reading one pinned version of a store. `ConfigClient` holds a backend chosen by the location: git (`local`) or a
`cfgtool serve` server (`http`); `HttpConfigClient` is the client of a server. `watch` hands over a new pinned client
for each new version.
"""

from cfgtool.client.client import ConfigClient, HttpConfigClient
from cfgtool.client.local import StoreNotFound
from cfgtool.client.watch import Watcher, watch

__all__ = ["ConfigClient", "HttpConfigClient", "StoreNotFound", "Watcher", "watch"]
