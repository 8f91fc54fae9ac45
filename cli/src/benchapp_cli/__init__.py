"""benchapp's command-line client (the `benchapp` command): the REST API at /api/v1/ with a token, for CI."""
