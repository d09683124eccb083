import RaveMessages
import RavePostgres
import RaveServices

// What the package's other modules (the gifts benchmark, Benchmarks/Gifts) call in-process. `package` access:
// nothing outside this package sees it.
extension GiftsDependencies {
    /// rave.gifts.v1.Gifts over this service.
    package var playerHandler: any GiftsV1.GiftsHandler { PlayerHandlers(dependencies: self) }

    /// Creates a gift type in `appID`; its id.
    package func createGiftType(_ type: GiftsV1.GiftType, appID: RaveID) async throws -> Int64 {
        try await types.create(type, appID: appID).id
    }
}
