"""The local SQLite store: the only package that speaks SQL.

A pull lands in one transaction (`landing.Landing`), so a killed process leaves the previous consistent
state and the library version advances only together with the data it describes.

- `db.Store`: the file, opened (and upgraded) or created; reads and the sync state;
- `landing`: one pull on its way in; `schema`: the migrations, as named functions;
- `codec`: items as rows and back; `state`: the sync state, typed; `identity`: whose file it is;
- `lock`: one run at a time; `failures`: SQLite's errors in a user's words;
- `lifecycle`: a store opened for one use, and removed again when the first pull that made it fails.
"""

from .codec import PAGE_FIELDS
from .db import Store
from .identity import APPLICATION_ID, identify
from .landing import ApplyResult, Landing, with_descendants
from .lifecycle import opened
from .lock import exclusive_lock
from .schema import MIGRATIONS
from .state import SyncState

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "PAGE_FIELDS",
    "ApplyResult",
    "Landing",
    "Store",
    "SyncState",
    "exclusive_lock",
    "identify",
    "opened",
    "with_descendants",
]
