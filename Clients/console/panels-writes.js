// The console's panels that change something, placed by the pages: a player's data export (request, state,
// download), an application's real-money eligibility, push's default language and a notification's deliveries.
// Each is a card with its own status line; every write asks for a reason (sent as X-Rave-Reason, kept in the audit
// log).

import { panel, playerLink, whenMicros } from "./pages-reads.js";
import { card, confirmWithReason, el, enumText, facts, form, run, statusLine, table, when } from "./ui.js";

const identityAdmin = "rave.identity.v1.IdentityAdmin";

// MARK: - A player's data export

/** A link to the audit log filtered by one of identity's admin methods. */
function auditLink(method) {
    const query = new URLSearchParams({ method: `${identityAdmin}/${method}` });
    return el("a", { href: `#/audit?${query}` }, method);
}

/**
 * A player's latest data export (`GetUserExport`, viewer): its state, refreshed every 3 s while it is assembled;
 * support requests one (`RequestUserExport`) and downloads a ready archive through the gateway's archive route,
 * which records the download in the audit log. The page checks the file's SHA-256 against the export's.
 */
export function playerExportPanel(session, userId) {
    const status = statusLine("player-export-status");
    const body = el("div", { id: "player-export" });
    const downloadStatus = statusLine("player-export-download-status");
    const downloaded = el("div", { id: "player-export-download" });
    let latest = null;
    let polling = 0;

    const requestForm = form({
        id: "export-form", submit: "Request an export…", className: "grid",
        fields: [{ name: "language", label: "Language of the ready mail (BCP 47; empty: English)", maxlength: 35,
            placeholder: "en" }],
        onSubmit: async ({ language }) => {
            const reason = await confirmWithReason({
                title: "Export this player's data?",
                text: `Assembles everything the platform holds about ${userId} into an archive; the player is mailed `
                    + "when it is ready. An export in progress is answered instead of a new one.",
            });
            if (!reason) return;
            const answer = await run(status, () => session.call(`${identityAdmin}/RequestUserExport`,
                { userId, language }, { reason }), (result) => (result.created ? "Export requested."
                : "An export is already being assembled: it is shown."));
            if (answer) show(answer.accountExport ?? null);
        },
    });

    const download = async () => {
        if (!latest) return;
        const reason = await confirmWithReason({
            title: "Download this archive?",
            text: `The archive of ${userId} holds their personal data; the download is recorded in the audit log.`,
        });
        if (!reason) return;
        const path = `/v1/admin/users/${encodeURIComponent(userId)}/exports/${encodeURIComponent(latest.exportId)}/archive`;
        const expected = latest.sha256;
        const file = await run(downloadStatus, async () => {
            const answer = await session.download(path, { reason });
            const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await answer.blob.arrayBuffer()));
            const sha256 = Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
            if (sha256 !== expected) {
                throw new Error(`the downloaded file's SHA-256 is ${sha256}, not the export's ${expected}: do not use it`);
            }
            return { ...answer, sha256 };
        }, (answer) => `Downloaded ${answer.blob.size} bytes; the SHA-256 matches the export's.`);
        if (!file) return;
        const link = el("a", { id: "player-export-file", href: URL.createObjectURL(file.blob), download: file.filename },
            `Save ${file.filename} again`);
        downloaded.replaceChildren(facts([
            ["File", file.filename],
            ["Size", `${file.blob.size} bytes`],
            ["SHA-256", el("code", { id: "player-export-sha256" }, file.sha256)],
        ]), el("p", {}, link));
        link.click();
    };

    const show = (accountExport) => {
        latest = accountExport;
        const state = accountExport ? enumText(accountExport.status, "ACCOUNT_EXPORT_STATUS_") : "none";
        body.replaceChildren(accountExport ? facts([
            ["Export", el("code", {}, accountExport.exportId)],
            ["State", el("span", { id: "player-export-state", dataset: { state } }, state)],
            ["Requested by", enumText(accountExport.requestedBy, "ACCOUNT_EXPORT_REQUESTER_")],
            ["Requested", when(accountExport.createdAtUnixMs)],
            ["Ready", when(accountExport.readyAtUnixMs)],
            ["Deleted after", when(accountExport.expiresAtUnixMs)],
            ["Size", accountExport.sizeBytes ? `${accountExport.sizeBytes} bytes` : "—"],
            ["SHA-256", accountExport.sha256 ? el("code", {}, accountExport.sha256) : "—"],
            ["Error", accountExport.error || "—"],
        ]) : el("p", { id: "player-export-state", dataset: { state } }, "No export requested."),
        el("div", { class: "row spaced" },
            el("button", { type: "button", id: "refresh-export", class: "secondary", onclick: () => load() }, "Refresh"),
            state === "ready" ? el("button", { type: "button", id: "download-export", onclick: download },
                "Download the archive…") : null));
        // While it is assembled, ask again every 3 s as long as this panel is on the page.
        if (state === "pending") {
            const ticket = (polling += 1);
            setTimeout(() => { if (ticket === polling && body.isConnected) load(false); }, 3000);
        }
    };

    const load = async (announce = true) => {
        const call = () => session.call(`${identityAdmin}/GetUserExport`, { userId });
        const answer = await (announce ? run(status, call, () => "") : call().catch(() => null));
        if (answer) show(answer.accountExport ?? null);
    };

    return {
        element: card("Data export", el("p", {}, "An archive of everything the platform holds about the player, for ",
            "them (a data access request). Support requests and downloads it; both are in the audit log, in the ",
        "player's audit entries below and under their methods: ", auditLink("RequestUserExport"), ", ",
        auditLink("DownloadUserExport"), "."),
        status, body, requestForm, downloadStatus, downloaded),
        load,
    };
}

// MARK: - Wallet eligibility

/**
 * The countries where the application allows real-money play: read from the wallet (`GetEligibility`, viewer), set by
 * an operator (`SetEligibility`).
 */
export function eligibilityPanel(session, appId) {
    const status = statusLine("eligibility-status");
    const readStatus = statusLine("eligibility-read-status");
    const current = el("div", { id: "eligibility-current" });
    const eligibilityForm = form({
        id: "eligibility-form", submit: "Set the countries…",
        fields: [{ name: "countries", label: "Real-money countries (ISO 3166-1 alpha-2, separated by commas)",
            placeholder: "GB, NL", hint: "Replaces the whole list; empty: real money nowhere.", maxlength: 2000 }],
        onSubmit: async ({ countries }) => {
            const codes = countries.split(/[\s,]+/).filter(Boolean).map((code) => code.toUpperCase());
            const reason = await confirmWithReason({ title: "Set the real-money countries?",
                text: `${appId}: ${codes.length ? codes.join(", ") : "none"}.` });
            if (!reason) return;
            const done = await run(status, () => session.call("rave.wallet.v1.WalletAdmin/SetEligibility",
                { appId, realMoneyCountries: codes }, { reason }), () => "Saved.");
            if (done) await load();
        },
    });
    const load = async () => {
        if (!appId) {
            return current.replaceChildren(el("p", { class: "empty" },
                "Choose an application in the menu (Application) to set where it allows real money."));
        }
        const answer = await run(readStatus, () => session.call("rave.wallet.v1.WalletAdmin/GetEligibility",
            { appId }), () => "");
        if (!answer) return;
        const countries = answer.realMoneyCountries ?? [];
        current.replaceChildren(facts([
            ["Countries", el("span", { id: "eligibility-countries" }, countries.join(", ") || "none")],
        ]));
        eligibilityForm.inputs.countries.value = countries.join(", ");
    };
    return {
        element: card("Real-money eligibility", el("p", {}, "Real-economy bets need a signed-up player in one of these ",
            "countries (the wallet's list for the application)."), readStatus, current, eligibilityForm, status),
        load,
    };
}

// MARK: - Push

/** The application's default push language (`SetDefaultLanguage`); `show(language)` with ListTemplates' answer. */
export function defaultLanguagePanel(session, appId, reload) {
    const status = statusLine("default-language-status");
    const current = el("p", { id: "push-default-language" });
    const languageForm = form({
        id: "default-language-form", submit: "Set the default language…",
        fields: [{ name: "language", label: "Default language (BCP 47; empty clears it)", maxlength: 35 }],
        onSubmit: async ({ language }) => {
            const reason = await confirmWithReason({ title: "Set the default language?",
                text: language ? `Devices in a language without a template get ${language}'s.`
                    : "Clears it: devices in a language without a template get the built-in English text." });
            if (!reason) return;
            const done = await run(status, () => session.call("rave.push.v1.PushAdmin/SetDefaultLanguage",
                { appId, language }, { reason }), () => "Saved.");
            if (done) await reload();
        },
    });
    return {
        element: card("Default language", el("p", {}, "The language whose templates serve devices of a language ",
            "without its own."), current, languageForm, status),
        show(language) {
            current.textContent = `Now: ${language || "not set (built-in English)"}.`;
            current.dataset.language = language ?? "";
            languageForm.inputs.language.value = language ?? "";
        },
    };
}

/**
 * The deliveries of one notification, per device (`GetDeliveries`, viewer; push masks the tokens as ListUserDevices
 * does); `fill(id)` shows another one.
 */
export function deliveriesPanel(session) {
    let notificationId = "";
    const result = panel("Deliveries", "deliveries", async (status, body) => {
        if (!notificationId) return body.replaceChildren();
        const answer = await run(status, () => session.call("rave.push.v1.PushAdmin/GetDeliveries", { notificationId }),
            (found) => `${(found.deliveries ?? []).length} deliveries of ${notificationId}.`);
        if (!answer) return;
        body.replaceChildren(table({
            caption: `Deliveries of ${notificationId}`, rows: answer.deliveries ?? [], empty: "No deliveries.",
            key: (row) => `${row.userId}/${row.platform}/${row.token}`,
            columns: [
                { label: "Player", value: (row) => playerLink(row.userId) },
                { label: "Platform", value: (row) => enumText(row.platform, "PLATFORM_") },
                { label: "Token", value: (row) => el("code", {}, row.token) },
                { label: "State", value: (row) => enumText(row.state, "DELIVERY_STATE_") },
                { label: "Attempts", value: (row) => String(row.attempts ?? 0) },
                { label: "Last answer", value: (row) => row.lastResult || "—" },
                { label: "Updated", value: (row) => whenMicros(row.updatedAtMicros) },
            ],
        }));
    });
    const lookup = form({
        id: "deliveries-form", submit: "Show deliveries",
        fields: [{ name: "notification", label: "Notification id", required: true, pattern: "[0-9a-f]{32}" }],
        onSubmit: ({ notification }) => { notificationId = notification; result.load(); },
    });
    result.element.insertBefore(lookup, result.element.children[1]);
    return {
        element: result.element,
        show(id) {
            lookup.inputs.notification.value = id;
            notificationId = id;
            return result.load();
        },
    };
}
