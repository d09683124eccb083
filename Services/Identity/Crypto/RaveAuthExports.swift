// The token, key and primitive types moved to Shared/Core/RaveAuth so the gateway can verify tokens without importing
// this service; re-exporting keeps every identity file compiling unchanged.
@_exported import RaveAuth
