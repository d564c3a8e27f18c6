"""The two ways a document becomes strict Extended JSON, for tests that must hold for both: the Python writer on the
decoded document (`extjson.document_json`), and the compiled writer on its raw BSON (`rawjson.document_json`).

The compiled one needs connectors/mongodb/_rawjson (scripts/install.sh builds it): without it a test skips, except in
CI (CI=true), where it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import bson
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions

from connectors.mongodb import extjson, rawjson
from tests.compiled_modules import require_built

PATHS = ["python", "compiled"]
# Native uuid.UUID values are stored as subtype 4, which the sources decode as Binary (written the same).
ENCODE_OPTIONS = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)


def require_compiled() -> None:
    require_built(rawjson.compiled, "connectors/mongodb/_rawjson")


def compiled_document_json(data: bytes, *, bare_non_finite: bool = True) -> str | None:
    """The compiled writer's own text, None where it hands the document to Python."""
    require_compiled()
    return rawjson.compiled.document_json(data, bare_non_finite)


def document_writer(path: str) -> Callable[..., str]:
    """``document_json(document, bare_non_finite=…)`` by ``path`` (one of PATHS)."""
    if path == "python":
        return extjson.document_json
    require_compiled()

    def from_raw(document: Mapping[str, Any], *, bare_non_finite: bool = True) -> str:
        return rawjson.document_json(
            bson.encode(document, codec_options=ENCODE_OPTIONS), bare_non_finite=bare_non_finite
        )

    return from_raw
