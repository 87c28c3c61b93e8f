"""Playtests: a scenario's prompt sent to the game's model, and its replies checked."""
