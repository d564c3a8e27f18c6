"""The iteration order of a java.util.HashMap<String, …>, which Debezium's transaction metadata lists
`data_collections` in (its TransactionContext counts events per data collection in one).

A HashMap iterates its buckets in index order and each bucket in insertion order; a key's bucket is its
String.hashCode (over UTF-16 code units, 32-bit), spread (h ^ h >>> 16), masked by the table's capacity: 16, doubled
whenever the entries outgrow three quarters of it. `clear()` keeps the capacity, so a map reused across transactions
keeps the largest it reached.
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75


def string_hash(text: str) -> int:
    """java.lang.String.hashCode() as an unsigned 32-bit value."""
    value = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        value = (31 * value + (data[index] << 8 | data[index + 1])) & 0xFFFFFFFF
    return value


def capacity_for(size: int, capacity: int = DEFAULT_CAPACITY) -> int:
    """The table's capacity once `size` entries are in a map whose table had `capacity`."""
    while size > capacity * LOAD_FACTOR:
        capacity *= 2
    return capacity


def bucket(key: str, capacity: int) -> int:
    hashed = string_hash(key)
    return (hashed ^ (hashed >> 16)) & (capacity - 1)


def iteration_order(keys: Iterable[str], capacity: int = DEFAULT_CAPACITY) -> list[str]:
    """`keys` (in insertion order, distinct) as a HashMap with a table of at least `capacity` iterates them."""
    keys = list(keys)
    size = capacity_for(len(keys), capacity)
    return sorted(keys, key=lambda key: bucket(key, size))  # stable: insertion order within a bucket
