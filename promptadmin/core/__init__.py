"""What every domain app shares: roles, actors, errors, tokenizer, cache, checks, healthz."""
