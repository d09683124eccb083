import Foundation
import RaveJSON
import RaveMessages

/// The JSON bodies APNs and FCM receive, built by hand because they are small and on the delivery hot path.
enum ProviderPayload {
    /// The most either provider accepts for one notification payload.
    static let maximumBytes = 4096

    /// The APNs body: `aps.alert` with title and body, sound when the device allows it, custom data alongside.
    static func apns(_ notification: PushV1.Notification, sound: Bool) -> String {
        var alert = JSONObject()
        alert.add("title", notification.title)
        alert.add("body", notification.body)
        var aps = JSONObject()
        aps.addRaw("alert", alert.text)
        if sound { aps.add("sound", "default") }
        var root = JSONObject()
        root.addRaw("aps", aps.text)
        for entry in notification.data where entry.key != "aps" { root.add(entry.key, entry.value) }
        return root.text
    }

    /// The FCM HTTP v1 `messages:send` body for one token.
    static func fcm(_ notification: PushV1.Notification, token: String, ttlSeconds: Int64) -> String {
        var content = JSONObject()
        content.add("title", notification.title)
        content.add("body", notification.body)
        var data = JSONObject()
        for entry in notification.data { data.add(entry.key, entry.value) }
        var android = JSONObject()
        android.add("ttl", "\(ttlSeconds)s")
        if !notification.collapseKey.isEmpty { android.add("collapse_key", notification.collapseKey) }
        var message = JSONObject()
        message.add("token", token)
        message.addRaw("notification", content.text)
        if !notification.data.isEmpty { message.addRaw("data", data.text) }
        message.addRaw("android", android.text)
        var root = JSONObject()
        root.addRaw("message", message.text)
        return root.text
    }

    /// Refuses a notification whose payload would exceed the providers' 4 KB limit (measured with sound on and the
    /// longest token the platforms use today, so a notification accepted here fits every device).
    static func checkSize(_ notification: PushV1.Notification, ttlSeconds: Int64) throws(PushError) {
        let apnsSize = apns(notification, sound: true).utf8.count
        let fcmSize = fcm(notification, token: "", ttlSeconds: ttlSeconds).utf8.count
        let largest = max(apnsSize, fcmSize)
        guard largest <= maximumBytes else {
            throw .invalidArgument(
                "the notification payload is \(largest) bytes; providers accept at most \(maximumBytes) bytes")
        }
    }
}

/// A JSON object written field by field.
struct JSONObject {
    private var body = ""

    var text: String { "{" + body + "}" }

    mutating func add(_ key: String, _ value: String) {
        addRaw(key, JSONString.quoted(value))
    }

    /// Adds a value that is already JSON text.
    mutating func addRaw(_ key: String, _ json: String) {
        if !body.isEmpty { body += "," }
        body += JSONString.quoted(key) + ":" + json
    }
}
