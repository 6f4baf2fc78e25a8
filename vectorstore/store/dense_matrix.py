"""The exact-search matrix (:class:`DenseMatrix`): every chunk's embedding and the fields dense search
returns or filters on, in one in-memory snapshot, saved beside the index (``dense-<name>/``: ``matrix.npy``,
float32 of shape ``(chunks, dim)``, and ``chunks.json``) and checked when loaded: its shape, and a checksum
binding each row to its chunk id (:func:`checksum`), so rows put in another order are a damaged cache."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vectorstore.store.cachedir import not_a_file, replace_folder


EXACT_MAX_CHUNKS = 300_000
"""Up to this many chunks, dense search is exact brute force over an in-memory matrix (a float32
row per chunk: 300k chunks = 460 MB); above it, Chroma's HNSW index answers."""


def checksum(ids: list[str], matrix: np.ndarray) -> str:
    """BLAKE2b (128 bits) of the chunk ids in order and the matrix's float32 bytes: a row moved, an id moved, or
    a value changed gives another checksum (about 60 ms for 40,000 chunks)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(ids, ensure_ascii=False).encode())
    h.update(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())
    return h.hexdigest()


@dataclass
class DenseMatrix:
    """Every chunk's embedding and the fields dense search returns or filters on, in one snapshot."""

    stamp: str
    ids: list[str]
    paper_ids: list[str]
    texts: list[str]
    starts: np.ndarray
    ends: np.ndarray
    fields: dict[str, list]
    matrix: np.ndarray

    FIELDS = ("venue", "year", "source", "paper_id", "has_code", "categories")

    def save(self, folder: Path) -> None:
        with replace_folder(folder) as tmp:
            np.save(tmp / "matrix.npy", self.matrix)
            (tmp / "chunks.json").write_text(json.dumps(
                {"stamp": self.stamp, "checksum": checksum(self.ids, self.matrix), "ids": self.ids,
                 "paper_ids": self.paper_ids, "texts": self.texts,
                 "starts": self.starts.tolist(), "ends": self.ends.tolist(), "fields": self.fields},
                ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path) -> "DenseMatrix | None":
        """The saved matrix, or None when missing, unreadable, of the wrong shape, not matching its
        :func:`checksum` (rows reordered or edited) or holding anything but plain files
        (:func:`vectorstore.store.cachedir.not_a_file`; rebuilt by the caller)."""
        if not_a_file(folder):
            return None
        try:
            meta = json.loads((folder / "chunks.json").read_text())
            matrix = np.load(folder / "matrix.npy")
            dense = cls(meta["stamp"], meta["ids"], meta["paper_ids"], meta["texts"],
                        np.asarray(meta["starts"], dtype=np.int64), np.asarray(meta["ends"], dtype=np.int64),
                        meta["fields"], matrix)
            n = len(dense.ids)
            if not (isinstance(dense.stamp, str) and matrix.ndim == 2 and matrix.shape[0] == n
                    and len(dense.paper_ids) == len(dense.texts) == dense.starts.shape[0] == dense.ends.shape[0] == n
                    and isinstance(dense.fields, dict) and set(dense.fields) == set(cls.FIELDS)
                    and all(len(v) == n for v in dense.fields.values())
                    and meta.get("checksum") == checksum(dense.ids, matrix)):
                return None
            return dense
        except Exception:  # noqa: BLE001 - whatever a damaged file raises: rebuild
            return None

    def sound(self, dim: int, count: int) -> bool:
        """True when the matrix can be this store's: ``count`` rows (the chunk count its stamp names) of
        ``dim`` unit vectors. A cache edited or damaged in place keeps its stamp: a row zeroed hid its
        chunk from dense search, a cut width broke every question, and random bytes (NaN, 1e38) made the
        norms overflow with numpy's RuntimeWarnings printed."""
        if self.matrix.shape != (count, dim) or not count:
            return self.matrix.shape == (count, dim)
        # A unit vector's every component lies in [-1, 1]; checked first, so its norm cannot overflow.
        if self.matrix.dtype.kind != "f" or not np.isfinite(self.matrix).all() or np.abs(self.matrix).max() > 1.0 + 1e-3:
            return False
        norms = np.linalg.norm(self.matrix, axis=1)
        return bool(np.all(np.abs(norms - 1.0) < 1e-3))

    def mask(self, where: dict | None) -> np.ndarray | None:
        """Rows that pass a Chroma-style ``where`` (field equality, $eq, $in, $contains, $and, $or); None = unsupported."""
        n = len(self.ids)
        if not where:
            return np.ones(n, dtype=bool)
        if len(where) != 1:
            parts = [self.mask({k: v}) for k, v in where.items()]
            return None if any(p is None for p in parts) else np.logical_and.reduce(parts)
        (key, cond), = where.items()
        if key in ("$and", "$or"):
            parts = [self.mask(c) for c in cond]
            if any(p is None for p in parts):
                return None
            return (np.logical_and if key == "$and" else np.logical_or).reduce(parts) if parts else np.ones(n, dtype=bool)
        if key not in self.fields:
            return None
        values = self.fields[key]
        if isinstance(cond, dict):
            if set(cond) == {"$eq"}:
                cond = cond["$eq"]
            elif set(cond) == {"$in"}:
                allowed = set(cond["$in"])
                return np.fromiter((v in allowed for v in values), bool, n)
            elif set(cond) == {"$contains"}:  # a list field (categories) holding the value
                return np.fromiter((isinstance(v, list) and cond["$contains"] in v for v in values), bool, n)
            else:
                return None
        return np.fromiter((v == cond and v is not None for v in values), bool, n)
