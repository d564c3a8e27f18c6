"""The compiled helpers of the PostgreSQL path (csrc/pgrows.c, built by scripts/build_extensions.py), or None when
the module is not built (or built from older sources): pgoutput.py and rows.py then use their Python twins, which
give the same values and text (tests/postgres/test_pgrows.py)."""

from __future__ import annotations

import dataclasses

try:
    from connectors.postgres import _pgrows as compiled
except ImportError:
    compiled = None
if compiled is not None and not all(hasattr(compiled, name)
                                   for name in ("configure", "tuple_data", "row_change", "write_row", "write_event",
                                                "write_text", "write_run", "write_rows", "slots_maker",
                                                "wal_row_change")):
    compiled = None

# write_row's column kinds: what it writes itself from a column's text (anything else, and any text it does not
# take, goes to the column's writer); FIXED_SCALE's argument is the scale, UTC_TIMESTAMP's the fraction's width
CALL, INTEGER, STRING, BOOLEAN, FIXED_SCALE, UTC_TIMESTAMP, FLOAT64, EPOCH_DAYS = 0, 1, 2, 3, 4, 5, 6, 7


def slots_maker(cls: type):
    """What makes `cls` (a slotted dataclass without __post_init__) from all its fields' values in order, as
    `cls(*values)` does, without running the generated __init__ (0.2 µs for five fields, the maker about 0.05);
    `cls` itself without the compiled module."""
    if compiled is None:
        return cls
    return compiled.slots_maker(cls, tuple(field.name for field in dataclasses.fields(cls)))
