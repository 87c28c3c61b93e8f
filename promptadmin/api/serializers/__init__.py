"""Explicit input and output serializers for every endpoint, one module per area.

Input serializers refuse fields they do not know (a misspelt field is an error, not
silently ignored) and bound every number and string, so that bad input is a 400 naming
the field and never a database error.
"""
