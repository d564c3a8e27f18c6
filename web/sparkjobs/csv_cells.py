"""Cells of CSV downloads made safe for spreadsheets (OWASP "CSV Injection"): a text cell starting with `=`, `+`,
`-`, `@`, a tab or a carriage return is read by Excel, LibreOffice and Google Sheets as a formula, which can run
commands or send the sheet's data away. Such cells are prefixed with a single quote, which spreadsheets show as
text; numbers stay numbers. Nested values are written as JSON text."""

from __future__ import annotations

import json

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
