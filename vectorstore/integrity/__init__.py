"""Cheap looks at a local index's own files, made when the index is opened or its lock taken: Chroma's SQLite
database, its age against the vector files and the writer's lock file (``database``), and the HNSW files of its
vector segments (``vectors``).

Each finds damage that Chroma reports late, as a raw SQLite error, or not at all (a search that fails or silently
misses papers, a crash on the lock), and says what it found naming the file (None: nothing); the caller raises a
line ending with the remedy as ``StoreError`` (exit 2).

Imports: nothing of the package (``store`` and ``index`` both call in)."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "database": ("SQLITE_CORRUPT", "database_damaged", "database_problem", "lock_file_problem", "older_database", "rebuild", "record_generation", "repair"),
    "vectors": ("foreign_folders", "hnsw_problem", "own_folders_missing", "vector_files_problem"),
})
