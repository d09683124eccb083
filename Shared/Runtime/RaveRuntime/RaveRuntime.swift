// The service runtime: configuration, service group, signals, admin HTTP server, and the `main` of every service.
@_exported import RaveTelemetry
