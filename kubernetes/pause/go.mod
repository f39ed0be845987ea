module ipclab/kubernetes/pause

go 1.24.0
