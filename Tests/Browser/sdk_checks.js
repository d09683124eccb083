// Checks of the browser SDK (Clients/web/rave.js) that test_sdk.py runs in a page of the gateway's origin, against
// the real stack. Each takes the SDK module (imported from /sdk/rave.js by the page) and answers what it observed;
// the Python side asserts. The fetch each Rave instance gets forwards every request to the browser's real fetch
// and records what went out and what came back.

const getCurrentUser = "rave.identity.v1.Identity/GetCurrentUser";

function recordingFetch() {
    const log = [];
    async function fetch(url, init) {
        const entry = {
            path: new URL(url).pathname,
            requestId: init.headers["X-Request-Id"],
            authorization: init.headers.Authorization ?? "",
        };
        log.push(entry);
        const response = await globalThis.fetch(url, init);
        entry.status = response.status;
        entry.notProcessed = response.headers.get("X-Rave-Not-Processed");
        entry.retryAfter = response.headers.get("Retry-After");
        entry.answeredRequestId = response.headers.get("X-Request-Id");
        return response;
    }
    return { log, fetch };
}

function memoryStorage() {
    const items = new Map();
    return {
        getItem: (key) => (items.has(key) ? items.get(key) : null),
        setItem: (key, value) => items.set(key, String(value)),
        removeItem: (key) => items.delete(key),
    };
}

const refreshes = (log) => log.filter((entry) => entry.path.endsWith("/RefreshSession"));

async function settle(calls) {
    const outcomes = await Promise.allSettled(calls);
    return outcomes.map((outcome) => (outcome.status === "fulfilled"
        ? { ok: true, userId: outcome.value.user?.profile?.userId ?? "" }
        : { ok: false, status: outcome.reason?.status, message: String(outcome.reason?.message ?? outcome.reason) }));
}

/** An access token about to expire: concurrent calls share one refresh, and the session stays good. */
export async function refreshBeforeExpiry(sdk, appId, concurrent) {
    const { log, fetch } = recordingFetch();
    const ended = [];
    const rave = new sdk.Rave({ appId, storage: memoryStorage(), fetch, onSessionEnded: (error) => ended.push(error.status) });
    await rave.signIn();
    const userId = rave.userId;
    const firstRefreshToken = rave.session.refreshToken;
    // As stored (a reload would read the same): the access token expires within the 60 s margin.
    rave.adopt({ ...rave.session, accessTokenExpiresAtUnixMs: Date.now() + 5_000 });
    const outcomes = await settle(Array.from({ length: concurrent }, () => rave.call(getCurrentUser)));
    const refreshesInBurst = refreshes(log).length;
    const rotated = rave.session.refreshToken !== firstRefreshToken;
    // Had two refreshes presented the same token, identity would have ended the session: refreshing again now
    // and calling with the result proves it is alive.
    await rave.refresh();
    const after = await rave.call(getCurrentUser);
    return {
        userId, outcomes, refreshesInBurst, rotated, ended,
        refreshesInAll: refreshes(log).length, afterUserId: after.user?.profile?.userId ?? "",
    };
}

/** An access token the gateway refuses (401): one refresh for every concurrent call, each call sent once more. */
export async function refreshAfterUnauthenticated(sdk, appId, concurrent) {
    const { log, fetch } = recordingFetch();
    const rave = new sdk.Rave({ appId, storage: memoryStorage(), fetch });
    await rave.signIn();
    const userId = rave.userId;
    // A token the gateway refuses, far from expiry (so only the 401 can make the SDK refresh), as stored.
    rave.adopt({ ...rave.session, accessToken: "not-a-token", accessTokenExpiresAtUnixMs: Date.now() + 600_000 });
    const outcomes = await settle(Array.from({ length: concurrent }, () => rave.call(getCurrentUser)));
    const attempts = {};
    for (const entry of log.filter((entry) => entry.path.endsWith("/GetCurrentUser"))) {
        (attempts[entry.requestId] ??= []).push(entry.status);
    }
    return { userId, outcomes, refreshes: refreshes(log).length, attempts: Object.values(attempts) };
}

/** More calls at once than the caller's rate allows: refused not processed, retried after Retry-After, all succeed. */
export async function retriesNotProcessed(sdk, appId, concurrent) {
    const { log, fetch } = recordingFetch();
    const retries = [];
    const rave = new sdk.Rave({
        appId, storage: memoryStorage(), fetch, maxAttempts: 6, timeoutMs: 30_000,
        onRetry: ({ attempt, delayMs, error }) => retries.push({
            attempt, delayMs, status: error.status, notProcessed: error.notProcessed, retryAfterMs: error.retryAfterMs,
            httpStatus: error.httpStatus,
        }),
    });
    await rave.signIn();
    const outcomes = await settle(Array.from({ length: concurrent }, () => rave.call(getCurrentUser)));
    const calls = log.filter((entry) => entry.path.endsWith("/GetCurrentUser"));
    const refused = calls.filter((entry) => entry.status !== 200);
    const attemptsPerRequestId = {};
    for (const entry of calls) attemptsPerRequestId[entry.requestId] = (attemptsPerRequestId[entry.requestId] ?? 0) + 1;
    return {
        outcomes, retries,
        refused: refused.map(({ status, notProcessed, retryAfter }) => ({ status, notProcessed, retryAfter })),
        requests: calls.length, distinctRequestIds: Object.keys(attemptsPerRequestId).length,
        everyAnswerEchoedItsId: calls.every((entry) => entry.answeredRequestId === entry.requestId),
    };
}

/** A call that fails after being processed is not sent again, and its error carries the answer's fields. */
export async function processedFailureIsNotRetried(sdk, appId) {
    const { log, fetch } = recordingFetch();
    const retries = [];
    const rave = new sdk.Rave({ appId, storage: memoryStorage(), fetch, onRetry: (info) => retries.push(info.attempt) });
    await rave.signIn();
    let error = null;
    try {
        // A guest may not post scores: FAILED_PRECONDITION.
        await rave.call("rave.leaderboards.v1.Leaderboards/SubmitScore", { leaderboardKey: "high-scores", score: "5" });
    } catch (caught) {
        error = caught;
    }
    const sent = log.filter((entry) => entry.path.endsWith("/SubmitScore"));
    return {
        isRaveError: error instanceof sdk.RaveError,
        status: error?.status, code: error?.code, httpStatus: error?.httpStatus, notProcessed: error?.notProcessed,
        message: error?.message, requestIdMatches: sent.length === 1 && error?.requestId === sent[0].requestId,
        sent: sent.length, retries: retries.length, scopes: rave.scopes,
    };
}

/** A batch: results in request order, a failed call as a RaveError, its dependant skipped. */
export async function batchResults(sdk, appId) {
    const rave = new sdk.Rave({ appId, storage: memoryStorage() });
    await rave.signIn();
    const results = await rave.batch([
        { name: "me", method: getCurrentUser },
        { name: "score", method: "rave.leaderboards.v1.Leaderboards/SubmitScore",
            request: { leaderboardKey: "high-scores", score: "5" } },
        { name: "rank", method: "rave.leaderboards.v1.Leaderboards/GetLeaderboard",
            request: { leaderboardKey: "high-scores" }, dependsOn: ["score"] },
    ]);
    return results.map((result) => ({
        name: result.name, ok: result.ok, dependencyFailed: result.dependencyFailed,
        status: result.error?.status ?? "OK", isRaveError: result.error === null || result.error instanceof sdk.RaveError,
        userId: result.response?.user?.profile?.userId ?? "",
    })).concat([{ name: "caller", userId: rave.userId }]);
}

/** Account export: a guest asks (its fresh login re-authenticates it), sees the export, and downloading an unknown
 * export is a typed NOT_FOUND; a second request answers the same export. */
export async function accountExport(sdk, appId) {
    const rave = new sdk.Rave({ appId, storage: memoryStorage() });
    await rave.signIn();
    const requested = await rave.requestAccountExport();
    const again = await rave.requestAccountExport();
    const seen = await rave.getAccountExport(requested.accountExport.exportId);
    const latest = await rave.getAccountExport();
    let error = null;
    try {
        await rave.downloadAccountExport("0".repeat(32));
    } catch (caught) {
        error = caught;
    }
    return {
        created: Boolean(requested.created), createdAgain: Boolean(again.created),
        sameExport: again.accountExport.exportId === requested.accountExport.exportId,
        seenId: seen?.exportId === requested.accountExport.exportId, latestId: latest?.exportId === seen?.exportId,
        userId: seen?.userId === rave.userId, status: seen?.status,
        isRaveError: error instanceof sdk.RaveError, errorStatus: error?.status, httpStatus: error?.httpStatus,
    };
}
