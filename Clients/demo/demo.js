// Rave Dice: the demo game. Every server call goes through the browser SDK; the provably fair check is computed
// here with WebCrypto from what the wallet revealed (docs/wallet.md, "Provably fair scheme").
import { Rave, RaveError } from "/sdk/rave.js";

const game = { id: "demo-dice", sides: 6, winningNumbers: 1, numerator: 57n, denominator: 10n };
const board = "high-scores";
const currency = "GOLD";
const economy = "ECONOMY_SANDBOX";

const $ = (id) => document.getElementById(id);
const appId = new URLSearchParams(location.search).get("app");

let rave;
const state = { commitment: "", nextNonce: "", points: 0, balanceMinor: 0n, named: false, senders: new Map() };

// MARK: - Small helpers

function say(id, text, kind = "info") {
    const element = $(id);
    element.textContent = text;
    element.dataset.kind = kind;
}

function describe(error) {
    if (error instanceof RaveError) {
        $("last-request").textContent = error.requestId || "none";
        return `${error.status}: ${error.message}`;
    }
    return String(error?.message ?? error);
}

// Runs an action from a button or form: disables the control meanwhile and reports failures in `statusId`.
async function act(control, statusId, action) {
    control.disabled = true;
    try {
        await action();
    } catch (error) {
        say(statusId, describe(error), "error");
    } finally {
        control.disabled = false;
    }
}

function hex(bytes) {
    return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function bytesOfHex(text) {
    const pairs = text.match(/../g) ?? [];
    return new Uint8Array(pairs.map((pair) => parseInt(pair, 16)));
}

function randomHex(bytes) {
    return hex(crypto.getRandomValues(new Uint8Array(bytes)));
}

// "12.34" in GOLD's two decimals as minor units; null when it is not such an amount.
function minorUnits(amount) {
    const match = /^(\d+)(?:\.(\d{1,2}))?$/.exec(String(amount ?? "").trim());
    if (!match) return null;
    return BigInt(match[1]) * 100n + BigInt((match[2] ?? "").padEnd(2, "0"));
}

function formatMinor(minor) {
    return `${minor / 100n}.${String(minor % 100n).padStart(2, "0")}`;
}

// MARK: - Provably fair, in the browser

async function sha256Hex(bytes) {
    return hex(await crypto.subtle.digest("SHA-256", bytes));
}

/** The roll the wallet must have drawn: 1…sides from HMAC-SHA256(seed, "clientSeed:nonce[:round]"). */
async function expectedRoll(seedBytes, clientSeed, nonce, sides) {
    const key = await crypto.subtle.importKey("raw", seedBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const limit = Math.floor(2 ** 32 / sides) * sides;
    for (let round = 0; round < 64; round += 1) {
        const message = round === 0 ? `${clientSeed}:${nonce}` : `${clientSeed}:${nonce}:${round}`;
        const digest = new DataView(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
        for (let offset = 0; offset + 4 <= digest.byteLength; offset += 4) {
            const word = digest.getUint32(offset, false);
            if (word < limit) return (word % sides) + 1;
        }
    }
    throw new Error("no word below the limit in 64 digests");
}

function mark(id, passed, why) {
    const item = $(id);
    item.dataset.result = passed ? "pass" : "fail";
    item.querySelector(".mark").textContent = passed ? "✓" : "✗";
    item.querySelector(".why").textContent = why;
    item.setAttribute("aria-label", `${passed ? "Passed" : "Failed"}: ${item.querySelector(".what").textContent}`);
}

async function verify(result, revealed, commitmentBefore, wagerMinor) {
    const seed = bytesOfHex(revealed.serverSeed ?? "");
    const seedHash = await sha256Hex(seed);
    const committed = seedHash === commitmentBefore && seedHash === result.serverSeedHash;
    mark("check-commitment", committed, committed
        ? `SHA-256 of the revealed seed is ${seedHash.slice(0, 16)}…, as committed`
        : `SHA-256 of the revealed seed is ${seedHash.slice(0, 16)}…, but ${commitmentBefore.slice(0, 16)}… was committed`);
    const roll = await expectedRoll(seed, result.clientSeed ?? "", String(result.nonce ?? "0"), game.sides);
    const drawn = Number(result.outcome?.number ?? 0);
    mark("check-roll", roll === drawn, roll === drawn
        ? `recomputed ${roll} with nonce ${result.nonce ?? 0}`
        : `recomputed ${roll}, but the server rolled ${drawn}`);
    const payout = roll <= game.winningNumbers ? wagerMinor * game.numerator / game.denominator : 0n;
    const paid = minorUnits(result.outcome?.payout ?? result.payout ?? "0") ?? -1n;
    mark("check-payout", payout === paid, payout === paid
        ? `${formatMinor(payout)} GOLD`
        : `expected ${formatMinor(payout)} GOLD, the server paid ${formatMinor(paid)}`);
    $("revealed-seed").textContent = revealed.serverSeed ?? "";
    $("bet-nonce").textContent = String(result.nonce ?? 0);
}

// MARK: - Player

async function loadPlayer() {
    const [{ user }, wallet] = await Promise.all([
        rave.call("rave.identity.v1.Identity/GetCurrentUser"),
        rave.call("rave.wallet.v1.Wallet/GetWallet", { gameId: "" }),
    ]);
    const profile = user?.profile ?? {};
    $("rave-id").textContent = profile.userId ?? rave.userId;
    state.named = Boolean(profile.displayName);
    if (state.named && document.activeElement !== $("name-input")) $("name-input").value = profile.displayName;
    const accountState = {
        ACCOUNT_STATE_ANONYMOUS: "guest (anonymous)",
        ACCOUNT_STATE_PERSONALIZED: "personalized guest",
        ACCOUNT_STATE_AUTHENTICATED: "signed-in account",
    }[profile.accountState] ?? "guest";
    $("account-state").textContent = accountState;
    const gold = (wallet.balances ?? []).find((balance) =>
        balance.currency === currency && balance.economy === economy && !balance.gameId);
    state.balanceMinor = minorUnits(gold?.amount ?? "0") ?? 0n;
    showBalance();
    $("submit-score").disabled = !state.named;
}

function showBalance() {
    $("balance").textContent = `${formatMinor(state.balanceMinor)} (sandbox)`;
    const wager = minorUnits($("wager").value);
    const backed = wager !== null && wager > 0n && state.balanceMinor >= wager;
    $("bet-mode").textContent = backed
        ? "Backed bet: the wager leaves your GOLD and the payout comes back."
        : "Practice roll: you have no GOLD for this wager, so the bet is unbacked (the same provably fair draw, no " +
          "GOLD moves). An operator funds players with ravectl admin wallet deposit.";
    $("bet-mode").dataset.mode = backed ? "backed" : "unbacked";
}

async function saveName(event) {
    event.preventDefault();
    const name = $("name-input").value.trim();
    await act($("name-save"), "player-status", async () => {
        await rave.call("rave.identity.v1.Identity/UpdateCurrentUser", { displayName: { value: name } });
        // The access token names the account state; a fresh one no longer says "guest", so scores are accepted.
        await rave.refresh();
        await loadPlayer();
        say("player-status", `Saved. You are ${name} on the board.`);
    });
}

// MARK: - Dice

async function loadSeed() {
    const seed = await rave.call("rave.wallet.v1.Wallet/GetServerSeed");
    state.commitment = seed.serverSeedHash ?? "";
    state.nextNonce = String(seed.nextNonce ?? "0");
    $("commitment").textContent = state.commitment;
    $("next-nonce").textContent = state.nextNonce;
}

async function roll(event) {
    event.preventDefault();
    await act($("roll"), "dice-status", async () => {
        const wagerMinor = minorUnits($("wager").value);
        if (wagerMinor === null || wagerMinor <= 0n) throw new Error("the wager is an amount like 1.00");
        const commitmentBefore = state.commitment;
        const backed = state.balanceMinor >= wagerMinor;
        for (const id of ["check-commitment", "check-roll", "check-payout"]) {
            const item = $(id);
            delete item.dataset.result;
            item.querySelector(".mark").textContent = "…";
            item.querySelector(".why").textContent = "";
        }
        const { result } = await rave.call("rave.wallet.v1.Wallet/PlaceBet", {
            bet: {
                gameId: game.id, betId: randomHex(16), wager: formatMinor(wagerMinor), currency, economy,
                clientSeed: $("client-seed").value, unbacked: !backed,
            },
        });
        const number = Number(result.outcome?.number ?? 0);
        const won = number <= game.winningNumbers;
        $("die").textContent = String(number);
        $("die").setAttribute("aria-label", `You rolled ${number}`);
        $("die").dataset.won = String(won);
        state.points += won ? 25 : number;
        $("points").textContent = String(state.points);
        $("roll-outcome").textContent = won
            ? `A 1: you win ${result.payout} GOLD${backed ? "" : " (practice)"}.`
            : `A ${number}: no win this time${backed ? `; ${result.wager} GOLD wagered` : ""}.`;
        if (result.balance) state.balanceMinor = minorUnits(result.balance) ?? state.balanceMinor;
        showBalance();
        // Reveal the seed this bet used (and commit to a new one), then check the bet against it.
        const rotated = await rave.call("rave.wallet.v1.Wallet/RotateServerSeed");
        await loadSeed();
        await verify(result, rotated.revealed ?? {}, commitmentBefore, wagerMinor);
        $("client-seed").value = randomHex(8);
        say("dice-status", "");
    });
}

// MARK: - Board

async function loadBoard() {
    const [top, mine] = await rave.batch([
        { name: "top", method: "rave.leaderboards.v1.Leaderboards/GetGlobalScores",
            request: { leaderboardKey: board, page: 1, pageSize: 10 } },
        { name: "mine", method: "rave.leaderboards.v1.Leaderboards/GetLeaderboard",
            request: { leaderboardKey: board } },
    ]);
    if (top.error) throw top.error;
    if (mine.error) throw mine.error;
    const body = $("top10").querySelector("tbody");
    body.replaceChildren();
    for (const entry of top.response.scores ?? []) {
        const row = document.createElement("tr");
        const me = entry.userId === rave.userId;
        if (me) row.classList.add("me");
        row.dataset.userId = entry.userId;
        for (const text of [entry.position ?? "", entry.displayName || `${entry.userId.slice(0, 8)}…`, entry.score ?? "0"]) {
            const cell = document.createElement("td");
            cell.textContent = String(text);
            row.append(cell);
        }
        const action = document.createElement("td");
        if (!me) {
            const button = document.createElement("button");
            button.type = "button";
            button.className = "small gift-to";
            button.textContent = "Gift";
            button.setAttribute("aria-label", `Send a gift to ${entry.displayName || entry.userId}`);
            button.addEventListener("click", () => {
                $("gift-recipient").value = entry.userId;
                $("gift-recipient").focus();
            });
            action.append(button);
        }
        row.append(action);
        body.append(row);
    }
    if ((top.response.scores ?? []).length === 0) {
        const row = document.createElement("tr");
        const cell = document.createElement("td");
        cell.colSpan = 4;
        cell.textContent = "No scores yet: be the first.";
        row.append(cell);
        body.append(row);
    }
    const standing = mine.response.leaderboard?.standing;
    const total = mine.response.leaderboard?.entryCount ?? "0";
    $("my-rank").textContent = standing
        ? `Your rank: #${standing.globalPosition} of ${total} (best ${standing.highScore ?? 0})`
        : state.named ? "Your rank: no score yet" : "Your rank: name yourself, then post your points";
    $("my-rank").dataset.position = standing?.globalPosition ?? "";
}

async function submitScore() {
    await act($("submit-score"), "board-status", async () => {
        const answer = await rave.call("rave.leaderboards.v1.Leaderboards/SubmitScore",
            { leaderboardKey: board, score: String(state.points) });
        await loadBoard();
        say("board-status", answer.newBest
            ? `Posted ${state.points}: a new best, #${answer.globalPosition}.`
            : `Posted ${state.points}; your best stays ${answer.highScore}.`);
    });
}

// MARK: - Gifts

async function loadGiftTypes() {
    const { giftTypes = [] } = await rave.call("rave.gifts.v1.Gifts/ListGiftTypes");
    const select = $("gift-type");
    select.replaceChildren(...giftTypes.map((type) => new Option(type.name, type.key)));
}

async function senderName(userId) {
    if (!state.senders.has(userId)) {
        const found = await rave.call("rave.identity.v1.Identity/FindUser", { userId })
            .then(({ user }) => user?.displayName || "", () => "");
        state.senders.set(userId, found || `${userId.slice(0, 8)}…`);
    }
    return state.senders.get(userId);
}

async function loadInbox() {
    const { gifts = [] } = await rave.call("rave.gifts.v1.Gifts/ListGifts", { pageSize: 20 });
    const names = await Promise.all(gifts.map((gift) => senderName(gift.senderId)));
    const inbox = $("inbox");
    inbox.replaceChildren();
    gifts.forEach((gift, index) => {
        const item = document.createElement("li");
        item.dataset.giftId = gift.giftId;
        item.textContent = `${gift.giftTypeName} from ${names[index]} `;
        const accept = document.createElement("button");
        accept.type = "button";
        accept.className = "small";
        accept.textContent = "Accept";
        accept.setAttribute("aria-label", `Accept ${gift.giftTypeName} from ${names[index]}`);
        accept.addEventListener("click", () => act(accept, "gifts-status", async () => {
            await rave.call("rave.gifts.v1.Gifts/AcceptGift", { giftId: gift.giftId });
            await loadInbox();
            say("gifts-status", `Accepted ${gift.giftTypeName} from ${names[index]}.`);
            $("reload-gifts").focus();
        }));
        item.append(accept);
        inbox.append(item);
    });
    if (gifts.length === 0) {
        const item = document.createElement("li");
        item.textContent = "Nothing waiting.";
        inbox.append(item);
    }
}

const recipientWords = {
    RECIPIENT_STATUS_SENT: "sent",
    RECIPIENT_STATUS_UNKNOWN_USER: "no player has this Rave ID",
    RECIPIENT_STATUS_BLOCKED: "one of you blocked the other",
    RECIPIENT_STATUS_YOURSELF: "that is your own Rave ID",
    RECIPIENT_STATUS_DAILY_LIMIT: "you sent as many of these as a day allows",
    RECIPIENT_STATUS_DUPLICATE: "listed twice",
};

async function sendGift(event) {
    event.preventDefault();
    await act($("send-gift"), "gift-sent", async () => {
        const recipient = $("gift-recipient").value.trim();
        const select = $("gift-type");
        const key = randomHex(16);
        const answer = await rave.call("rave.gifts.v1.Gifts/SendGifts",
            { giftTypeKey: select.value, recipientIds: [recipient], idempotencyKey: key }, { idempotencyKey: key });
        const status = answer.results?.[0]?.status ?? "RECIPIENT_STATUS_UNSPECIFIED";
        const name = select.selectedOptions[0]?.textContent ?? select.value;
        say("gift-sent", status === "RECIPIENT_STATUS_SENT"
            ? `Sent ${name} to ${recipient}.`
            : `Not sent: ${recipientWords[status] ?? status}.`, status === "RECIPIENT_STATUS_SENT" ? "info" : "error");
    });
}

// MARK: - Start

async function start() {
    for (const id of ["player", "dice", "fair", "board", "gifts"]) $(id).hidden = false;
    rave = new Rave({
        appId, deviceName: "Rave Dice (web demo)",
        onRetry: ({ delayMs, error }) => say("player-status", `${error.status}; trying again in ${Math.round(delayMs)} ms`),
    });
    $("client-seed").value = randomHex(8);
    $("name-form").addEventListener("submit", saveName);
    $("roll-form").addEventListener("submit", roll);
    $("wager").addEventListener("input", showBalance);
    $("submit-score").addEventListener("click", submitScore);
    $("reload-board").addEventListener("click", (event) =>
        act(event.currentTarget, "board-status", loadBoard));
    $("gift-form").addEventListener("submit", sendGift);
    $("reload-gifts").addEventListener("click", (event) =>
        act(event.currentTarget, "gifts-status", loadInbox));
    $("copy-id").addEventListener("click", async () => {
        await navigator.clipboard?.writeText($("rave-id").textContent).then(
            () => say("player-status", "Rave ID copied."),
            () => say("player-status", "Select the Rave ID and copy it."));
    });
    try {
        await rave.signIn();
        await Promise.all([loadPlayer(), loadSeed(), loadGiftTypes(), loadBoard(), loadInbox()]);
        document.body.dataset.ready = "true";
    } catch (error) {
        say("player-status", `Could not start: ${describe(error)}`, "error");
        document.body.dataset.ready = "error";
    }
}

$("loading").hidden = true;
if (appId && /^[0-9a-f]{32}$/.test(appId)) {
    start();
} else {
    $("setup").hidden = false;
    if (appId) say("setup-status", `"${appId}" is not an application id: 32 lowercase hex digits.`, "error");
    $("setup-form").addEventListener("submit", (event) => {
        event.preventDefault();
        location.search = `?app=${encodeURIComponent($("setup-app").value.trim())}`;
    });
}
