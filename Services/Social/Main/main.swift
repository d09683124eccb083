import Social

// The `social` executable. The service is the Social library (Services/Social), which tests and
// benchmarks import; this file only starts it.
await SocialMain.main()
