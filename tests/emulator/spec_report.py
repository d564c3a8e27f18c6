"""Print the spec tests the emulator skips, with reasons, as Markdown (kept in docs/emulator.md).

    python -m tests.emulator.spec_report
"""

from __future__ import annotations

from collections import defaultdict

from tests.emulator.spec_skips import skip_reason
from tests.emulator.unified import SUPPORTED_SCHEMA, _version, load_area, requirement_reason

AREAS = ("change-streams", "crud", "transactions")


def skipped() -> dict:
    by_reason: dict = defaultdict(list)
    for area in AREAS:
        for stem, doc, test in load_area(area):
            schema = _version(doc.get("schemaVersion", "1.0"))
            reason = None
            if schema[0] != SUPPORTED_SCHEMA[0] or schema[1] > SUPPORTED_SCHEMA[1]:
                reason = f"schemaVersion {doc.get('schemaVersion')} not supported by the runner"
            reason = reason or requirement_reason(doc.get("runOnRequirements")) or \
                requirement_reason(test.get("runOnRequirements"))
            if not reason and "skipReason" in test:
                reason = "spec: " + test["skipReason"]
            if not reason:
                own = skip_reason(stem, test["description"])
                reason = f"emulator: {own}" if own else None
            if reason:
                by_reason[reason].append(f"{area}/{stem}: {test['description']}")
    return by_reason


def main():
    groups = skipped()
    total = sum(len(v) for v in groups.values())
    print(f"{total} spec tests are skipped:\n")
    for reason in sorted(groups, key=lambda r: (-len(groups[r]), r)):
        tests = groups[reason]
        print(f"**{reason}** ({len(tests)})\n")
        for t in sorted(tests):
            print(f"- {t}")
        print()


if __name__ == "__main__":
    main()
