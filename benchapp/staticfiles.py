"""Static files with hashed names (whitenoise's compressed manifest storage).

A hashed name changes whenever its content does, so whitenoise serves such files with a year's Cache-Control
(`max-age=315360000, public, immutable`); the pages name them through `{% static %}`. ES module imports between our
files are rewritten to the hashed names as well (Django's support_js_module_import_aggregation), and the source
maps Chart.js ships are kept beside their scripts, whose `sourceMappingURL` is rewritten the same way.
"""
from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
