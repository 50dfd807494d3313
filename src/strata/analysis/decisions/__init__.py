"""Deciding between configurations: means and intervals, the answer of one pair at a margin, an advice group
against its best, when `repetitions: auto` stops, and whether an interval decides a criterion."""
