import Gateway

// The `gateway` executable. The service is the Gateway library (Services/Gateway), which tests and
// benchmarks import; this file only starts it.
await GatewayMain.main()
