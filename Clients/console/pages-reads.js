// The console's read-only panels over the operator read methods: a player's merges, friends, ledger, gifts and
// devices; an application's boards, top scores, standings and achievements; currencies, games and the merges list.
// Each panel is a card with a status line; the pages place them.

import { card, el, enumText, facts, form, raveIdPattern, run, statusLine, table, when } from "./ui.js";

const identityAdmin = "rave.identity.v1.IdentityAdmin";
const walletAdmin = "rave.wallet.v1.WalletAdmin";
const leaderboardsAdmin = "rave.leaderboards.v1.LeaderboardsAdmin";

/** A Rave ID as a link to its player page. */
export function playerLink(userId) {
    return userId ? el("a", { href: `#/players?user=${userId}` }, el("code", {}, userId)) : "—";
}

/** Microseconds since the epoch (a number or a string) as local date and time. */
export function whenMicros(micros) {
    return when(Math.floor(Number(micros ?? 0) / 1000));
}

/** A card whose body a `load(status, body)` fills; answers `{element, load}`. */
export function panel(title, id, load) {
    const status = statusLine(`${id}-status`);
    const body = el("div", { id });
    return { element: card(title, status, body), load: () => load(status, body) };
}

/** A note in place of a panel that needs the application chosen in the menu. */
function needsAppNote(id, what) {
    return el("p", { id, class: "empty" }, `Choose an application in the menu (Application) to see ${what}.`);
}

// MARK: - Merges

export function mergesTable(merges, caption) {
    return table({
        caption, rows: merges, key: (row) => row.mergeId, empty: "No merges.",
        columns: [
            { label: "Merge", value: (row) => el("a", { href: `#/merges?merge=${row.mergeId}` }, el("code", {}, row.mergeId)) },
            { label: "State", value: (row) => el("span", { class: "badge", dataset: { state: enumText(row.state, "MERGE_STATE_") } },
                enumText(row.state, "MERGE_STATE_")) },
            { label: "From", value: (row) => playerLink(row.sourceUserId) },
            { label: "Into", value: (row) => playerLink(row.targetUserId) },
            { label: "Waiting for", value: (row) => (row.pendingParticipants ?? []).join(", ") || "—" },
            { label: "Started", value: (row) => when(row.createdAtUnixMs) },
        ],
    });
}

/** The player's merges (as source or target) and the ids merged into the player. */
export function playerMergesPanel(session, userId) {
    return panel("Merges", "player-merges", async (status, body) => {
        const answer = await run(status, () => session.call(`${identityAdmin}/ListMerges`, { userId, pageSize: 20 }),
            () => "");
        if (!answer) return;
        const merged = answer.mergedUserIds ?? [];
        body.replaceChildren(
            facts([["Merged ids", el("span", { id: "player-merged-ids" },
                merged.length ? merged.flatMap((id, index) => [index ? ", " : "", playerLink(id)]) : "none")]]),
            mergesTable(answer.merges ?? [], "Merges of this player, newest first"));
    });
}

// MARK: - A player's social counts, ledger, gifts and devices

/** Friends, requests and followers in every list the application sees, and the player's blocks. */
export function playerFriendsPanel(session, userId, appId) {
    return panel("Friends and followers", "player-friends", async (status, body) => {
        if (!appId) return body.replaceChildren(needsAppNote("player-friends-needs-app", "friends and followers"));
        const answer = await run(status, () => session.call("rave.social.v1.SocialAdmin/GetUserCounts",
            { appId, userId }), () => "");
        if (!answer) return;
        const friends = (answer.lists ?? []).find((list) => list.listKey === "friends") ?? {};
        body.replaceChildren(
            facts([
                ["Friends", el("span", { id: "player-friends-count" }, String(friends.friends ?? 0))],
                ["Blocked", String(answer.blocked ?? 0)],
            ]),
            table({
                caption: "Counts per list", rows: answer.lists ?? [], key: (row) => row.listKey,
                columns: [
                    { label: "List", value: (row) => row.listKey },
                    { label: "Kind", value: (row) => enumText(row.kind, "LIST_KIND_") },
                    { label: "Friends", value: (row) => String(row.friends ?? 0) },
                    { label: "Requests in / out", value: (row) => `${row.incomingRequests ?? 0} / ${row.outgoingRequests ?? 0}` },
                    { label: "Followers", value: (row) => String(row.followers ?? 0) },
                    { label: "Following", value: (row) => String(row.following ?? 0) },
                ],
            }));
    });
}

export function ledgerTable(entries, caption) {
    return table({
        caption, rows: entries, key: (row) => `${row.transferId}/${row.amount}`, empty: "No ledger entries.",
        columns: [
            { label: "When", value: (row) => whenMicros(row.createdAtUnixMicros) },
            { label: "What", value: (row) => row.code },
            { label: "Amount", value: (row) => `${row.amount} ${row.currency}` },
            { label: "Balance after", value: (row) => row.balanceAfter },
            { label: "Economy", value: (row) => enumText(row.economy, "ECONOMY_") },
            { label: "Game", value: (row) => row.gameId || "main" },
            { label: "Transfer", value: (row) => row.transferId },
        ],
    });
}

/** The player's latest ledger entries, with a link to the wallet page's whole ledger. */
export function playerLedgerPanel(session, userId) {
    return panel("Recent ledger entries", "player-ledger", async (status, body) => {
        const answer = await run(status, () => session.call(`${walletAdmin}/ListUserTransactions`,
            { userId, pageSize: 5 }), () => "");
        if (!answer) return;
        body.replaceChildren(ledgerTable(answer.entries ?? [], "The latest 5 entries, newest first"),
            el("p", {}, el("a", { id: "player-ledger-all", href: `#/wallet?user=${userId}` }, "The whole ledger")));
    });
}

/** The gifts the player sent or received in the application, in every state. */
export function playerGiftsPanel(session, userId, appId) {
    return panel("Gifts", "player-gifts", async (status, body) => {
        if (!appId) return body.replaceChildren(needsAppNote("player-gifts-needs-app", "gifts"));
        const answer = await run(status, () => session.call("rave.gifts.v1.GiftsAdmin/ListUserGifts",
            { appId, userId, pageSize: 20 }), () => "");
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Gifts sent and received, newest first (the latest 20)", rows: answer.gifts ?? [],
            key: (row) => row.giftId, empty: "No gifts in this application.",
            columns: [
                { label: "Sent", value: (row) => when(row.sentAtUnixMs) },
                { label: "Gift", value: (row) => `${row.giftTypeName || row.giftTypeKey} (${row.giftTypeKey})` },
                { label: "Direction", value: (row) => (row.senderId === userId ? "sent" : "received") },
                { label: "Other player", value: (row) => playerLink(row.senderId === userId ? row.recipientId : row.senderId) },
                { label: "State", value: (row) => enumText(row.state, "GIFT_STATE_") },
                { label: "Expires", value: (row) => when(row.expiresAtUnixMs) },
            ],
        }));
    });
}

/** The player's registered devices in the application; tokens come masked from the server. */
export function playerDevicesPanel(session, userId, appId) {
    return panel("Push devices", "player-devices", async (status, body) => {
        if (!appId) return body.replaceChildren(needsAppNote("player-devices-needs-app", "push devices"));
        const answer = await run(status, () => session.call("rave.push.v1.PushAdmin/ListUserDevices",
            { appId, userId }), () => "");
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Registered devices, newest registration first", rows: answer.devices ?? [],
            key: (row) => `${row.platform}/${row.token}/${row.registeredAtMicros}`, empty: "No device registered.",
            columns: [
                { label: "Platform", value: (row) => enumText(row.platform, "PLATFORM_") },
                { label: "Token", value: (row) => el("code", {}, row.token) },
                { label: "Registered", value: (row) => whenMicros(row.registeredAtMicros) },
                { label: "Push consent", value: (row) => (row.consent?.push ? "yes" : "no") },
                { label: "Country / language", value: (row) => `${row.country || "—"} / ${row.language || "—"}` },
                { label: "Time zone", value: (row) => row.timeZone || "—" },
                { label: "Sandbox", value: (row) => (row.sandbox ? "yes" : "no") },
            ],
        }));
    });
}

// MARK: - Leaderboards and achievements

export function scoresTable(scores, caption) {
    return table({
        caption, rows: scores, key: (row) => row.userId, empty: "No scores yet.",
        columns: [
            { label: "Position", value: (row) => String(row.position ?? "") },
            { label: "Player", value: (row) => playerLink(row.userId) },
            { label: "Name", value: (row) => row.displayName || "—" },
            { label: "Score", value: (row) => String(row.score ?? 0) },
            { label: "Set", value: (row) => when(row.setAtUnixMs) },
        ],
    });
}

/**
 * The application's boards with their top scores and a player's standing: a table of boards, and a form choosing
 * a board, how many scores and optionally a player.
 */
export function boardsPanel(session, appId) {
    const status = statusLine("boards-status");
    const body = el("div", { id: "boards" });
    const scoresStatus = statusLine("top-scores-status");
    const scores = el("div", { id: "top-scores" });
    const standingStatus = statusLine("standing-status");
    const standing = el("div", { id: "standing" });
    const lookup = form({
        id: "scores-form", submit: "Show", className: "grid",
        fields: [
            { name: "board", label: "Board key", required: true, pattern: "[A-Za-z0-9._-]{1,64}" },
            { name: "count", label: "Top", type: "number", min: 1, max: 100, value: "10", hint: "1…100 scores." },
            { name: "user", label: "A player's standing (Rave ID, optional)", pattern: raveIdPattern },
        ],
        onSubmit: (values) => show(values),
    });
    const show = async ({ board, count, user }) => {
        const top = await run(scoresStatus, () => session.call(`${leaderboardsAdmin}/GetTopScores`,
            { appId, leaderboardKey: board, count: Number(count || 10) }),
        (result) => `${(result.scores ?? []).length} of ${result.total ?? 0} entries (version ${result.version ?? 1}).`);
        if (top) scores.replaceChildren(scoresTable(top.scores ?? [], `Top ${count || 10} of ${board}`));
        if (!user) return standing.replaceChildren();
        const answer = await run(standingStatus, () => session.call(`${leaderboardsAdmin}/GetUserStanding`,
            { appId, leaderboardKey: board, userId: user }), () => "");
        if (!answer) return;
        const best = answer.leaderboard?.standing;
        standing.replaceChildren(facts([
            ["Player", playerLink(user)],
            ["Standing", el("span", { id: "standing-text" }, best
                ? `#${best.globalPosition} with ${best.highScore} (friends #${best.friendsPosition})` : "no score on this board")],
            ["Set", best ? when(best.setAtUnixMs) : "—"],
        ]));
    };
    const load = async () => {
        const answer = await run(status, () => session.call(`${leaderboardsAdmin}/ListLeaderboards`, { appId }),
            (result) => `${(result.leaderboards ?? []).length} boards.`);
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Boards, in display order", rows: answer.leaderboards ?? [], key: (row) => row.definition?.key,
            empty: "No boards yet: define one below.",
            columns: [
                { label: "Key", value: (row) => row.definition?.key },
                { label: "Name", value: (row) => row.definition?.name },
                { label: "Order", value: (row) => String(row.definition?.sorter ?? 0) },
                { label: "Better", value: (row) => (row.definition?.ascending ? "lower" : "higher") },
                { label: "Resets", value: (row) => enumText(row.definition?.resetInterval ?? "RESET_INTERVAL_NONE", "RESET_INTERVAL_") },
                { label: "Active", value: (row) => (row.definition?.active ? "yes" : "no") },
                { label: "Version", value: (row) => String(row.currentVersion ?? 1) },
                { label: "Entries", value: (row) => String(row.entryCount ?? 0) },
                { label: "Scores", value: (row) => el("button", { type: "button", class: "small",
                    onclick: () => {
                        lookup.fill({ board: row.definition?.key });
                        show({ board: row.definition?.key, count: lookup.inputs.count.value, user: lookup.inputs.user.value.trim() });
                    } }, `Top of ${row.definition?.key}`) },
            ],
        }));
    };
    return {
        elements: [card("Boards", status, body), card("Top scores and a player's standing", lookup, scoresStatus, scores,
            standingStatus, standing)],
        load,
    };
}

export function achievementsPanel(session, appId) {
    return panel("Achievements", "achievements", async (status, body) => {
        const answer = await run(status, () => session.call(`${leaderboardsAdmin}/ListAchievements`, { appId }),
            (result) => `${(result.definitions ?? []).length} achievements.`);
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Achievements, by key", rows: answer.definitions ?? [], key: (row) => row.key,
            empty: "No achievements yet: define one below.",
            columns: [
                { label: "Key", value: (row) => row.key },
                { label: "Name", value: (row) => row.name },
                { label: "Description", value: (row) => row.description || "—" },
            ],
        }));
    });
}

// MARK: - Wallet catalog

export function currenciesPanel(session) {
    return panel("Currencies", "currencies", async (status, body) => {
        const answer = await run(status, () => session.call(`${walletAdmin}/ListCurrencies`, {}),
            (result) => `${(result.currencies ?? []).length} currencies.`);
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Currencies, by code", rows: answer.currencies ?? [], key: (row) => row.code,
            columns: [
                { label: "Code", value: (row) => row.code },
                { label: "Decimals", value: (row) => String(row.decimals ?? 0) },
            ],
        }));
    });
}

function gameKind(game) {
    if (game.slot) return "slot";
    if (game.odds) return `odds: ${game.odds.winningNumbers ?? 0} of ${game.odds.sides ?? 0} pays `
        + `${game.odds.multiplierNumerator ?? 0}/${game.odds.multiplierDenominator ?? 1}`;
    return "—";
}

export function gamesPanel(session) {
    return panel("Games", "games", async (status, body) => {
        const answer = await run(status, () => session.call(`${walletAdmin}/ListGames`, {}),
            (result) => `${(result.games ?? []).length} games.`);
        if (!answer) return;
        body.replaceChildren(table({
            caption: "Games, by id, with their theoretical return to player", rows: answer.games ?? [],
            key: (row) => row.gameId,
            columns: [
                { label: "Game", value: (row) => row.gameId },
                { label: "Name", value: (row) => row.name },
                { label: "Kind", value: (row) => gameKind(row) },
                { label: "Return to player", value: (row) => row.returnToPlayer || "—" },
            ],
        }));
    });
}

/** A player's whole ledger, a page at a time (`pageToken` from the address). */
export function ledgerPanel(session, userId, pageToken) {
    return panel("Ledger", "wallet-ledger", async (status, body) => {
        const answer = await run(status, () => session.call(`${walletAdmin}/ListUserTransactions`,
            { userId, pageSize: 50, pageToken }),
        (result) => `${(result.entries ?? []).length} entries${result.nextPageToken ? " (more on the next page)" : ""}.`);
        if (!answer) return;
        const next = answer.nextPageToken ? el("a", { id: "ledger-next",
            href: `#/wallet?${new URLSearchParams({ user: userId, page: answer.nextPageToken })}` }, "Next page") : null;
        body.replaceChildren(ledgerTable(answer.entries ?? [], `Ledger of ${userId}, newest first`), next);
    });
}
