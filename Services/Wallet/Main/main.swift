import Wallet

// The `wallet` executable. The service is the Wallet library (Services/Wallet), which tests and
// benchmarks import; this file only starts it.
await WalletMain.main()
