"""src/ipclab/availability"""
