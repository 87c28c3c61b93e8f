"""Releases: immutable snapshots of the game content, labels pointing at them, scenarios
with expectations, and the impact of a change on every prompt before it goes live."""
