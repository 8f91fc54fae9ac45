"""benchapp's REST API (Django REST framework) under /api/v1/: viewsets, serializers, actions."""
