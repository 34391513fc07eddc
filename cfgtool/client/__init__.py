"""Reading one pinned version of a store. One `ConfigClient` works over two backends: git (`local`) and a
`cfgtool serve` server (`http`: `HttpConfigClient`). `watch` hands over a new pinned client for each new version.

`ConfigClient(location)` picks the backend by the location. Each backend registers itself when its module is
imported, and this package imports both. So whoever imports anything of `cfgtool.client` gets every backend.
"""

from cfgtool.client.http import HttpConfigClient
from cfgtool.client.local import ConfigClient, StoreNotFound
from cfgtool.client.watch import Watcher, watch

__all__ = ["ConfigClient", "HttpConfigClient", "StoreNotFound", "Watcher", "watch"]
