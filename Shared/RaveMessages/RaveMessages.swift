// Messages generated from Proto/ live in Generated/ (see scripts/generate-proto.sh).
@_exported import RaveProtobuf
