"""Server-rendered pages, one module per area (dashboard, catalogue, scenarios, campaigns, runs, compare).

Views parse, call one service or queryset, and render; campaigns/urls.py maps them.
"""
