"""load → chunk → embed → store, idempotent and resumable: a run over paper files (``run``), one batch of it
(``batch``), what a run refuses unless told (``guards``), the removal of a file's papers (``removal``), and
the rebuild of an index whose vector files are damaged from the papers its database stores (``repair``).

Imports: everything before it and :mod:`vectorstore.index`."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "run": ("IngestReport", "content_hash", "ingest"),
    "removal": ("remove_sources",),
    "repair": ("RebuildReport", "rebuild_vectors", "stored_model"),
})
