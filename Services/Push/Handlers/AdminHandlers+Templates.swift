import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices

/// rave.push.v1.PushAdmin's template methods: a game's operators word the notifications events turn into.
extension AdminHandlers {
    func setTemplate(
        _ request: PushV1.SetTemplateRequest, context: RequestContext
    ) async throws -> PushV1.SetTemplateResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try Self.appID(request.appId)
        guard let template = request.template else { throw PushError.invalidArgument("template is required") }
        _ = try Self.topic(template.topic)
        guard !template.language.isEmpty else {
            throw PushError.invalidArgument("template.language is required (a BCP 47 tag like en or pt-BR)")
        }
        _ = try TokenValidation.language(template.language)
        guard !template.title.isEmpty || !template.body.isEmpty else {
            throw PushError.invalidArgument("a template needs a title or a body")
        }
        for (field, text) in [("title", template.title), ("body", template.body)]
        where text.utf8.count > EventTemplates.maximumTextLength {
            throw PushError.invalidArgument(
                "template.\(field) must be at most \(EventTemplates.maximumTextLength) bytes, got \(text.utf8.count)")
        }
        try await dependencies.templates.set(appID: appID, template, on: dependencies.pool)
        return PushV1.SetTemplateResponse()
    }

    func listTemplates(
        _ request: PushV1.ListTemplatesRequest, context: RequestContext
    ) async throws -> PushV1.ListTemplatesResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try Self.appID(request.appId)
        if !request.topic.isEmpty { _ = try Self.topic(request.topic) }
        let templates = try await dependencies.templates.list(
            appID: appID, topic: request.topic, on: dependencies.pool)
        let defaultLanguage = try await dependencies.templates.defaultLanguage(appID: appID, on: dependencies.pool)
        let builtIn = EventTemplates.topics.filter { request.topic.isEmpty || $0 == request.topic }.map { topic in
            let text = EventTemplates.builtIn[topic] ?? ("", "")
            return PushV1.Template(topic: topic, language: "en", title: text.title, body: text.body)
        }
        return PushV1.ListTemplatesResponse(templates: templates, defaultLanguage: defaultLanguage, builtIn: builtIn)
    }

    func deleteTemplate(
        _ request: PushV1.DeleteTemplateRequest, context: RequestContext
    ) async throws -> PushV1.DeleteTemplateResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try Self.appID(request.appId)
        let topic = try Self.topic(request.topic)
        guard
            try await dependencies.templates.delete(
                appID: appID, topic: topic, language: request.language, on: dependencies.pool)
        else {
            throw PushError.notFound("app \(appID) has no \(topic) template for language \"\(request.language)\"")
        }
        return PushV1.DeleteTemplateResponse()
    }

    func setDefaultLanguage(
        _ request: PushV1.SetDefaultLanguageRequest, context: RequestContext
    ) async throws -> PushV1.SetDefaultLanguageResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try Self.appID(request.appId)
        let language = try TokenValidation.language(request.language)
        try await dependencies.templates.setDefaultLanguage(appID: appID, language, on: dependencies.pool)
        return PushV1.SetDefaultLanguageResponse()
    }

    private static func appID(_ appID: String) throws(PushError) -> String {
        try PushDependencies.raveID(appID, field: "app_id").hex
    }

    private static func topic(_ topic: String) throws(PushError) -> String {
        guard EventTemplates.builtIn[topic] != nil else {
            throw .invalidArgument(
                "topic \"\(topic)\" has no notification: use one of \(EventTemplates.topics.joined(separator: ", "))")
        }
        return topic
    }
}
