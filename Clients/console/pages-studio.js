// The console's pages about the studio's setup: publishers and applications, mail templates and social lists, each
// read back from identity and social (ListPublishers, ListApplications, ListMailTemplates, GetLists).

import { needsApp } from "./pages-content.js";
import { panel } from "./pages-reads.js";
import { card, confirmWithReason, el, enumText, facts, form, raveIdPattern, run, statusLine, table, when } from "./ui.js";

const identityAdmin = "rave.identity.v1.IdentityAdmin";

// MARK: - Publishers and applications

const scopes = [["VALUE_SCOPE_GLOBAL", "global (one value for every application)"],
    ["VALUE_SCOPE_APPLICATION", "application (its own value wins)"]];
const mergePolicies = [["MERGE_POLICY_NONE", "none (the player contacts support)"],
    ["MERGE_POLICY_PROMPT", "prompt (the player may ask for a merge)"], ["MERGE_POLICY_AUTOMATIC", "automatic"]];

/** The fields of `ApplicationSettings` (docs/identity.md), for creating and editing an application. */
function settingsFields() {
    return [
        { name: "displayNameScope", label: "Display name scope", type: "select", options: scopes },
        { name: "pictureScope", label: "Picture scope", type: "select", options: scopes },
        { name: "mergePolicy", label: "Merge policy", type: "select", options: mergePolicies },
        { name: "allowedOrigins", label: "Allowed web origins (one a line)", type: "textarea", maxlength: 5200,
            hint: "https://host[:port], or http://localhost[:port] for development; at most 20." },
        { name: "allowForceDisconnect", label: "Players may force-disconnect a provider", type: "checkbox" },
        { name: "twoFactorAllowed", label: "Two-factor allowed", type: "checkbox" },
        { name: "crossAppLogin", label: "Cross-app login", type: "checkbox", value: true },
    ];
}

function settingsOf(values) {
    return {
        displayNameScope: values.displayNameScope, pictureScope: values.pictureScope, mergePolicy: values.mergePolicy,
        allowForceDisconnect: values.allowForceDisconnect, twoFactorAllowed: values.twoFactorAllowed,
        crossAppLogin: values.crossAppLogin,
        allowedOrigins: values.allowedOrigins.split(/\s+/).filter(Boolean),
    };
}

function applicationFacts(application) {
    const settings = application.settings ?? {};
    return facts([
        ["Application", el("code", { id: "application-id" }, application.appId)],
        ["Name", el("span", { id: "application-name" }, application.name)],
        ["Publisher", el("code", { id: "application-publisher" }, application.publisherId)],
        ["Display name / picture", `${enumText(settings.displayNameScope, "VALUE_SCOPE_")} / `
            + `${enumText(settings.pictureScope, "VALUE_SCOPE_")}`],
        ["Merge policy", enumText(settings.mergePolicy, "MERGE_POLICY_")],
        ["Force-disconnect / two-factor / cross-app login", [settings.allowForceDisconnect, settings.twoFactorAllowed,
            settings.crossAppLogin].map((on) => (on ? "yes" : "no")).join(" / ")],
        ["Allowed origins", el("span", { id: "application-origins" }, (settings.allowedOrigins ?? []).join(", ") || "none")],
        ["Created", when(application.createdAtUnixMs)],
    ]);
}

/**
 * A card listing the pages `read(pageToken)` answers (`{rows, next}`) as `tableOf(rows)`, with a "Show more" button
 * (`<id>-more`) while there is a next page. `load()` starts again from the first page.
 */
function pagedPanel(title, id, read, tableOf) {
    const status = statusLine(`${id}-status`);
    const body = el("div", { id });
    let rows = [];
    let token = "";
    const load = async (more = false) => {
        const shown = more ? rows.length : 0;
        const answer = await run(status, () => read(more ? token : ""),
            (page) => `${shown + page.rows.length} shown${page.next ? "; there are more" : ""}.`);
        if (!answer) return;
        rows = more ? rows.concat(answer.rows) : answer.rows;
        token = answer.next;
        body.replaceChildren(tableOf(rows), token ? el("button", { type: "button", id: `${id}-more`, class: "secondary",
            onclick: () => load(true) }, "Show more") : "");
    };
    return { element: card(title, status, body), load };
}

const apps = {
    title: "Publishers and applications",
    async render(container, { session, open, appId }, query) {
        const shownId = query.get("app") || appId;
        container.append(card("Find an application", form({
            id: "application-lookup", submit: "Show",
            fields: [{ name: "app", label: "Application id", required: true, pattern: raveIdPattern, value: shownId }],
            onSubmit: ({ app }) => open("apps", `app=${app}`),
        })));

        const status = statusLine("application-status");
        const body = el("div", { id: "application" });
        const editStatus = statusLine("application-edit-status");
        const editForm = form({
            id: "application-edit", submit: "Save the application…", className: "grid",
            fields: [{ name: "name", label: "Name", required: true, maxlength: 200 }, ...settingsFields()],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Save this application?",
                    text: `${shownId}: every setting is replaced by the form's, allowed origins included.` });
                if (!reason) return;
                const done = await run(editStatus, () => session.call(`${identityAdmin}/UpdateApplication`, {
                    appId: shownId, name: { value: values.name }, settings: settingsOf(values),
                }, { reason }), () => "Saved.");
                if (done) await Promise.all([loadApplication(), applications.load()]);
            },
        });
        const loadApplication = async () => {
            const answer = await run(status, () => session.call(`${identityAdmin}/GetApplication`, { appId: shownId }),
                () => "");
            if (!answer) return;
            const application = answer.application ?? {};
            const settings = application.settings ?? {};
            body.replaceChildren(applicationFacts(application));
            editForm.set({ name: application.name, displayNameScope: settings.displayNameScope ?? "VALUE_SCOPE_GLOBAL",
                pictureScope: settings.pictureScope ?? "VALUE_SCOPE_GLOBAL",
                mergePolicy: settings.mergePolicy ?? "MERGE_POLICY_NONE",
                allowedOrigins: (settings.allowedOrigins ?? []).join("\n"),
                allowForceDisconnect: settings.allowForceDisconnect, twoFactorAllowed: settings.twoFactorAllowed,
                crossAppLogin: settings.crossAppLogin });
            publisherId ||= application.publisherId ?? "";
            publisherForm.inputs.publisher.value ||= application.publisherId ?? "";
            createForm.inputs.publisher.value ||= application.publisherId ?? "";
        };
        if (shownId) container.append(card("Application", status, body), card("Edit the application", editForm, editStatus));

        const createStatus = statusLine("application-create-status");
        const created = el("div", { id: "application-created" });
        const createForm = form({
            id: "application-create", submit: "Create the application…", className: "grid",
            fields: [
                { name: "publisher", label: "Publisher id", required: true, pattern: raveIdPattern },
                { name: "name", label: "Name", required: true, maxlength: 200 },
                ...settingsFields(),
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Create an application?",
                    text: `${values.name} for publisher ${values.publisher}.` });
                if (!reason) return;
                const answer = await run(createStatus, () => session.call(`${identityAdmin}/CreateApplication`, {
                    publisherId: values.publisher, name: values.name, settings: settingsOf(values),
                }, { reason }), (result) => `Created ${result.application?.appId}.`);
                if (!answer) return;
                created.replaceChildren(el("p", {}, el("a", { id: "application-created-link",
                    href: `#/apps?app=${answer.application?.appId}` }, `Open ${answer.application?.name}`)));
                publisherId = values.publisher;
                await applications.load();
            },
        });

        const publisherStatus = statusLine("publisher-status");
        const publisherResult = el("div", { id: "publisher-result" });
        const newPublisher = form({
            id: "publisher-create", submit: "Create the publisher…",
            fields: [{ name: "name", label: "Name", required: true, maxlength: 200 }],
            onSubmit: async ({ name }) => {
                const reason = await confirmWithReason({ title: "Create a publisher?", text: `${name}.` });
                if (!reason) return;
                const answer = await run(publisherStatus, () => session.call(`${identityAdmin}/CreatePublisher`,
                    { name }, { reason }), () => "Created.");
                if (!answer) return;
                publisherResult.replaceChildren(facts([
                    ["Publisher", el("code", { id: "publisher-created" }, answer.publisher?.publisherId)],
                    ["Name", answer.publisher?.name ?? ""],
                ]));
                await publishers.load();
            },
        });
        const publisherForm = form({
            id: "publisher-update", submit: "Rename the publisher…", className: "grid",
            fields: [
                { name: "publisher", label: "Publisher id", required: true, pattern: raveIdPattern },
                { name: "name", label: "New name", required: true, maxlength: 200 },
            ],
            onSubmit: async ({ publisher, name }) => {
                const reason = await confirmWithReason({ title: "Rename this publisher?", text: `${publisher} becomes ${name}.` });
                if (!reason) return;
                const done = await run(publisherStatus, () => session.call(`${identityAdmin}/UpdatePublisher`,
                    { publisherId: publisher, name }, { reason }), (result) => `Renamed to ${result.publisher?.name}.`);
                if (done) await publishers.load();
            },
        });

        // The publishers the operator acts for (every one for an owner of all publishers), and one publisher's
        // applications: the shown application's, or the one chosen in the list.
        let publisherId = "";
        const publishers = pagedPanel("Publishers you act for", "publishers", async (pageToken) => {
            const answer = await session.call(`${identityAdmin}/ListPublishers`, { pageToken });
            return { rows: answer.publishers ?? [], next: answer.nextPageToken ?? "" };
        }, (rows) => table({
            caption: "Publishers, oldest first", rows, key: (row) => row.publisherId, empty: "No publishers.",
            columns: [
                { label: "Publisher", value: (row) => el("code", {}, row.publisherId) },
                { label: "Name", value: (row) => row.name },
                { label: "Created", value: (row) => when(row.createdAtUnixMs) },
                { label: "Applications", value: (row) => el("button", { type: "button", class: "small",
                    onclick: () => { publisherId = row.publisherId; applications.load(); } }, "Show") },
            ],
        }));
        const applications = pagedPanel("Applications", "publisher-applications", async (pageToken) => {
            if (!publisherId) return { rows: [], next: "" };
            const answer = await session.call(`${identityAdmin}/ListApplications`, { publisherId, pageToken });
            return { rows: answer.applications ?? [], next: answer.nextPageToken ?? "" };
        }, (rows) => table({
            caption: publisherId ? `Applications of publisher ${publisherId}, oldest first` : "Applications", rows,
            key: (row) => row.appId,
            empty: publisherId ? "This publisher has no applications." : "Choose a publisher above.",
            columns: [
                { label: "Application", value: (row) => el("a", { href: `#/apps?app=${row.appId}` },
                    el("code", {}, row.appId)) },
                { label: "Name", value: (row) => row.name },
                { label: "Merge policy", value: (row) => enumText(row.settings?.mergePolicy, "MERGE_POLICY_") },
                { label: "Allowed origins", value: (row) => (row.settings?.allowedOrigins ?? []).join(", ") || "none" },
                { label: "Created", value: (row) => when(row.createdAtUnixMs) },
            ],
        }));
        container.append(card("New application", createForm, createStatus, created),
            card("Publishers", el("h3", {}, "New publisher"),
                el("p", {}, "Creating a publisher needs an owner of every publisher."), newPublisher,
                el("h3", {}, "Rename a publisher"), publisherForm, publisherStatus, publisherResult),
            publishers.element, applications.element);
        await Promise.all([shownId ? loadApplication() : null, publishers.load()]);
        await applications.load();
    },
};

// MARK: - Mail templates

const mailKinds = [["MAIL_KIND_VERIFY_EMAIL", "email verification"], ["MAIL_KIND_PASSWORD_RESET", "password reset"],
    ["MAIL_KIND_EXPORT_READY", "data export ready"]];

const mail = {
    title: "Mail templates",
    async render(container, { session, appId }) {
        if (needsApp(container, appId)) return;
        const status = statusLine("mail-template-status");
        const templateForm = form({
            id: "mail-template-form", submit: "Save the template…", className: "grid",
            fields: [
                { name: "kind", label: "Mail", type: "select", options: mailKinds },
                { name: "language", label: "Language (BCP 47)", required: true, value: "en", maxlength: 35 },
                { name: "subject", label: "Subject", required: true, maxlength: 200 },
                { name: "body", label: "Body (plain text)", type: "textarea", required: true, rows: 6, maxlength: 10000,
                    hint: "{{code}} (required, except in the export mail), {{app_name}}, {{minutes}}; the export "
                        + "mail: {{expires_at}}, {{days}}." },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Save this mail template?",
                    text: `${enumText(values.kind, "MAIL_KIND_")} in ${values.language}.` });
                if (!reason) return;
                const done = await run(status, () => session.call(`${identityAdmin}/SetMailTemplate`,
                    { appId, ...values }, { reason }), () => "Saved.");
                if (done) await templates.load();
            },
        });
        const remove = el("button", {
            type: "button", id: "mail-template-remove", class: "danger", onclick: async () => {
                const { kind, language } = templateForm.inputs;
                const reason = await confirmWithReason({ title: "Remove this mail template?",
                    text: `${enumText(kind.value, "MAIL_KIND_")} in ${language.value.trim()}: the mail falls back to `
                        + "the next language, then the built-in English text." });
                if (!reason) return;
                const done = await run(status, () => session.call(`${identityAdmin}/SetMailTemplate`,
                    { appId, kind: kind.value, language: language.value.trim(), subject: "", body: "" }, { reason }),
                () => "Removed.");
                if (done) await templates.load();
            },
        }, "Remove this kind and language…");

        templateForm.querySelector(".actions").append(remove);

        // The application's templates as identity holds them (ListMailTemplates, viewer).
        const templates = panel("Templates", "mail-templates", async (listStatus, listBody) => {
            const answer = await run(listStatus, () => session.call(`${identityAdmin}/ListMailTemplates`, { appId }),
                (found) => `${(found.templates ?? []).length} templates.`);
            if (!answer) return;
            listBody.replaceChildren(table({
                caption: "This application's templates, by mail, then language", rows: answer.templates ?? [],
                key: (row) => `${row.kind}/${row.language}`, empty: "No templates: the built-in English texts apply.",
                columns: [
                    { label: "Mail", value: (row) => enumText(row.kind, "MAIL_KIND_") },
                    { label: "Language", value: (row) => row.language },
                    { label: "Subject", value: (row) => row.subject },
                    { label: "Changed", value: (row) => when(row.updatedAtUnixMs) },
                    { label: "Edit", value: (row) => el("button", { type: "button", class: "small",
                        onclick: () => templateForm.fill({ kind: row.kind, language: row.language,
                            subject: row.subject, body: row.body }) }, "Edit") },
                ],
            }));
        });
        container.append(card("Set a template", el("p", {}, "Identity's mails of this application, per kind and ",
            "language; a language without its own template uses the application's en template, then the built-in text."),
        templateForm, status), templates.element);
        await templates.load();
    },
};

// MARK: - Social lists

const social = {
    title: "Social lists",
    async render(container, { session, appId }) {
        if (needsApp(container, appId)) return;
        const lists = panel("Lists", "social-lists", async (status, body) => {
            const answer = await run(status, () => session.call("rave.social.v1.SocialAdmin/GetLists", { appId }),
                (result) => `${(result.lists ?? []).length} lists.`);
            if (!answer) return;
            body.replaceChildren(table({
                caption: "The lists this application sees, by key", rows: answer.lists ?? [], key: (row) => row.key,
                columns: [
                    { label: "Key", value: (row) => row.key },
                    { label: "Kind", value: (row) => enumText(row.kind, "LIST_KIND_") },
                    { label: "Scope", value: (row) => enumText(row.scope, "LIST_SCOPE_") },
                    { label: "Owner", value: (row) => el("code", {}, row.ownerId) },
                    { label: "Members at most", value: (row) => String(row.maxMembers ?? 0) },
                ],
            }));
        });
        const status = statusLine("list-status");
        const listForm = form({
            id: "list-form", submit: "Create the list…", className: "grid",
            fields: [
                { name: "key", label: "Key", required: true, pattern: "[a-z0-9_-]{1,64}",
                    hint: "1…64 of a-z 0-9 _ -; not a default key; unique within the publisher." },
                { name: "kind", label: "Kind", type: "select",
                    options: [["LIST_KIND_FRIENDS", "friends"], ["LIST_KIND_FOLLOWERS", "followers"]] },
                { name: "scope", label: "Scope", type: "select",
                    options: [["LIST_SCOPE_APPLICATION", "this application"], ["LIST_SCOPE_GLOBAL", "the publisher's applications"]] },
                { name: "maxMembers", label: "Members at most (0: 5000)", type: "number", min: 0, max: 1000000, value: "0" },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Create this list?",
                    text: `${values.key}: ${enumText(values.kind, "LIST_KIND_")}, ${enumText(values.scope, "LIST_SCOPE_")}.` });
                if (!reason) return;
                const done = await run(status, () => session.call("rave.social.v1.SocialAdmin/CreateList",
                    { appId, ...values, maxMembers: Number(values.maxMembers || 0) }, { reason }), () => "Created.");
                if (done) await lists.load();
            },
        });
        container.append(lists.element, card("New list", el("p", {}, "A player's counts in each list are on the ",
            "players page (Friends and followers)."), listForm, status));
        await lists.load();
    },
};

export const studioPages = { apps, mail, social };
