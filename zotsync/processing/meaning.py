"""Vectors of meaning (`search.semantic`): each paper's title, curated why, tags, abstract and the start
of its notes, embedded with the static model that an installed package carries (zotsync/embed.py).

Only a paper whose text changed is embedded again: each stored vector keeps a digest of the model and of
the text it was made from. A run with nothing due costs nothing: it notes the store's content generation
and the catalogue's digest (`Job.remember`) and returns at once while both stay. Its results, per curated
paper, are the curated papers nearest in meaning, which note pages show as "Related in this list".
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Config
    from ..model import Library
    from ..store import Store
    from ..store.searchindex import ZoteroText
    from . import Derived, Job, Report

NAME = "meaning"
RELATED_ON_PAGE = 5  # curated papers a note page lists as related
NOTES_CHARS = 1000  # of a paper's notes: their start says what they are about
_CHUNK = 2048  # papers embedded, then saved, at a time: an interrupted first run keeps what it made


def paper_text(text: ZoteroText, whys: tuple[str, ...] = ()) -> str:
    """What a paper's vector is made from."""
    pieces = [text.title, *whys, text.tags, text.abstract, text.notes[:NOTES_CHARS]]
    return "\n".join(piece for piece in pieces if piece)


def text_digest(text: str) -> str:
    from ..embed import model_digest

    return hashlib.sha256(f"{model_digest()}\n{text}".encode()).hexdigest()[:32]


class Meaning:
    name = NAME

    def enabled(self, config: Config) -> bool:
        return config.search.semantic

    def run(self, job: Job) -> Report:
        from . import Report

        try:
            return update(job)
        except Exception as exc:  # the model's package missing or damaged: the sync goes on without it
            from ..embed import ModelMissing

            if not isinstance(exc, ModelMissing | OSError | ValueError | KeyError):
                raise
            # ModelMissing says "search by meaning needs …" itself
            said = str(exc) if isinstance(exc, ModelMissing) else f"search by meaning: {exc}"
            return Report(NAME, {"embedded": 0}, [said])

    def attach(self, library: Library, results: Mapping[str, Derived]) -> Library:
        related = {key: r.value for key, r in results.items() if isinstance(r.value, list)}
        return replace(library, derived={**library.derived, NAME: related})


PROCESSOR = Meaning()


def _catalogue(job: Job) -> Any:
    """The catalogue's file, read once; None when it cannot be (the sync says why)."""
    from ..catalogue import CatalogueFile
    from ..errors import ZotsyncError

    try:
        return CatalogueFile.read(job.config.catalog, job.config.path)
    except ZotsyncError:
        return None


def _curated(job: Job, catalogue_file: Any) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """Each curated item's whys, by its key; and the page's papers, in page order (what a note page's
    "Related in this list" lists: the curated papers, and those of collections the page shows)."""
    from ..errors import ZotsyncError
    from ..reconcile import match

    library = job.store.load_page(creators=True, attachments=False)
    try:
        catalogue = catalogue_file.load()
    except ZotsyncError:  # the sync says what is wrong with it; the vectors are made without the whys
        return {}, []
    matches = match(catalogue.entries, library.items, library.facts)
    whys: dict[str, list[str]] = {}
    for entry in catalogue.entries:
        item = matches.item_for(entry)
        if item is not None:
            whys.setdefault(item.key, [])
            if entry.why and entry.why not in whys[item.key]:
                whys[item.key].append(entry.why)
    page = list(job.audience(library).first) if job.audience is not None else list(whys)
    return {key: tuple(each) for key, each in whys.items()}, page


def update(job: Job) -> Report:
    from ..embed import model_digest
    from . import Report

    store = job.store
    catalogue_file = _catalogue(job)
    mark = {
        "generation": store.generation,
        "catalogue": catalogue_file.digest if catalogue_file is not None else None,
        "page": job.audience.digest if job.audience is not None else None,
        "model": model_digest(),
    }
    if job.mark() == mark and not job.refresh:
        return Report(NAME, {"embedded": 0})
    whys, page = _curated(job, catalogue_file) if catalogue_file is not None else ({}, [])
    made, removed, left = embed_due(store, whys, job.deadline, job.dry_run, job.progress)
    report = Report(NAME, {"embedded": made, "removed": removed, "waiting": left})
    if not job.dry_run and (made or removed or store.vectors_made() is None):
        store.pack_vectors(Vectors.from_rows(*store.vectors()).packed())
    if left:
        report.warnings.append(f"search by meaning: {left} papers wait for the next sync (deadline reached)")
        return report
    if not job.dry_run:
        noted = store.papers_with_notes()
        pages = [key for key in page if key in noted]  # the papers that have a note page
        results = related_results(store, pages, list(whys))
        job.save(results, forget=set(job.results()) - {r.key for r in results})
        job.remember({**mark, "generation": store.generation})  # saving changed results bumps it
    return report


def embed_due(
    store: Store,
    whys: Mapping[str, tuple[str, ...]],
    deadline: float = float("inf"),
    dry_run: bool = False,
    shown: bool = False,
) -> tuple[int, int, int]:
    """Embed the papers whose text changed and drop the vectors of papers gone: (made, removed, left)."""
    from ..embed import embed
    from ..net import progress

    start = time.monotonic()
    stored = store.vectors_made_from()
    due: list[tuple[str, str, str]] = []  # key, digest, text
    keys = set()
    for key, zotero in store.paper_texts():
        keys.add(key)
        text = paper_text(zotero, whys.get(key, ()))
        digest = text_digest(text)
        if stored.get(key) != digest:
            due.append((key, digest, text))
    gone = set(stored) - keys
    if dry_run:
        return len(due), len(gone), 0
    made = 0
    with progress(len(due), "embedding papers", shown=shown, least=2000) as step:
        for first in range(0, len(due), _CHUNK):
            if time.monotonic() - start > deadline:
                break
            chunk = due[first : first + _CHUNK]
            blobs = encode(embed([text for _, _, text in chunk]))
            store.save_vectors(
                ((key, digest, blobs[i]) for i, (key, digest, _) in enumerate(chunk)),
                gone if first == 0 else (),
            )
            made += len(chunk)
            step(len(chunk))
    if not due:
        store.save_vectors((), gone)
    return made, len(gone), len(due) - made


def related_results(store: Store, papers: list[str], curated: list[str]) -> list[Any]:
    """For each of `papers` (those with a note page), the curated papers nearest in meaning
    (`RELATED_ON_PAGE`), as results."""
    from datetime import UTC, datetime

    from . import Derived

    vectors = Vectors.of(store)
    candidates = [key for key in dict.fromkeys(curated) if key in vectors.row]
    asked = [key for key in dict.fromkeys(papers) if key in vectors.row]
    if not candidates or not asked:
        return []
    now = datetime.now(UTC).isoformat(timespec="seconds")
    results = []
    for key, near in zip(asked, vectors.among(asked, candidates, RELATED_ON_PAGE), strict=True):
        if near:
            inputs = hashlib.sha256("\n".join([key, *near]).encode()).hexdigest()[:16]
            results.append(Derived(key, inputs, near, now))
    return results


_ASKED = 512  # papers ranked at a time (a chunk of 512 × 5,000 candidates is 10 MB)
EXPAND = 1  # nearest papers whose vectors join a paper's own when its related papers are sought


_ROW = 4 + 256  # bytes of a stored vector: a float32 scale, then 256 int8
_BLOCK = 1024  # stored rows made float32 at a time for a product: 1 MB, in the cache


def encode(vectors: Any) -> list[bytes]:
    """Each unit vector as int8 with its own scale (260 bytes; cosines within about 0.002 of float32)."""
    import numpy as np

    scales = np.abs(vectors).max(axis=1) / 127
    scales[scales == 0] = 1
    quantised = np.rint(vectors / scales[:, None]).astype(np.int8)
    packed = np.empty(len(vectors), dtype=_dtype())
    packed["scale"], packed["vector"] = scales, quantised
    return [row.tobytes() for row in packed]


def _dtype() -> Any:
    import numpy as np

    from ..embed import DIMENSIONS

    return np.dtype([("scale", "<f4"), ("vector", "i1", (DIMENSIONS,))])


class Vectors:
    """The stored vectors as one float32 matrix (one row per paper) and each paper's row.

    "Related" compares vectors centred on the library's mean (what every paper shares says nothing about
    any one), and expands each paper with its EXPAND nearest before ranking: a static model's vector of
    one short text is noisy, and its nearest paper averages the noise out. On the bench's two sets
    (docs/meaning.md) the nearest one alone did better than two, three or four: 0.83 same-topic on the
    written set against 0.80 with two, 0.72 plain; 0.54 on the seed page against 0.52 and 0.53.
    """

    def __init__(
        self, keys: list[str], matrix: Any = None, centre: tuple[Any, Any] | None = None, stored: Any = None
    ) -> None:
        self.keys = keys
        # float32, made from `stored` (the int8 rows and their scales) on first use: numpy multiplies
        # float16 or int8 without BLAS, several times slower
        self._matrix = matrix
        self._stored = stored
        self._row: dict[str, int] | None = None
        self._centre = centre

    @property
    def matrix(self) -> Any:
        if self._matrix is None:
            import numpy as np

            self._matrix = self._stored["vector"].astype(np.float32)
            self._matrix *= self._stored["scale"][:, None]
        return self._matrix

    def vector(self, i: int) -> Any:
        """Row `i` as float32."""
        import numpy as np

        if self._matrix is not None:
            return self._matrix[i]
        return self._stored["vector"][i].astype(np.float32) * self._stored["scale"][i]

    def products(self, query: Any) -> Any:
        """Every row's dot product with `query`. From the stored int8 rows a block at a time, when the
        float32 matrix is not made: a search or `related` then never makes its 100 MB (at 100,000
        papers), and each block's product stays below the size at which BLAS starts threads, which
        cost more than they save on a busy machine."""
        import numpy as np

        query = np.asarray(query, dtype=np.float32)
        if self._matrix is not None:
            return self._matrix @ query
        ints, scales = self._stored["vector"], self._stored["scale"]
        out = np.empty(len(ints), dtype=np.float32)
        block = np.empty((min(_BLOCK, len(ints)), ints.shape[1]), dtype=np.float32)
        for first in range(0, len(ints), _BLOCK):
            part = ints[first : first + _BLOCK]
            floats = block[: len(part)]
            np.copyto(floats, part, casting="unsafe")
            np.matmul(floats, query, out=out[first : first + len(part)])
        out *= scales
        return out

    @property
    def row(self) -> dict[str, int]:
        """Each paper's row (made on first use: a command that asks about one paper needs none)."""
        if self._row is None:
            self._row = {key: i for i, key in enumerate(self.keys)}
        return self._row

    def index(self, key: str) -> int | None:
        if self._row is None:
            try:
                return self.keys.index(key)
            except ValueError:
                return None
        return self._row.get(key)

    @classmethod
    def from_rows(cls, keys: list[str], blob: bytes) -> Vectors:
        import numpy as np

        return cls(keys, stored=np.frombuffer(blob, dtype=_dtype()))

    def packed(self) -> Any:
        """What the store keeps of them in one row (`store.vectors.Packed`)."""

        from ..store.vectors import Packed

        if not self.keys:
            return Packed("empty", [], b"", b"", b"")
        mean, lengths = self._centred()
        made = secrets.token_hex(8)  # a new packing, whatever it holds: a reader's cache reads it anew
        matrix = b"".join(encode(self.matrix))
        return Packed(made, self.keys, matrix, mean.astype("<f4").tobytes(), lengths.astype("<f4").tobytes())

    def _centred(self) -> tuple[Any, Any]:
        """The mean vector, and each row's length once centred on it (rows are unit or zero vectors:
        |v - m|² = |v|² - 2 v·m + |m|², one product with the matrix)."""
        if self._centre is None:
            import numpy as np

            matrix = self.matrix
            mean = matrix.mean(axis=0)
            squares = np.einsum("ij,ij->i", matrix, matrix)
            lengths = np.sqrt(np.maximum(squares - 2 * (matrix @ mean) + mean @ mean, 1e-12))
            self._centre = (mean, lengths)
        return self._centre

    def scores(self, query: Any) -> Any:
        """The cosine of every row with `query`, both centred on the mean."""
        import numpy as np

        mean, lengths = self._centred()
        centred = query.astype(np.float32) - mean
        norm = float(np.linalg.norm(centred)) or 1.0
        return (self.products(centred) - float(mean @ centred)) / (lengths * norm)

    def related(self, key: str, limit: int) -> list[tuple[str, float]]:
        """The papers nearest to `key`, best first, never `key`: (key, score)."""
        import numpy as np

        mean, lengths = self._centred()
        i = self.index(key)
        if i is None:
            return []
        mine = self.vector(i)
        first = self.scores(mine)
        first[i] = -np.inf
        near = best(first, EXPAND)
        own = (mine - mean) / lengths[i]
        others = (np.array([self.vector(j) for j in near]) - mean) / lengths[near, None]
        scores = self.scores(mean + own + others.mean(axis=0) if len(near) else mine)
        scores[i] = -np.inf
        return [(self.keys[j], float(scores[j])) for j in best(scores, limit)]

    def among(self, asked: list[str], candidates: list[str], limit: int) -> list[list[str]]:
        """For each of `asked`, the nearest `limit` of `candidates` (never itself), ranked as `related`
        ranks the library; in chunks, so that memory stays small whatever the counts."""
        import numpy as np

        mean, lengths = self._centred()
        rows = np.array([self.row[key] for key in candidates])
        pool = (self.matrix[rows] - mean) / lengths[rows, None]
        position = {key: i for i, key in enumerate(candidates)}
        found: list[list[str]] = []
        for first in range(0, len(asked), _ASKED):
            keys = asked[first : first + _ASKED]
            own = np.array([self.row[key] for key in keys])
            query = (self.matrix[own] - mean) / lengths[own, None]
            selves = [(i, position[key]) for i, key in enumerate(keys) if key in position]
            scores = query @ pool.T
            for i, j in selves:
                scores[i, j] = -np.inf
            expand = min(EXPAND, len(candidates) - 1) if selves else min(EXPAND, len(candidates))
            if expand > 0:
                near = np.array([best(row, expand) for row in scores])
                if near.size:
                    query = query + pool[near].mean(axis=1)
                    scores = query @ pool.T
                    for i, j in selves:
                        scores[i, j] = -np.inf
            found += [[candidates[j] for j in best(row, limit)] for row in scores]
        return found

    @classmethod
    def of(cls, store: Store) -> Vectors:
        """The vectors as the store packed them (one query); from their rows when not packed yet."""
        import numpy as np

        packed = store.packed_vectors()
        if packed is None:
            return cls.from_rows(*store.vectors())
        vectors = cls.from_rows(packed.papers, packed.matrix)
        mean = np.frombuffer(packed.mean, dtype="<f4")
        lengths = np.frombuffer(packed.lengths, dtype="<f4")
        if len(mean) == _dtype()["vector"].shape[0] and len(lengths) == len(vectors.keys):
            vectors._centre = (mean, lengths)
        return vectors


def best(scores: Any, count: int) -> Any:
    """The rows of the `count` highest finite scores, best first; a tie in row order (keys' order), so
    the same vectors always give the same ranking."""
    import numpy as np

    count = min(count, int(np.isfinite(scores).sum()))
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-scores, count - 1)[:count]
    return top[np.lexsort((top, -scores[top]))]
