#!/bin/sh
# Regenerate shoppb/*.pb.go from services/proto/shop.proto (the generated files are committed,
# so a build needs none of this). Needs Python's grpcio-tools (for protoc) and the Go plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.6
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$(go env GOPATH)/bin:$PATH"
python3 -m grpc_tools.protoc -I "$here/../proto" \
  --go_out="$here/shoppb" --go_opt=paths=source_relative --go_opt=Mshop.proto=ipclab/services/go/shoppb \
  --go-grpc_out="$here/shoppb" --go-grpc_opt=paths=source_relative --go-grpc_opt=Mshop.proto=ipclab/services/go/shoppb \
  "$here/../proto/shop.proto"
