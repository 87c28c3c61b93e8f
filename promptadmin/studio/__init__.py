"""The author studio: server-rendered pages (Django templates and htmx) for editing content.

Views parse input, call one service (writes) or selector (reads) and render; every page
asks ``promptadmin.core.roles`` who may look and who may change.
"""
