"""The five seed white papers as benchapp data: campaign templates and the figures the papers published.

- templates.py: each seed campaign as plain dataclasses (specs, datasets, scenarios, concurrency, clients).
- services.py: template_load_all() turns them into template Campaign rows; template_instantiate() copies one
  into a campaign with real targets and a scale factor.
- published.py: load_published() reads campaigns/fixtures/published/*.csv into PublishedResult rows.
- specs.py: the documents' instance spec labels as InstanceSpec rows (shared by templates and published rows).
"""
