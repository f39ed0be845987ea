"""The systems under test: transport-free business logic plus one adapter pair per IPC style.

Installed as the Python package ``ipclab_services`` (see pyproject.toml).
"""
