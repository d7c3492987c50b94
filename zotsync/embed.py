"""Text as vectors of meaning, with a static model that an installed package carries: WordLlama's 256-d
`l2_supercat` embedding (MIT licence, 16 MB of float16 weights and its tokenizer, inside the `wordllama`
wheel). A text's vector is the mean of its tokens' vectors, normalised: a table lookup, no network, no GPU.

The `wordllama` package itself is never imported (it would pull in more than this needs): its two files
are found through the import system and read with numpy and `tokenizers` (the optional `semantic` extra).
numpy and `tokenizers` are imported on the first call, never by `import zotsync`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MODEL = "WordLlama l2_supercat 256-d"
PACKAGE = "wordllama"
WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
DIMENSIONS = 256
MAX_CHARS = 4000  # of a paper's text: its start says what it is about; a 1 MB abstract costs no more
_BATCH = 256  # texts per tokenizer call


class ModelMissing(Exception):
    """The model's package (or numpy, or tokenizers) is not installed."""


HOW_TO_INSTALL = "pip install '.[semantic]' in zotsync's folder"


def installed() -> None:
    """Raises ModelMissing unless the model's package and numpy are installed (without reading them)."""
    _folder()
    if importlib.util.find_spec("numpy") is None:
        raise ModelMissing(f"search by meaning needs numpy: {HOW_TO_INSTALL}")


def _folder() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # finds the package's folder without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"search by meaning needs the {PACKAGE} package: {HOW_TO_INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _table() -> Any:
    """The token vectors (vocabulary × 256, float16), mapped from the file once per process: a query
    touches only its tokens' rows of the 16 MB."""
    folder = _folder()
    try:
        import numpy as np
    except ImportError as exc:
        raise ModelMissing(f"search by meaning needs {exc.name}: {HOW_TO_INSTALL}") from None
    path = folder / WEIGHTS
    with path.open("rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(size))
    tensor = header["embedding.weight"]
    start, _ = tensor["data_offsets"]
    return np.memmap(path, dtype="<f2", mode="r", offset=8 + size + start, shape=tuple(tensor["shape"]))


@functools.cache
def _tokenizer() -> Any:
    """The model's tokenizer, read once per process (about 0.1 s: a 1.8 MB JSON file)."""
    folder = _folder()
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelMissing(f"search by meaning needs {exc.name}: {HOW_TO_INSTALL}") from None
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@functools.cache
def _tokens() -> Any:
    """The tokenizer's compact form for one short text (zotsync/tokens.py); None when unavailable."""
    from .tokens import Tokens

    return Tokens.open(_folder() / TOKENIZER)


@functools.cache
def _floats() -> Any:
    """The token vectors as float32 (32 MB), for embedding many texts: each token's row is converted
    once, not once per occurrence."""
    import numpy as np

    return np.asarray(_table(), dtype=np.float32)


def available() -> bool:
    try:
        _table()
        if _tokens() is None:
            _tokenizer()
    except (ModelMissing, OSError, ValueError, KeyError):
        return False
    return True


def model_digest() -> str:
    """Names the model and how a text becomes a vector: stored vectors made otherwise are made anew."""
    return hashlib.sha256(f"{MODEL}|mean|{MAX_CHARS}|v2".encode()).hexdigest()[:16]


def embed(texts: Sequence[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
    """One unit vector (float32, 256) per text; an empty text's is zeros. The same text always gives the
    same vector."""
    import numpy as np

    table, tokenizer = _floats(), _tokenizer()
    last = table.shape[0] - 1
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for first in range(0, len(texts), _BATCH):
        chunk = [text[:MAX_CHARS] for text in texts[first : first + _BATCH]]
        for i, encoding in enumerate(tokenizer.encode_batch(chunk, add_special_tokens=False), first):
            if encoding.ids:
                # a text at a time: 25 times faster than one `reduceat` over the batch's tokens, and a
                # text's vector then never depends on the texts beside it
                ids = np.clip(np.asarray(encoding.ids, dtype=np.intp), 0, last)
                out[i] = table[ids].sum(axis=0) / len(ids)
        if progress is not None:
            progress(len(chunk))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def embed_one(text: str) -> np.ndarray:
    """`embed([text])[0]`, for a short text (a query): its tokens come from the tokenizer's compact
    form, so the tokenizer itself is never loaded."""
    import numpy as np

    text = text[:MAX_CHARS]
    tokens = _tokens()
    ids = tokens.tokenize(text) if tokens is not None else None
    if ids is None:
        return embed([text])[0]
    table = _table()
    if not ids:
        return np.zeros(table.shape[1], dtype=np.float32)
    found = np.clip(np.asarray(ids, dtype=np.intp), 0, table.shape[0] - 1)
    vector = table[found].astype(np.float32).sum(axis=0) / len(ids)  # as `embed` sums
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
