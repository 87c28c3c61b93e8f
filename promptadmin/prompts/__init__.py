"""Registered prompts: versions, labels, interfaces and adapter instructions (tri-section)."""
