"""The run store: every SQL statement (``sqlite``), the column cache kept beside a store between
commands (``column_cache``) and exports to Parquet, CSV and JSONL (``export``).

The public names of the store are importable from here.
"""

from .sqlite import (
    CATEGORICAL_COLUMNS,
    INDEXES,
    JUDGMENT_COLUMN_NAMES,
    JUDGMENT_COLUMNS,
    PARSE_STATUSES,
    READ_DEFAULTS,
    SCHEMA_VERSION,
    STORE_FILENAME,
    CompactColumns,
    RunStore,
    StoreError,
    figure_detail_kept,
    open_store,
    with_read_defaults,
)

__all__ = [
    "CATEGORICAL_COLUMNS",
    "CompactColumns",
    "INDEXES",
    "JUDGMENT_COLUMNS",
    "JUDGMENT_COLUMN_NAMES",
    "PARSE_STATUSES",
    "READ_DEFAULTS",
    "RunStore",
    "SCHEMA_VERSION",
    "STORE_FILENAME",
    "StoreError",
    "figure_detail_kept",
    "open_store",
    "with_read_defaults",
]
