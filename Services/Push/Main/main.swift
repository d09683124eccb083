import Push

// The `push` executable. The service is the Push library (Services/Push), which tests and
// benchmarks import; this file only starts it.
await PushMain.main()
