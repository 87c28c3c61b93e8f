"""The REST API under ``/api/v1/``: thin DRF views over the services and the assembly selector.

Each endpoint parses its input with an explicit serializer, calls one service (writes) or
selector (reads), and renders an explicit output serializer. Domain errors become HTTP
errors in one place (:mod:`promptadmin.api.errors`), in one documented shape.
"""
