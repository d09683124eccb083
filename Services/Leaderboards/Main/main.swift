import Leaderboards

// The `leaderboards` executable. The service is the Leaderboards library (Services/Leaderboards), which tests and
// benchmarks import; this file only starts it.
await LeaderboardsMain.main()
