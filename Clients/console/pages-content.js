// The console's pages about game content and money: leaderboards, gifts, push and wallet.

import { balancesTable } from "./pages-people.js";
import { achievementsPanel, boardsPanel, currenciesPanel, gamesPanel, ledgerPanel } from "./pages-reads.js";
import { defaultLanguagePanel, deliveriesPanel, eligibilityPanel } from "./panels-writes.js";
import { card, confirmWithReason, el, enumText, facts, form, newId, raveIdPattern, run, showStatus, statusLine, table } from "./ui.js";

export function needsApp(container, appId) {
    if (appId) return false;
    container.append(card("Choose an application",
        el("p", { id: "needs-app" }, "This page acts on one application: enter its id in the menu (Application).")));
    return true;
}

// MARK: - Leaderboards

const intervals = ["NONE", "HOURLY", "DAILY", "WEEKLY", "MONTHLY"].map((name) =>
    [`RESET_INTERVAL_${name}`, name.toLowerCase()]);

const leaderboards = {
    title: "Leaderboards",
    async render(container, { session, appId }) {
        if (needsApp(container, appId)) return;
        const boards = boardsPanel(session, appId);
        const achievements = achievementsPanel(session, appId);
        container.append(...boards.elements, achievements.element);
        const boardStatus = statusLine("board-status");
        const boardResult = el("div", { id: "board-result" });
        const boardForm = form({
            id: "board-form", submit: "Save board…", className: "grid",
            fields: [
                { name: "key", label: "Key", required: true, pattern: "[A-Za-z0-9._-]{1,64}",
                    hint: "Saving an existing key replaces its definition (edit)." },
                { name: "name", label: "Name", required: true },
                { name: "sorter", label: "Display order", type: "number", min: 1, value: "1" },
                { name: "interval", label: "Resets", type: "select", options: intervals },
                { name: "ascending", label: "Lower score is better", type: "checkbox" },
                { name: "active", label: "Active", type: "checkbox", value: true },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Save this leaderboard?", text: `Board ${values.key}.` });
                if (!reason) return;
                const answer = await run(boardStatus, () => session.call(
                    "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard", {
                        appId, definition: {
                            key: values.key, name: values.name, sorter: Number(values.sorter || 1),
                            ascending: values.ascending, resetInterval: values.interval, active: values.active,
                        },
                    }, { reason }), () => "Saved.");
                if (!answer) return;
                boardResult.replaceChildren(el("pre", { id: "board-json" }, JSON.stringify(answer.leaderboard ?? {}, null, 2)));
                await boards.load();
            },
        });
        container.append(card("Leaderboard definition", boardForm, boardStatus, boardResult));

        const achievementStatus = statusLine("achievement-status");
        const achievementForm = form({
            id: "achievement-form", submit: "Save achievement…", className: "grid",
            fields: [
                { name: "key", label: "Key", required: true, pattern: "[A-Za-z0-9._-]{1,64}",
                    hint: "Saving an existing key replaces its definition (edit)." },
                { name: "name", label: "Name", required: true },
                { name: "description", label: "Description", type: "textarea" },
                { name: "imageUrl", label: "Image URL", type: "url" },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Save this achievement?", text: `Achievement ${values.key}.` });
                if (!reason) return;
                const done = await run(achievementStatus, () => session.call("rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement",
                    { appId, definition: values }, { reason }), () => `Saved achievement ${values.key}.`);
                if (done) await achievements.load();
            },
        });
        container.append(card("Achievement definition", achievementForm, achievementStatus));

        // RebuildIndex: the board's in-memory rank index reloaded from its table (after a bulk load, or to check it).
        const rebuildStatus = statusLine("rebuild-status");
        container.append(card("Rebuild a board's index", el("p", {}, "Reloads the current version's rank index from ",
            "the stored scores, e.g. after scores were loaded into the table directly."), form({
            id: "rebuild-form", submit: "Rebuild the index…",
            fields: [{ name: "key", label: "Board key", required: true, pattern: "[A-Za-z0-9._-]{1,64}" }],
            onSubmit: async ({ key }) => {
                const reason = await confirmWithReason({ title: "Rebuild this board's index?", text: `Board ${key}.` });
                if (!reason) return;
                const done = await run(rebuildStatus, () => session.call(
                    "rave.leaderboards.v1.LeaderboardsAdmin/RebuildIndex", { appId, leaderboardKey: key }, { reason }),
                (result) => `Rebuilt ${key}: ${result.entryCount ?? 0} entries in the index.`);
                if (done) await boards.load();
            },
        }), rebuildStatus));
        await Promise.all([boards.load(), achievements.load()]);
    },
};

// MARK: - Gifts

const gifts = {
    title: "Gifts",
    async render(container, { session, appId }) {
        if (needsApp(container, appId)) return;
        const status = statusLine("gift-types-status");
        const body = el("div", { id: "gift-types" });
        const formStatus = statusLine("gift-type-status");
        let editing = false;
        const giftForm = form({
            id: "gift-type-form", submit: "Save gift type…", className: "grid",
            fields: [
                { name: "key", label: "Key", required: true, pattern: "[A-Za-z0-9._-]{1,64}" },
                { name: "name", label: "Name", required: true },
                { name: "imageUrl", label: "Image URL", type: "url" },
                { name: "expirySeconds", label: "Expiry (seconds; 0: 14 days)", type: "number", min: 0, value: "0" },
                { name: "dailyLimitPerSender", label: "Daily limit per sender (0: none)", type: "number", min: 0, value: "0" },
                { name: "requestable", label: "Players may request it", type: "checkbox" },
            ],
            onSubmit: async (values) => {
                const method = editing ? "UpdateGiftType" : "CreateGiftType";
                const reason = await confirmWithReason({ title: editing ? "Update this gift type?" : "Create this gift type?", text: `Gift type ${values.key}.` });
                if (!reason) return;
                const giftType = { ...values, expirySeconds: String(values.expirySeconds || 0),
                    dailyLimitPerSender: Number(values.dailyLimitPerSender || 0) };
                const done = await run(formStatus, () => session.call(`rave.gifts.v1.GiftsAdmin/${method}`,
                    { appId, giftType }, { reason }), () => (editing ? "Updated." : "Created."));
                if (done) await load();
            },
        });
        // The form gets the gift type as stored now (GetGiftType), not as the list showed it.
        const edit = async (key) => {
            const answer = await run(formStatus, () => session.call("rave.gifts.v1.GiftsAdmin/GetGiftType",
                { appId, key }), () => `Editing ${key}.`);
            if (!answer) return;
            const row = answer.giftType ?? {};
            editing = true;
            giftForm.querySelector("button[type=submit]").textContent = "Update gift type…";
            giftForm.fill({ ...row, expirySeconds: row.expirySeconds ?? "0", dailyLimitPerSender: row.dailyLimitPerSender ?? 0 });
        };
        const load = async () => {
            const answer = await run(status, () => session.call("rave.gifts.v1.GiftsAdmin/ListGiftTypes", { appId }),
                (result) => `${(result.giftTypes ?? []).length} gift types.`);
            if (!answer) return;
            body.replaceChildren(table({
                caption: "Gift types, by key", rows: answer.giftTypes ?? [], key: (row) => row.key,
                columns: [
                    { label: "Key", value: (row) => row.key },
                    { label: "Name", value: (row) => row.name },
                    { label: "Requestable", value: (row) => (row.requestable ? "yes" : "no") },
                    { label: "Expiry", value: (row) => `${row.expirySeconds ?? 0} s` },
                    { label: "Daily limit", value: (row) => String(row.dailyLimitPerSender ?? 0) },
                    { label: "Edit", value: (row) => el("button", { type: "button", class: "small", onclick: () => edit(row.key) },
                        `Edit ${row.key}`) },
                ],
            }));
        };
        container.append(card("Gift types", status, body), card("Create or edit", giftForm, formStatus));
        await load();
    },
};

// MARK: - Push

const push = {
    title: "Push",
    async render(container, { session, appId }) {
        if (needsApp(container, appId)) return;
        const status = statusLine("templates-status");
        const body = el("div", { id: "templates" });
        const formStatus = statusLine("template-status");
        const load = async () => {
            const answer = await run(status, () => session.call("rave.push.v1.PushAdmin/ListTemplates", { appId }),
                (result) => `${(result.templates ?? []).length} templates; default language ${result.defaultLanguage || "not set"}.`);
            if (!answer) return;
            defaultLanguage.show(answer.defaultLanguage ?? "");
            const remove = async (row) => {
                const reason = await confirmWithReason({ title: "Delete this template?", text: `${row.topic} in ${row.language}.` });
                if (!reason) return;
                const done = await run(formStatus, () => session.call("rave.push.v1.PushAdmin/DeleteTemplate",
                    { appId, topic: row.topic, language: row.language }, { reason }), () => "Deleted.");
                if (done) await load();
            };
            const columns = [
                { label: "Topic", value: (row) => row.topic },
                { label: "Language", value: (row) => row.language },
                { label: "Title", value: (row) => row.title },
                { label: "Body", value: (row) => row.body },
            ];
            body.replaceChildren(
                table({ caption: "This application's templates", rows: answer.templates ?? [], key: (row) => `${row.topic}/${row.language}`,
                    empty: "No templates of its own: the built-in ones below apply.",
                    columns: [...columns, { label: "Actions", value: (row) => el("div", { class: "row" },
                        el("button", { type: "button", class: "small", onclick: () => templateForm.fill(row) }, "Edit"),
                        el("button", { type: "button", class: "small danger", onclick: () => remove(row) }, "Delete…")) }] }),
                table({ caption: "Built-in templates", rows: answer.builtIn ?? [], columns }));
        };
        const templateForm = form({
            id: "template-form", submit: "Save template…", className: "grid",
            fields: [
                { name: "topic", label: "Topic", required: true, placeholder: "gifts.gift_received" },
                { name: "language", label: "Language (BCP 47)", required: true, value: "en" },
                { name: "title", label: "Title", required: true },
                { name: "body", label: "Body", type: "textarea", required: true },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Save this template?", text: `${values.topic} in ${values.language}.` });
                if (!reason) return;
                const done = await run(formStatus, () => session.call("rave.push.v1.PushAdmin/SetTemplate",
                    { appId, template: values }, { reason }), () => "Saved.");
                if (done) await load();
            },
        });
        const defaultLanguage = defaultLanguagePanel(session, appId, () => load());
        const deliveries = deliveriesPanel(session);
        const sendStatus = statusLine("send-status");
        const sendForm = form({
            id: "send-form", submit: "Send…", className: "grid",
            fields: [
                { name: "user", label: "Players (Rave IDs, separated by spaces or commas; 1…1000)", type: "textarea",
                    rows: 2, required: true },
                { name: "title", label: "Title", required: true, value: "Test" },
                { name: "body", label: "Body", type: "textarea", required: true, value: "A test notification." },
                { name: "more", label: "More of the notification (optional JSON)", type: "textarea", rows: 3,
                    maxlength: 100000,
                    hint: "Any other field of Notification: data, category, collapseKey, ttlSeconds, nightPolicy, "
                        + "localizations, e.g. {\"data\": [{\"key\": \"level\", \"value\": \"7\"}], \"ttlSeconds\": 600}." },
            ],
            onSubmit: async (values) => {
                let more = {};
                if (values.more.trim()) {
                    try {
                        more = JSON.parse(values.more);
                        if (typeof more !== "object" || more === null || Array.isArray(more)) throw new Error("not an object");
                    } catch (error) {
                        showStatus(sendStatus, "error", `More of the notification must be a JSON object: ${error.message}`);
                        return;
                    }
                }
                const userIds = values.user.split(/[\s,]+/).filter((id) => id);
                const to = userIds.length === 1 ? userIds[0] : `${userIds.length} players`;
                const reason = await confirmWithReason({ title: "Send this notification?", text: `To ${to}.` });
                if (!reason) return;
                const notificationId = newId();
                const sent = await run(sendStatus, () => session.call("rave.push.v1.PushAdmin/SendNotification", {
                    appId, userIds, notificationId,
                    notification: { ...more, title: values.title, body: values.body },
                }, { reason }), (answer) => `Queued ${answer.queued ?? 0}, held ${answer.held ?? 0}, skipped ${answer.skipped ?? 0}.`);
                if (sent) await deliveries.show(notificationId);
            },
        });
        container.append(card("Templates", status, body), card("Create or edit a template", templateForm, formStatus),
            defaultLanguage.element, card("Send a notification", sendForm, sendStatus), deliveries.element);
        await load();
    },
};

// MARK: - Wallet

const economies = [["ECONOMY_SANDBOX", "sandbox"], ["ECONOMY_REAL", "real"]];

const wallet = {
    title: "Wallet",
    async render(container, { session, open, appId }, query) {
        const userId = query.get("user") ?? "";
        const lookup = form({
            id: "wallet-user", submit: "Show wallet",
            fields: [{ name: "user", label: "Player (Rave ID)", required: true, pattern: raveIdPattern, value: userId }],
            onSubmit: ({ user }) => open("wallet", `user=${user}`),
        });
        const balances = el("div", { id: "wallet-balances" });
        const balanceStatus = statusLine("wallet-balance-status");
        container.append(card("Player wallet", lookup, balanceStatus, balances));
        const ledger = userId ? ledgerPanel(session, userId, query.get("page") ?? "") : null;
        if (ledger) container.append(ledger.element);
        const loadBalances = async () => {
            const answer = await run(balanceStatus, () => session.call("rave.wallet.v1.WalletAdmin/GetUserWallet", { userId }), () => "");
            if (answer) balances.replaceChildren(balancesTable(answer.balances ?? [], `Balances of ${userId}`));
        };

        const transferStatus = statusLine("transfer-status");
        const transferForm = form({
            id: "transfer-form", submit: "Move money…", className: "grid",
            fields: [
                { name: "kind", label: "Operation", type: "select",
                    options: [["Deposit", "deposit"], ["Withdraw", "withdraw"], ["Adjust", "adjust (± amount)"]] },
                { name: "user", label: "Player (Rave ID)", required: true, pattern: raveIdPattern, value: userId },
                { name: "currency", label: "Currency", required: true, value: "GOLD" },
                { name: "economy", label: "Economy", type: "select", options: economies },
                { name: "amount", label: "Amount", required: true, pattern: "-?[0-9]+(\\.[0-9]+)?", inputmode: "decimal" },
                { name: "gameId", label: "Game (credits only)" },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({
                    title: `${values.kind}?`, text: `${values.kind} ${values.amount} ${values.currency} (${enumText(values.economy, "ECONOMY_")}) for ${values.user}. The reason is also written in the ledger.`,
                });
                if (!reason) return;
                const transfer = { operationId: newId(), userId: values.user, currency: values.currency,
                    economy: values.economy, amount: values.amount, reason, gameId: values.gameId };
                const answer = await run(transferStatus, () => session.call(`rave.wallet.v1.WalletAdmin/${values.kind}`,
                    { transfer }, { reason }), (result) => `Done: the balance is now ${result.balance}.`);
                if (answer && values.user === userId) await Promise.all([loadBalances(), ledger?.load()]);
            },
        });
        container.append(card("Deposit, withdraw or adjust", transferForm, transferStatus));
        const currencies = currenciesPanel(session);
        const games = gamesPanel(session);
        container.append(currencies.element, games.element);

        const currencyStatus = statusLine("currency-status");
        container.append(card("New currency", form({
            id: "currency-form", submit: "Create currency…", className: "grid",
            fields: [
                { name: "code", label: "Code", required: true, pattern: "[A-Z0-9]{2,12}" },
                { name: "decimals", label: "Decimals", type: "number", min: 0, max: 8, value: "2" },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Create this currency?", text: `${values.code} with ${values.decimals} decimals.` });
                if (!reason) return;
                const done = await run(currencyStatus, () => session.call("rave.wallet.v1.WalletAdmin/CreateCurrency",
                    { code: values.code, decimals: Number(values.decimals) }, { reason }), () => `Created ${values.code}.`);
                if (done) await currencies.load();
            },
        }), currencyStatus));

        const gameStatus = statusLine("game-status");
        const gameResult = el("div", { id: "game-result" });
        container.append(card("New odds game", form({
            id: "game-form", submit: "Create game…", className: "grid",
            fields: [
                { name: "gameId", label: "Game id", required: true },
                { name: "name", label: "Name", required: true },
                { name: "sides", label: "Sides", type: "number", min: 2, value: "6" },
                { name: "winningNumbers", label: "Winning numbers", type: "number", min: 1, value: "1" },
                { name: "numerator", label: "Payout multiplier numerator", type: "number", min: 1, value: "57" },
                { name: "denominator", label: "Payout multiplier denominator", type: "number", min: 1, value: "10" },
            ],
            onSubmit: async (values) => {
                const reason = await confirmWithReason({ title: "Create this game?", text: `${values.gameId}: ${values.name}.` });
                if (!reason) return;
                const answer = await run(gameStatus, () => session.call("rave.wallet.v1.WalletAdmin/CreateGame", {
                    game: { gameId: values.gameId, name: values.name, odds: {
                        sides: Number(values.sides), winningNumbers: Number(values.winningNumbers),
                        multiplierNumerator: values.numerator, multiplierDenominator: values.denominator,
                    } },
                }, { reason }), () => "Created.");
                if (!answer) return;
                gameResult.replaceChildren(facts([["Return to player", answer.game?.returnToPlayer ?? "—"]]));
                await games.load();
            },
        }), gameStatus, gameResult));
        // Any game CreateGame takes (a slot's reels, paylines and paytable too), as the protocol's JSON.
        const definitionStatus = statusLine("game-json-status");
        container.append(card("New game from a definition", form({
            id: "game-json-form", submit: "Create game…",
            fields: [{ name: "definition", label: "The game (JSON of Game: gameId, name, and slot or odds)",
                type: "textarea", rows: 8, required: true, maxlength: 100000,
                hint: "As ravectl admin game create takes it, without the outer {\"game\": …}." }],
            onSubmit: async ({ definition }) => {
                let game;
                try {
                    game = JSON.parse(definition);
                } catch (error) {
                    showStatus(definitionStatus, "error", `The definition is not JSON: ${error.message}`);
                    return;
                }
                const reason = await confirmWithReason({ title: "Create this game?", text: `${game.gameId}: ${game.name}.` });
                if (!reason) return;
                const answer = await run(definitionStatus, () => session.call("rave.wallet.v1.WalletAdmin/CreateGame",
                    { game }, { reason }), (result) => `Created; return to player ${result.game?.returnToPlayer ?? "—"}.`);
                if (answer) await games.load();
            },
        }), definitionStatus));

        const eligibility = eligibilityPanel(session, appId);
        container.append(eligibility.element);
        await Promise.all([currencies.load(), games.load(), eligibility.load(),
            ...(userId ? [loadBalances(), ledger.load()] : [])]);
    },
};

export const contentPages = { leaderboards, gifts, push, wallet };
