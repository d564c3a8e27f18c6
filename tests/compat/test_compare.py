"""bench.compat's comparison: records written back byte for byte, masks, pairing and categories."""

from __future__ import annotations

from bench.compat.compare import Mask, compare_topic, mask_members, parse, write
from bench.compat.dump import Record

TS = Mask("payload.ts_ms", lambda payload: mask_members(payload, ("ts_ms",)))


def test_a_parsed_record_is_written_back_byte_for_byte():
    data = b'{"a":"\\u00e9\\"x","b":[1.50,-0,1E+3,null,true],"c":{"d":{}},"e":[]}'
    assert write(parse(data)) == data


def test_masks_pairing_and_categories():
    theirs = [Record(b'{"id":1}', b'{"after":{"id":1,"v":"x"},"op":"c","ts_ms":1}'),
              Record(b'{"id":2}', b'{"after":{"id":2,"v":"y"},"op":"c","ts_ms":1}'),
              Record(b'{"id":3}', b'{"after":{"id":3},"op":"c","ts_ms":1}'),
              Record(b'{"id":4}', None)]
    ours = [Record(b'{"id":2}', b'{"after":{"id":2,"v":"y"},"op":"c","ts_ms":2}'),  # another order, another time
            Record(b'{"id":1}', b'{"after":{"id":1,"v":"X"},"ts_ms":1,"op":"c"}'),
            Record(b'{"id":3}', b'{"after":{"id":3},"op":"c","ts_ms":1}'),
            Record(b'{"id":5}', None)]
    report = compare_topic("t", theirs, ours, [TS])
    assert (report.identical, report.identical_unmasked) == (2, 1)
    assert sorted(report.differing) == ["value.after.v", "value: member order"]
    assert report.differing["value.after.v"].example[1:] == (theirs[0].value, ours[1].value)
    assert len(report.only_theirs) == len(report.only_ours) == 1
    assert not report.clean


def test_a_null_is_not_masked_away():
    theirs = [Record(None, b'{"op":"c","ts_ms":null}')]
    ours = [Record(None, b'{"op":"c","ts_ms":5}')]
    assert list(compare_topic("t", theirs, ours, [TS]).differing) == ["value.ts_ms"]
