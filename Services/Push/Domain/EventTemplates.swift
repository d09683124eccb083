import RaveMessages

/// The notification texts of event topics: built-in defaults, the app's overrides, and the choice per device.
///
/// A device gets the app's template for its own language (exact tag, then the tag's primary language: "pt-BR"
/// falls back to "pt"), else the app's template for the app's default language, else the built-in one.
enum EventTemplates {
    /// The topics push turns into notifications, with their built-in (English) texts.
    static let builtIn: [String: (title: String, body: String)] = [
        "gifts.gift_received": ("You received a gift", "{sender_name} sent you {gift_name}."),
        "gifts.request_received": ("A gift request", "{sender_name} asks you for {gift_name}."),
        "social.friend_request_received": ("New friend request", "{sender_name} wants to be your friend."),
        "leaderboards.achievement_unlocked": ("Achievement unlocked", "You unlocked {achievement_name}."),
    ]

    /// The topics in a stable order, for listings and messages.
    static let topics = builtIn.keys.sorted()

    static let maximumTextLength = 1024

    /// Replaces every `{name}` whose name is in `values`; unknown placeholders stay as written.
    static func render(_ template: String, _ values: [String: String]) -> String {
        var result = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}"),
                let value = values[String(rest[rest.index(after: open)..<close])]
            else {
                result.append("{")
                rest = rest[rest.index(after: open)...]
                continue
            }
            result += value
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// The template for `language` among an app's templates of one topic (keyed by language), following the
    /// fallbacks above; nil means the built-in one.
    static func choose(
        language: String, appTemplates: [String: PushV1.Template], defaultLanguage: String
    ) -> PushV1.Template? {
        if let exact = appTemplates[language] { return exact }
        if let dash = language.firstIndex(of: "-"), let primary = appTemplates[String(language[..<dash])] {
            return primary
        }
        return defaultLanguage.isEmpty ? nil : appTemplates[defaultLanguage]
    }

    /// The text of a notification about `topic` with `values`: the base text (app default language, else built
    /// in) plus a localization for each device language whose text differs from it.
    static func notificationText(
        topic: String, values: [String: String], deviceLanguages: Set<String>,
        appTemplates: [String: PushV1.Template], defaultLanguage: String
    ) -> (title: String, body: String, localizations: [PushV1.LocalizedText])? {
        guard let fallback = builtIn[topic] else { return nil }
        func text(_ template: PushV1.Template?) -> (title: String, body: String) {
            let source = template.map { ($0.title, $0.body) } ?? fallback
            return (render(source.0, values), render(source.1, values))
        }
        let base = text(defaultLanguage.isEmpty ? nil : appTemplates[defaultLanguage])
        var localizations: [PushV1.LocalizedText] = []
        for language in deviceLanguages.sorted() where !language.isEmpty {
            let chosen = text(
                choose(language: language, appTemplates: appTemplates, defaultLanguage: defaultLanguage))
            if chosen != base {
                localizations.append(PushV1.LocalizedText(language: language, title: chosen.title, body: chosen.body))
            }
        }
        return (base.title, base.body, localizations)
    }

    /// The text `notification` shows on a device with `language`.
    static func localized(_ notification: PushV1.Notification, language: String) -> PushV1.Notification {
        guard let text = notification.localizations.first(where: { $0.language == language }) else {
            return notification
        }
        var localized = notification
        localized.title = text.title
        localized.body = text.body
        return localized
    }
}
