"""src/ipclab/backends/docker"""
