// Handler protocols, typed clients and method tables generated from the `service` blocks in Proto/.
@_exported import RaveMessages
@_exported import RaveRPC
