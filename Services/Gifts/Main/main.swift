import Gifts

// The `gifts` executable. The service is the Gifts library (Services/Gifts), which tests and
// benchmarks import; this file only starts it.
await GiftsMain.main()
