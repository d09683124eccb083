// The console's pages about people and records: overview, players, merges, audit log and operators.

import {
    card, confirmWithReason, el, enumText, facts, form, raveIdPattern, run, statusLine, table, when,
} from "./ui.js";
import {
    mergesTable, playerDevicesPanel, playerFriendsPanel, playerGiftsPanel, playerLedgerPanel, playerMergesPanel,
} from "./pages-reads.js";
import { playerExportPanel } from "./panels-writes.js";

const identityAdmin = "rave.identity.v1.IdentityAdmin";

// MARK: - Overview

// Samples of GetSystemStatus kept while the overview is open (every 5 s, the last 2 minutes), for the charts.
const samplesKept = 24;
const pollMs = 5000;
const history = new Map();
let polling = 0;

/** A small line chart of `values` (an inline SVG); its label says what it shows and the latest value. */
function sparkline(values, label) {
    const width = 120;
    const height = 28;
    const top = Math.max(...values, 0) || 1;
    const step = values.length > 1 ? width / (values.length - 1) : width;
    const points = values.map((value, index) =>
        `${(index * step).toFixed(1)},${(height - 2 - (value / top) * (height - 4)).toFixed(1)}`).join(" ");
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    svg.classList.add("spark");
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", values.length > 1 ? points : `0,${height - 2} ${width},${height - 2}`);
    svg.append(line);
    return svg;
}

function number(value, digits = 1) {
    return Number(value ?? 0).toFixed(digits);
}

const overview = {
    title: "Overview",
    async render(container, { session }) {
        const account = session.account ?? {};
        container.append(card("You",
            facts([
                ["Email", account.email ?? ""],
                ["Role", session.role],
                ["Publisher", account.allPublishers ? "every publisher" : (account.publisherId || "—")],
            ])));
        const status = statusLine("overview-status");
        const body = el("div", { id: "services" });
        container.append(card("Services",
            el("p", {}, "Health as this gateway's checks see it; calls, errors and p99 latency of what it forwarded ",
                "over the last minute. Refreshed every 5 seconds while this page is open."),
            status, body));
        const ticket = (polling += 1);
        const refresh = async () => {
            const answer = await run(status, () => session.call("rave.gateway.v1.GatewayAdmin/GetSystemStatus", {}),
                (result) => `${(result.services ?? []).filter((row) => row.healthyBackends > 0).length} of `
                    + `${(result.services ?? []).length} services healthy; the last ${result.windowSeconds} s.`);
            if (!answer) return;
            for (const row of answer.services ?? []) {
                const samples = history.get(row.service) ?? [];
                samples.push({ rate: Number(row.callsPerSecond ?? 0), p99: Number(row.p99Ms ?? 0) });
                history.set(row.service, samples.slice(-samplesKept));
            }
            body.replaceChildren(table({
                caption: "Backend services", key: (row) => row.service, rows: answer.services ?? [],
                columns: [
                    { label: "Service", value: (row) => row.service },
                    { label: "Health", value: (row) => {
                        const healthy = Number(row.healthyBackends ?? 0);
                        const state = healthy > 0 ? "up" : "down";
                        return el("span", { class: `badge ${state}`, dataset: { state } },
                            `${state} (${healthy}/${Number(row.backends ?? 0)})`);
                    } },
                    { label: "Calls/s", value: (row) => el("span", { class: "figure" }, number(row.callsPerSecond, 2),
                        sparkline(history.get(row.service).map((sample) => sample.rate),
                            `calls per second of ${row.service}, last ${number(row.callsPerSecond, 2)}`)) },
                    { label: "Errors", value: (row) => `${number(Number(row.errorRate ?? 0) * 100)} % (${row.errors ?? 0})` },
                    { label: "p99", value: (row) => el("span", { class: "figure" }, `${number(row.p99Ms, 2)} ms`,
                        sparkline(history.get(row.service).map((sample) => sample.p99),
                            `p99 latency of ${row.service}, last ${number(row.p99Ms, 2)} ms`)) },
                ],
            }));
        };
        await refresh();
        const next = () => setTimeout(async () => {
            // Stops when another page (or another render of this one) has taken over.
            if (ticket !== polling || document.body.dataset.page !== "overview" || !session.signedIn) return;
            await refresh();
            next();
        }, pollMs);
        next();
    },
};

// MARK: - Players

function userFacts(answer) {
    const user = answer.user ?? {};
    const profile = user.profile ?? {};
    const ban = answer.ban;
    return facts([
        ["Rave ID", el("code", { id: "player-id" }, profile.userId ?? "")],
        ["Username", profile.username || "—"],
        ["Display name", profile.displayName || "—"],
        ["Account", enumText(profile.accountState, "ACCOUNT_STATE_")],
        ["Email", user.email ? `${user.email} (${user.emailVerified ? "verified" : "not verified"})` : "—"],
        ["Providers", (user.providers ?? []).map((provider) => enumText(provider, "PROVIDER_")).join(", ") || "none"],
        ["Password", user.hasPassword ? "set" : "none"],
        ["Two-factor", el("span", { id: "player-two-factor" }, user.twoFactorEnabled ? "enabled" : "off")],
        ["Created", when(user.createdAtUnixMs)],
        ["Ban", el("span", { id: "player-ban", dataset: { banned: ban ? "true" : "false" } },
            ban ? `banned: ${ban.reason}${Number(ban.untilUnixMs) ? ` (until ${when(ban.untilUnixMs)})` : ""}` : "not banned")],
    ]);
}

function auditTable(events, caption) {
    return table({
        caption, rows: events, key: (event) => event.eventId, empty: "No entries.",
        columns: [
            { label: "When", value: (event) => when(event.occurredAtUnixMs) },
            { label: "Who", value: (event) => event.actor },
            { label: "What", value: (event) => (event.method || enumText(event.action, "AUDIT_ACTION_")) },
            { label: "User", value: (event) => (event.targetUserId ? el("code", {}, event.targetUserId) : "—") },
            { label: "Reason", value: (event) => event.reason || "—" },
            { label: "Outcome", value: (event) => (event.finished ? (event.statusCode ? `${event.statusCode}: ${event.statusMessage}` : "OK") : "pending") },
        ],
    });
}

function balancesTable(balances, caption) {
    return table({
        caption, rows: balances, empty: "No balances.",
        key: (row) => `${row.currency}/${row.economy}/${row.gameId ?? ""}`,
        columns: [
            { label: "Currency", value: (row) => row.currency },
            { label: "Economy", value: (row) => enumText(row.economy, "ECONOMY_") },
            { label: "Game", value: (row) => row.gameId || "main" },
            { label: "Amount", value: (row) => row.amount },
        ],
    });
}

const players = {
    title: "Players",
    async render(container, { session, open, appId }, query) {
        const userId = query.get("user") ?? "";
        const text = query.get("q") ?? "";
        const search = form({
            id: "player-search", submit: "Find",
            fields: [{ name: "q", label: "Rave ID, username or email", required: true, value: userId || text,
                maxlength: 254,
                hint: "Exact, without case; a merged-away Rave ID finds the account it was merged into." }],
            onSubmit: ({ q }) => (/^[0-9a-f]{32}$/.test(q) ? open("players", `user=${q}`)
                : open("players", `q=${encodeURIComponent(q)}`)),
        });
        container.append(card("Find a player", search));
        if (!userId && text) {
            const status = statusLine("search-status");
            const body = el("div", { id: "search-results" });
            container.append(card("Players found", status, body));
            const answer = await run(status, () => session.call(`${identityAdmin}/SearchUsers`, { query: text }),
                (result) => `${(result.users ?? []).length} found.`);
            if (!answer) return;
            body.replaceChildren(table({
                caption: `Players matching ${text}`, rows: answer.users ?? [], empty: "No player matches.",
                key: (row) => row.user?.profile?.userId,
                columns: [
                    { label: "Rave ID", value: (row) => el("a", { href: `#/players?user=${row.user?.profile?.userId}` },
                        el("code", {}, row.user?.profile?.userId)) },
                    { label: "Username", value: (row) => row.user?.profile?.username || "—" },
                    { label: "Email", value: (row) => (row.user?.email
                        ? `${row.user.email} (${row.user.emailVerified ? "verified" : "not verified"})` : "—") },
                    { label: "Account", value: (row) => enumText(row.user?.profile?.accountState, "ACCOUNT_STATE_") },
                    { label: "Ban", value: (row) => (row.ban ? `banned: ${row.ban.reason}` : "—") },
                ],
            }));
            return;
        }
        if (!userId) return;

        const status = statusLine("player-status");
        const profileBody = el("div", { id: "player-profile" });
        const banStatus = statusLine("ban-status");
        const banBody = el("div", { id: "player-ban-actions" });
        const walletStatus = statusLine("player-wallet-status");
        const walletBody = el("div", { id: "player-wallet" });
        const auditStatus = statusLine("player-audit-status");
        const auditBody = el("div", { id: "player-audit" });
        const sessionsStatus = statusLine("player-sessions-status");
        const sessionsBody = el("div", { id: "player-sessions" });
        container.append(card("Profile", status, profileBody));
        let id = userId;

        const banForm = form({
            id: "ban-form", submit: "Ban…",
            fields: [
                { name: "message", label: "Message to the player", required: true, maxlength: 500,
                    hint: "Shown to the player when a login is refused, and recorded as the ban's reason." },
                { name: "until", label: "Until (empty: until lifted)", type: "datetime-local" },
            ],
            onSubmit: async ({ message, until }) => {
                const reason = await confirmWithReason({ title: "Ban this player?", text: `Ban ${id}: "${message}".` });
                if (!reason) return;
                const untilUnixMs = until ? String(new Date(until).getTime()) : "0";
                const done = await run(banStatus, () => session.call(`${identityAdmin}/BanUser`,
                    { userId: id, reason: message, untilUnixMs }, { reason }), () => "Banned.");
                if (done) await Promise.all([loadProfile(), loadSessions(false), loadAudit()]);
            },
        });
        const unban = el("button", {
            type: "button", id: "unban", class: "secondary", onclick: async () => {
                const reason = await confirmWithReason({ title: "Lift the ban?", text: `Unban ${id}.` });
                if (!reason) return;
                const done = await run(banStatus, () => session.call(`${identityAdmin}/UnbanUser`,
                    { userId: id, reason }, { reason }), () => "Ban lifted.");
                if (done) await Promise.all([loadProfile(), loadAudit()]);
            },
        }, "Unban…");

        const twoFactorStatus = statusLine("two-factor-status");
        const resetTwoFactor = el("button", {
            type: "button", id: "reset-two-factor", class: "danger", onclick: async () => {
                const reason = await confirmWithReason({
                    title: "Reset two-factor?",
                    text: `Removes the authenticator and backup codes of ${id} and ends every session; the player `
                        + "signs in with the password alone and may enrol again.",
                });
                if (!reason) return;
                const done = await run(twoFactorStatus, () => session.call(`${identityAdmin}/ResetTwoFactor`,
                    { userId: id }, { reason }), (result) => `${result.wasEnabled ? "Two-factor removed"
                    : "Two-factor was not enabled"}; ${result.revokedSessions ?? 0} sessions ended.`);
                if (done) await Promise.all([loadProfile(), loadSessions(false)]);
            },
        }, "Reset two-factor…");

        // Deletion: the latest of the player's deletions (ListAccountDeletions), forced now or cancelled by support.
        const deletionStatus = statusLine("player-deletion-status");
        const deletionBody = el("div", { id: "player-deletion" });
        const forceDeletion = el("button", {
            type: "button", id: "force-deletion", class: "danger", onclick: async () => {
                const reason = await confirmWithReason({
                    title: "Delete this account now?",
                    text: `Erases ${id} in every service at once, without the grace period; only the ledger keeps its `
                        + "rows, under a tombstone id. This cannot be undone.",
                });
                if (!reason) return;
                const done = await run(deletionStatus, () => session.call(`${identityAdmin}/ForceAccountDeletion`,
                    { userId: id, reason }, { reason }), () => "Deletion started.");
                if (done) await loadDeletion(false);
            },
        }, "Delete now…");
        const cancelDeletion = el("button", {
            type: "button", id: "cancel-deletion", class: "secondary", onclick: async () => {
                const reason = await confirmWithReason({ title: "Cancel the deletion?", text: `Keeps ${id}.` });
                if (!reason) return;
                const done = await run(deletionStatus, () => session.call(`${identityAdmin}/CancelAccountDeletion`,
                    { userId: id, reason }, { reason }), () => "Deletion cancelled.");
                if (done) await loadDeletion(false);
            },
        }, "Cancel the deletion…");
        const loadDeletion = async (announce = true) => {
            const call = () => session.call(`${identityAdmin}/ListAccountDeletions`, { userId: id, pageSize: 1 });
            const answer = await (announce ? run(deletionStatus, call, () => "") : call().catch(() => null));
            if (!answer) return;
            const latest = (answer.deletions ?? [])[0];
            const state = latest ? enumText(latest.status, "ACCOUNT_DELETION_STATUS_") : "none";
            const waiting = latest?.pendingParticipants ?? [];
            const summary = el("p", { id: "player-deletion-state", "data-state": state }, latest
                ? `Deletion ${state}: requested ${when(latest.requestedAtUnixMs)}, due ${when(latest.dueAtUnixMs)}`
                    + (waiting.length ? `; waiting for ${waiting.join(", ")}.` : ".")
                : "No deletion requested.");
            const actions = state === "scheduled" ? [forceDeletion, cancelDeletion]
                : state === "none" || state === "cancelled" ? [forceDeletion] : [];
            deletionBody.replaceChildren(summary, ...actions);
        };

        // The profile and the ban card's action (ban or unban) from GetUser; false when the player is not found.
        const loadProfile = async () => {
            const answer = await run(status, () => session.call(`${identityAdmin}/GetUser`, { userId }), () => "");
            if (!answer) return false;
            id = answer.user?.profile?.userId ?? userId;
            profileBody.replaceChildren(userFacts(answer));
            banBody.replaceChildren(answer.ban ? unban : banForm);
            return true;
        };
        const loadWallet = async () => {
            const wallet = await run(walletStatus, () => session.call("rave.wallet.v1.WalletAdmin/GetUserWallet",
                { userId: id }), () => "");
            if (wallet) walletBody.replaceChildren(balancesTable(wallet.balances ?? [], "Balances"));
        };
        const loadAudit = async () => {
            const audit = await run(auditStatus, () => session.call(`${identityAdmin}/ListAuditEvents`,
                { targetUserId: id, pageSize: 20 }), () => "");
            if (audit) auditBody.replaceChildren(auditTable(audit.events ?? [], "Latest audit entries about this player"));
        };
        const revoke = async (sessionId) => {
            const reason = await confirmWithReason({
                title: sessionId ? "End this session?" : "End every session?",
                text: sessionId ? `Session ${sessionId} of ${id}: the player signs in again on that device.`
                    : `Every session of ${id}: the player signs in again everywhere.`,
            });
            if (!reason) return;
            const done = await run(sessionsStatus, () => session.call(`${identityAdmin}/RevokeUserSessions`,
                { userId: id, sessionId }, { reason }), (result) => `Ended ${result.revokedSessions ?? 0} sessions.`);
            if (done) await loadSessions(false);
        };
        const loadSessions = async (announce = true) => {
            const call = () => session.call(`${identityAdmin}/ListUserSessions`, { userId: id });
            const answer = await (announce ? run(sessionsStatus, call, () => "") : call().catch(() => null));
            if (!answer) return;
            const sessions = answer.sessions ?? [];
            sessionsBody.replaceChildren(table({
                caption: "Live sessions, newest first", rows: sessions, key: (row) => row.sessionId,
                empty: "No live session.",
                columns: [
                    { label: "Device", value: (row) => row.deviceId },
                    { label: "Application", value: (row) => el("code", {}, row.appId) },
                    { label: "Signed in", value: (row) => when(row.createdAtUnixMs) },
                    { label: "Last used", value: (row) => when(row.lastUsedAtUnixMs) },
                    { label: "End", value: (row) => el("button", { type: "button", class: "small danger",
                        "aria-label": `End the session on ${row.deviceId}`, onclick: () => revoke(row.sessionId) },
                    "End…") },
                ],
            }), sessions.length ? el("button", { type: "button", id: "revoke-all", class: "danger",
                onclick: () => revoke("") }, "End every session…") : null);
        };
        if (!(await loadProfile())) return;
        const reads = [playerMergesPanel(session, id), playerFriendsPanel(session, id, appId),
            playerLedgerPanel(session, id), playerGiftsPanel(session, id, appId), playerDevicesPanel(session, id, appId)];
        const dataExport = playerExportPanel(session, id);
        container.append(
            card("Sessions", sessionsStatus, sessionsBody),
            card("Two-factor", el("p", {}, "For a player who lost their authenticator, after checking who they are."),
                resetTwoFactor, twoFactorStatus),
            card("Ban", banBody, banStatus),
            card("Deletion", deletionBody, deletionStatus),
            dataExport.element,
            card("Wallet", walletStatus, walletBody,
                el("p", {}, el("a", { href: `#/wallet?user=${id}` }, "Deposit, withdraw or adjust"))),
            reads[2].element, reads[0].element, reads[1].element, reads[3].element, reads[4].element,
            card("Audit entries", auditStatus, auditBody));
        await Promise.all([loadSessions(), loadWallet(), loadAudit(), loadDeletion(), dataExport.load(),
            ...reads.map((read) => read.load())]);
    },
};

// MARK: - Merges

const merges = {
    title: "Merges",
    async render(container, { session, open }, query) {
        const mergeId = query.get("merge") ?? "";
        container.append(card("Find a merge", form({
            id: "merge-search", submit: "Show",
            fields: [{ name: "merge", label: "Merge id", required: true, value: mergeId }],
            onSubmit: ({ merge }) => open("merges", `merge=${encodeURIComponent(merge)}`),
        })));
        if (!mergeId) return listMerges(container, session, open, query);
        const status = statusLine("merge-status");
        const body = el("div", { id: "merge-body" });
        const retryStatus = statusLine("merge-retry-status");
        container.append(card("Merge", status, body, retryStatus));
        const answer = await run(status, () => session.call(`${identityAdmin}/GetMergeStatus`, { mergeId }), () => "");
        if (!answer) return;
        const merge = answer.merge ?? {};
        // Identity retries a failing participant with backoff (up to 5 minutes); support may have it retried now.
        const retry = async (participant) => {
            const reason = await confirmWithReason({ title: "Retry this participant now?",
                text: `${participant} is asked again for merge ${mergeId} at the next delivery poll.` });
            if (!reason) return;
            await run(retryStatus, () => session.call(`${identityAdmin}/RetryMergeParticipant`,
                { mergeId, participant }, { reason }), (result) => `${result.rescheduled ?? 0} waiting deliveries made due now.`);
        };
        const pending = merge.pendingParticipants ?? [];
        body.replaceChildren(facts([
            ["Merge id", el("code", {}, merge.mergeId)],
            ["State", el("span", { id: "merge-state" }, enumText(merge.state, "MERGE_STATE_"))],
            ["From", el("a", { href: `#/players?user=${merge.sourceUserId}` }, merge.sourceUserId)],
            ["Into", el("a", { href: `#/players?user=${merge.targetUserId}` }, merge.targetUserId)],
            ["Acknowledged by", (merge.acknowledgedBy ?? []).join(", ") || "—"],
            ["Waiting for", pending.length ? el("div", { class: "row" }, pending.map((participant) => [participant,
                el("button", { type: "button", class: "small", onclick: () => retry(participant) },
                    `Retry ${participant} now…`)])) : "—"],
            ["Started", when(merge.createdAtUnixMs)],
        ]));
    },
};

/** The merges list with its filters (state, player) and pages, newest first. */
async function listMerges(container, session, open, query) {
    const filters = Object.fromEntries(["state", "user", "page"].map((name) => [name, query.get(name) ?? ""]));
    container.append(card("Filters", form({
        id: "merge-filters", submit: "Apply", className: "grid",
        fields: [
            { name: "state", label: "State", type: "select", value: filters.state,
                options: [["", "any"], ["PENDING", "pending"], ["COMPLETED", "completed"]] },
            { name: "user", label: "Player (Rave ID, source or target)", pattern: raveIdPattern, value: filters.user },
        ],
        onSubmit: (values) => open("merges", new URLSearchParams(
            Object.entries(values).filter(([, value]) => value)).toString()),
    })));
    const status = statusLine("merges-status");
    const body = el("div", { id: "merges-body" });
    container.append(card("Merges", el("p", {}, "A pending merge waits for the participants named; identity retries ",
        "each one with backoff until it answers."), status, body));
    const answer = await run(status, () => session.call(`${identityAdmin}/ListMerges`, {
        state: filters.state ? `MERGE_STATE_${filters.state}` : "MERGE_STATE_UNSPECIFIED", userId: filters.user,
        pageSize: 50, pageToken: filters.page,
    }), (result) => `${(result.merges ?? []).length} merges${result.nextPageToken ? " (more on the next page)" : ""}.`);
    if (!answer) return;
    const kept = Object.entries(filters).filter(([name, value]) => value && name !== "page");
    const next = answer.nextPageToken ? el("a", { id: "merges-next",
        href: `#/merges?${new URLSearchParams([...kept, ["page", answer.nextPageToken]])}` }, "Next page") : null;
    body.replaceChildren(mergesTable(answer.merges ?? [], "Merges, newest first"), next);
}

// MARK: - Audit log

const actions = ["BAN_USER", "UNBAN_USER", "CREATE_OPERATOR", "SET_OPERATOR_ROLE", "DISABLE_OPERATOR", "ADMIN_CALL"];

const audit = {
    title: "Audit log",
    async render(container, { session, open }, query) {
        const filters = Object.fromEntries(["user", "action", "operator", "method", "since", "before", "page"]
            .map((name) => [name, query.get(name) ?? ""]));
        container.append(card("Filters", form({
            id: "audit-filters", submit: "Apply", className: "grid",
            fields: [
                { name: "user", label: "Player (Rave ID)", pattern: raveIdPattern, value: filters.user },
                { name: "action", label: "Action", type: "select", value: filters.action,
                    options: [["", "any"], ...actions.map((action) => [action, enumText(action, "")])] },
                { name: "operator", label: "Operator id", value: filters.operator },
                { name: "method", label: "Method", value: filters.method,
                    placeholder: "rave.wallet.v1.WalletAdmin/Deposit" },
                { name: "since", label: "From", type: "datetime-local", value: filters.since },
                { name: "before", label: "Before", type: "datetime-local", value: filters.before },
            ],
            onSubmit: (values) => open("audit", new URLSearchParams(
                Object.entries(values).filter(([, value]) => value)).toString()),
        })));
        const request = {
            targetUserId: filters.user, operatorId: filters.operator, method: filters.method, pageSize: 50,
            pageToken: filters.page,
            action: filters.action ? `AUDIT_ACTION_${filters.action}` : "AUDIT_ACTION_UNSPECIFIED",
            sinceUnixMs: filters.since ? String(new Date(filters.since).getTime()) : "0",
            beforeUnixMs: filters.before ? String(new Date(filters.before).getTime()) : "0",
        };
        const status = statusLine("audit-status");
        const body = el("div", { id: "audit-body" });
        container.append(card("Entries", status, body));
        const answer = await run(status, () => session.call(`${identityAdmin}/ListAuditEvents`, request),
            (result) => `${(result.events ?? []).length} entries${result.nextPageToken ? " (more on the next page)" : ""}.`);
        if (!answer) return;
        const next = answer.nextPageToken
            ? el("a", { href: `#/audit?${new URLSearchParams({ ...Object.fromEntries(Object.entries(filters).filter(([, v]) => v)), page: answer.nextPageToken })}` }, "Next page")
            : null;
        body.replaceChildren(auditTable(answer.events ?? [], "Audit entries, newest first"), next);
    },
};

// MARK: - Operators

const roles = [["OPERATOR_ROLE_VIEWER", "viewer"], ["OPERATOR_ROLE_SUPPORT", "support"],
    ["OPERATOR_ROLE_OPERATOR", "operator"], ["OPERATOR_ROLE_OWNER", "owner"]];

function scopeOf({ publisher }) {
    return publisher === "*" || publisher === "" ? { allPublishers: true, publisherId: "" }
        : { allPublishers: false, publisherId: publisher };
}

const operators = {
    title: "Operators",
    async render(container, { session, open }) {
        const own = session.account ?? {};
        const status = statusLine("operators-status");
        const body = el("div", { id: "operators-body" });
        const createStatus = statusLine("operator-create-status");
        const created = el("div", { id: "operator-created" });
        const scopeHint = "A publisher id, or * for every publisher (owners only).";
        const createForm = form({
            id: "operator-create", submit: "Create…", className: "grid",
            fields: [
                { name: "email", label: "Email", type: "email", required: true },
                { name: "role", label: "Role", type: "select", options: roles },
                { name: "publisher", label: "Publisher", value: own.allPublishers ? "*" : own.publisherId, hint: scopeHint },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Create an operator?", text: `${values.email} as ${enumText(values.role, "OPERATOR_ROLE_")}.` });
                if (!reason) return;
                const answer = await run(createStatus, () => session.call(`${identityAdmin}/CreateOperator`,
                    { email: values.email, role: values.role, ...scopeOf(values), reason }, { reason }),
                () => "Created. Give the enrolment code to the operator over a channel you trust; it is shown once.");
                if (!answer) return;
                created.replaceChildren(facts([
                    ["Operator", answer.account?.email ?? ""],
                    ["Enrolment code", el("code", { id: "enrolment-code" }, answer.enrolmentCode)],
                    ["Valid until", when(answer.enrolmentExpiresAtUnixMs)],
                ]));
                await load();
            },
        });
        container.append(card("Operators", status, body), card("New operator", createForm, createStatus, created));

        const change = async (operator, kind) => {
            const role = kind === "role" ? document.getElementById(`role-of-${operator.operatorId}`).value : "";
            const text = kind === "role" ? `${operator.email} becomes ${enumText(role, "OPERATOR_ROLE_")}.`
                : `${operator.email} is disabled for good; their sessions end now.`;
            const reason = await confirmWithReason({ title: kind === "role" ? "Change the role?" : "Disable this operator?", text });
            if (!reason) return;
            const done = await run(status, () => (kind === "role"
                ? session.call(`${identityAdmin}/SetOperatorRole`, {
                    operatorId: operator.operatorId, role, reason,
                    allPublishers: Boolean(operator.allPublishers), publisherId: operator.publisherId ?? "",
                }, { reason })
                : session.call(`${identityAdmin}/DisableOperator`, { operatorId: operator.operatorId, reason }, { reason })),
            () => (kind === "role" ? "Role changed." : "Disabled."));
            if (done) await load(false);
        };
        // ListOperators is an owner's read: no reason, no audit entry.
        const list = () => session.call(`${identityAdmin}/ListOperators`, {});
        const load = async (announce = true) => {
            const answer = await (announce
                ? run(status, list, (result) => `${(result.operators ?? []).length} operators.`)
                : list().catch(() => null));
            if (!answer) return;
            body.replaceChildren(table({
                caption: "Operator accounts, by email", rows: answer.operators ?? [], key: (row) => row.email,
                columns: [
                    { label: "Email", value: (row) => row.email },
                    { label: "Role", value: (row) => enumText(row.role, "OPERATOR_ROLE_") },
                    { label: "Publisher", value: (row) => (row.allPublishers ? "every publisher" : row.publisherId) },
                    { label: "State", value: (row) => (row.disabled ? "disabled" : row.enrolled ? "active" : "not enrolled") },
                    { label: "Created", value: (row) => when(row.createdAtUnixMs) },
                    {
                        label: "Change", value: (row) => (row.disabled || row.operatorId === own.operatorId ? "—" : el("div", { class: "row" },
                            el("label", { for: `role-of-${row.operatorId}`, class: "visually-hidden" }, `Role of ${row.email}`),
                            el("select", { id: `role-of-${row.operatorId}` },
                                roles.map(([value, label]) => el("option", { value, selected: value === row.role }, label))),
                            el("button", { type: "button", class: "small", onclick: () => change(row, "role") }, "Set role…"),
                            el("button", { type: "button", class: "small danger", onclick: () => change(row, "disable") }, "Disable…"))),
                    },
                ],
            }));
        };
        await load();
    },
};

export const peoplePages = { overview, players, merges, audit, operators };
export { balancesTable };
