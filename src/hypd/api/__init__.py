"""The REST API: routers, request and response models, error mapping."""
