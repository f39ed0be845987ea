"""ipclab: measure how the inter-service communication style changes a microservice system."""

__version__ = "0.1.0"
