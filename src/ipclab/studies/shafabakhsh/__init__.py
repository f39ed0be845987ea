"""src/ipclab/studies/shafabakhsh"""
