"""`zotsync snapshot`: freeze the store's library as a snapshot file (the Web API's own JSON), which
`source.type: snapshot` reads back into the same store and the same exports."""

from __future__ import annotations

from ..app import open_store
from ..config import Config
from ..sources import snapshot


def render(config: Config) -> str:
    """The snapshot text of the configured store's library (byte-stable for the same library)."""
    with open_store(config, readonly=True) as store:  # reads only: never creates or upgrades it
        library = store.full_library()
        name = store.sync_state.library_name
    return snapshot.dumps(library, name)
