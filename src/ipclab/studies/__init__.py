"""One module per published study: its experiments, its analysis and its results folder.

A study module is what a notebook calls; ``ipclab.report`` reads the results folder it
writes (``results.StudyResults``).
"""
