"""MongoDB's answers in the words a user reads: the server's own message, values as relaxed Extended JSON.

`str(OperationFailure)` appends pymongo's "full error: RawBSONDocument(b'…')" (or a Python dict repr): bytes and
reprs nobody can act on. These helpers give the server's message and code instead, and write BSON values (resume
tokens, document keys, cluster times) as relaxed Extended JSON, as MongoDB's own tools write them.
"""

from __future__ import annotations

from typing import Any

from bson import json_util
from bson.json_util import RELAXED_JSON_OPTIONS
from pymongo.errors import OperationFailure, PyMongoError

from connectors.mongodb.rawjson import decoded


def as_json(value: Any) -> str:
    """A BSON value (raw or decoded) as relaxed Extended JSON, e.g. {"_data": "82…"}."""
    return json_util.dumps(decoded(value), json_options=RELAXED_JSON_OPTIONS)


def server_message(error: PyMongoError) -> str:
    """The server's message and code, e.g. 'cannot resume stream; … (ChangeStreamFatalError, code 280)'."""
    if not isinstance(error, OperationFailure):
        return str(error)
    details = decoded(error.details) if error.details is not None else {}
    message = str(details.get("errmsg") or (error.args[0] if error.args else "")).strip()
    name = details.get("codeName")
    code = f"{name}, code {error.code}" if name else f"code {error.code}"
    return f"{message} ({code})" if message else f"MongoDB failed the command ({code})"
