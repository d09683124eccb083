import Identity

// The `identity` executable. The service is the Identity library (Services/Identity), which tests and
// benchmarks import; this file only starts it.
await IdentityMain.main()
