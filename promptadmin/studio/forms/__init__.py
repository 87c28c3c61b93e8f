"""Forms for the studio, one module per area: they check what a person typed; services
check the rest.

Errors a service raises (``ValidationError`` keyed by field) are put back on the form with
:func:`promptadmin.studio.forms.common.add_service_errors`, so every message shows next to
the control it is about.
"""
