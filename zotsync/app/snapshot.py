"""`zotsync snapshot`: freeze the store's library as a snapshot file (the Web API's own JSON), which
`source.type: snapshot` reads back into the same store and the same exports."""

from __future__ import annotations

from ..config import Config
from ..errors import StoreError
from ..model import NOT_A_KEY, ZOTERO_KEY
from ..sources import snapshot
from .stores import open_store


def render(config: Config) -> str:
    """The snapshot text of the configured store's library (byte-stable for the same library)."""
    with open_store(config, readonly=True) as store:  # reads only: never creates or upgrades it
        library = store.full_library()
        name = store.sync_state.library_name
    # A store an older zotsync filled may hold keys its sources no longer take in: a file made of them
    # would be refused when read back, so none is written.
    keys = [("collection", c.key) for c in library.collections] + [("item", i.key) for i in library.items]
    odd = next(((kind, key) for kind, key in keys if not ZOTERO_KEY.match(key)), None)
    if odd is not None:
        kind, key = odd
        raise StoreError(
            f"the store holds the {kind} key {key!r}, which is {NOT_A_KEY}: a snapshot of it could not "
            "be read back; pull the library again into a new store"
        )
    return snapshot.dumps(library, name)
