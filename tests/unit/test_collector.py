"""The garbage collector's policy while pipelines stream and snapshots run (connectors/core/collector.py)."""

import gc

import pytest

from connectors.core.collector import BATCH_THRESHOLDS, batch_collection


@pytest.fixture
def default_policy():
    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_objects_frozen_and_thresholds_raised_while_a_snapshot_runs(default_policy):
    kept = [object()]
    with batch_collection():
        assert gc.get_threshold() == BATCH_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    assert kept


def test_the_last_of_overlapping_snapshots_restores_the_policy(default_policy):
    first, second = batch_collection(), batch_collection()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == BATCH_THRESHOLDS
    assert gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_restored_when_the_snapshot_fails(default_policy):
    with pytest.raises(RuntimeError), batch_collection():
        raise RuntimeError("chunk failed")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_stay_frozen(default_policy):
    gc.freeze()
    frozen = gc.get_freeze_count()
    with batch_collection():
        assert gc.get_threshold() == BATCH_THRESHOLDS
    assert frozen > 0
    assert gc.get_freeze_count() > 0  # not unfrozen by the snapshot
    assert gc.get_threshold() == (700, 10, 10)

