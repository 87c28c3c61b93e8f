"""Game content: worlds, rulesets, NPCs, entries, segments, API keys (app label ``promptadmin``)."""
