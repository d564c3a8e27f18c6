"""A reset to timestamp T streams the changes strictly after T: the start is the next cluster time."""

from bson import Timestamp

from connectors.mongodb.stream import next_cluster_time


def test_next_cluster_time_is_the_next_increment():
    assert next_cluster_time(Timestamp(1_700_000_000, 7)) == Timestamp(1_700_000_000, 8)


def test_wall_clock_second_keeps_every_change_of_that_second():
    # a wall-clock reset is Timestamp(seconds, 0); increments of real changes start at 1
    assert next_cluster_time(Timestamp(1_700_000_000, 0)) == Timestamp(1_700_000_000, 1)


def test_last_increment_of_a_second_rolls_over():
    assert next_cluster_time(Timestamp(1_700_000_000, 0xFFFFFFFF)) == Timestamp(1_700_000_001, 0)
