"""Studio views, one module per area: dashboard, segments, history, catalog, entries, preview."""
