// The service runtime: configuration, service group, admin HTTP server, metrics.
@_exported import RaveTelemetry
