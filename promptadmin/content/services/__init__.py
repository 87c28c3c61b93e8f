"""Every state change to content goes through a function here, whatever the entry point.

Services take keyword-only arguments, validate before saving, run inside a transaction,
save only the fields that changed and record who made the change (django-simple-history).
They raise ``django.core.exceptions.ValidationError`` keyed by field for bad input, and the
errors in ``promptadmin.core.errors`` for conflicts.
"""
