// Rave browser SDK: one ES module, no build step, no dependencies. It speaks the gateway's HTTP/JSON front door
// (docs/gateway.md, "HTTP/JSON front door"): guest sign-in with a device id kept in storage, a session that
// survives reloads, token refresh shared by every concurrent call, typed errors, and retries only of calls the
// server says it did not process. See Clients/web/README.md.

/** gRPC status codes by name, as the gateway's error body and `RaveError.code` carry them. */
export const Status = Object.freeze({
    OK: 0,
    CANCELLED: 1,
    UNKNOWN: 2,
    INVALID_ARGUMENT: 3,
    DEADLINE_EXCEEDED: 4,
    NOT_FOUND: 5,
    ALREADY_EXISTS: 6,
    PERMISSION_DENIED: 7,
    RESOURCE_EXHAUSTED: 8,
    FAILED_PRECONDITION: 9,
    ABORTED: 10,
    OUT_OF_RANGE: 11,
    UNIMPLEMENTED: 12,
    INTERNAL: 13,
    UNAVAILABLE: 14,
    DATA_LOSS: 15,
    UNAUTHENTICATED: 16,
});

const statusNames = Object.fromEntries(Object.entries(Status).map(([name, code]) => [code, name]));

// The HTTP statuses of docs/gateway.md's table, read backwards for answers without a JSON error body (a proxy's
// 502, say); 400 is ambiguous there and reads as INVALID_ARGUMENT.
const codeOfHttpStatus = {
    400: Status.INVALID_ARGUMENT, 401: Status.UNAUTHENTICATED, 403: Status.PERMISSION_DENIED, 404: Status.NOT_FOUND,
    408: Status.DEADLINE_EXCEEDED, 409: Status.ABORTED, 413: Status.RESOURCE_EXHAUSTED, 415: Status.INVALID_ARGUMENT,
    429: Status.RESOURCE_EXHAUSTED, 431: Status.RESOURCE_EXHAUSTED, 499: Status.CANCELLED, 501: Status.UNIMPLEMENTED,
    503: Status.UNAVAILABLE, 504: Status.DEADLINE_EXCEEDED,
};

/**
 * A failed call. `status` is the code's name ("NOT_FOUND"), so `error.status === "NOT_FOUND"` is the usual check;
 * `code` is the number (`Status.NOT_FOUND`).
 *
 * `notProcessed` is true only when the server said the call had no effect (safe to send again); false means it
 * may have run. Errors made in the browser (no answer: the network, CORS, a timeout) have `httpStatus` 0 and
 * `notProcessed` false, since nobody can tell whether the call ran.
 */
export class RaveError extends Error {
    /**
     * @param {object} fields
     * @param {number} fields.code gRPC status code
     * @param {string} fields.message
     * @param {string} [fields.details] base64 of the status details the method documents ("" when none)
     * @param {boolean} [fields.notProcessed]
     * @param {string} [fields.requestId] the X-Request-Id of the call
     * @param {number} [fields.httpStatus] 0 when no answer arrived
     * @param {number} [fields.retryAfterMs] from Retry-After, when the answer had one
     * @param {unknown} [fields.cause]
     */
    constructor({ code, message, details = "", notProcessed = false, requestId = "", httpStatus = 0,
        retryAfterMs = undefined, cause = undefined }) {
        super(message, cause === undefined ? undefined : { cause });
        this.name = "RaveError";
        /** @type {number} */
        this.code = code;
        /** @type {string} */
        this.status = statusNames[code] ?? "UNKNOWN";
        /** @type {string} */
        this.details = details;
        /** @type {boolean} */
        this.notProcessed = notProcessed;
        /** @type {string} */
        this.requestId = requestId;
        /** @type {number} */
        this.httpStatus = httpStatus;
        /** @type {number | undefined} */
        this.retryAfterMs = retryAfterMs;
    }
}

// Methods that take no access token: the sign-in methods (the gateway passes a signed-in caller to the upgrading
// ones, so those carry the token when there is one), fresh-install gift lookups and health.
const loginMethods = new Set([
    "rave.identity.v1.Identity/GuestLogin", "rave.identity.v1.Identity/SignUp",
    "rave.identity.v1.Identity/LoginWithPassword", "rave.identity.v1.Identity/LoginWithProvider",
    "rave.identity.v1.Identity/CompleteTwoFactorLogin",
]);
const guestLogin = "rave.identity.v1.Identity/GuestLogin";
const refreshSession = "rave.identity.v1.Identity/RefreshSession";
// Calls that answer a new access token for the caller's session (docs/identity.md, "New tokens after a change of
// account"): the SDK takes it, keeping the refresh token it holds.
const sessionUpdatingMethods = new Set([
    "rave.identity.v1.Identity/ConnectProvider", "rave.identity.v1.Identity/DisconnectProvider",
]);

// A status code as JSON carries it: an enum name ("NOT_FOUND"), a number, or nothing at all for OK.
function codeOf(value) {
    if (value === undefined || value === null) return Status.OK;
    if (typeof value === "number") return value;
    return Status[value] ?? (Number.isInteger(Number(value)) ? Number(value) : Status.UNKNOWN);
}

function needsNoToken(method) {
    return method === refreshSession || method === "rave.rpc.v1.Health/Check" ||
        method.startsWith("rave.gifts.v1.GiftsInstall/");
}

/** A Web Storage stand-in for pages without localStorage (private modes, workers). */
class MemoryStorage {
    #items = new Map();
    getItem(key) { return this.#items.has(key) ? this.#items.get(key) : null; }
    setItem(key, value) { this.#items.set(key, String(value)); }
    removeItem(key) { this.#items.delete(key); }
}

function defaultStorage() {
    try {
        if (globalThis.localStorage) return globalThis.localStorage;
    } catch {
        // Access to localStorage throws where the browser forbids storage.
    }
    return new MemoryStorage();
}

function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        function onAbort() {
            clearTimeout(timer);
            reject(signal.reason);
        }
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}

// The claims of a compact JWT, without checking it (the gateway does that); {} when it is not one.
function claimsOf(token) {
    try {
        const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
        const bytes = Uint8Array.from(atob(part + "=".repeat((4 - part.length % 4) % 4)), (c) => c.charCodeAt(0));
        return JSON.parse(new TextDecoder().decode(bytes));
    } catch {
        return {};
    }
}

/**
 * A signed-in player's connection to a Rave gateway.
 *
 * ```js
 * import { Rave } from "/sdk/rave.js";
 * const rave = new Rave({ baseUrl: "https://127.0.0.1:8443", appId });
 * await rave.signIn();
 * const me = await rave.call("rave.identity.v1.Identity/GetCurrentUser");
 * ```
 */
export class Rave {
    /**
     * @param {object} options
     * @param {string} [options.baseUrl] the gateway's HTTPS origin; default the page's own origin
     * @param {string} options.appId the application's id (32 hex digits)
     * @param {Pick<Storage, "getItem" | "setItem" | "removeItem">} [options.storage] where the device id and the
     *   session live; default localStorage (memory when there is none)
     * @param {string} [options.deviceName] shown in the player's device list
     * @param {number} [options.refreshMarginMs] refresh the access token this long before it expires (60 s)
     * @param {number} [options.timeoutMs] default deadline of a call (15 s)
     * @param {number} [options.maxAttempts] attempts of a call the server did not process (3, at least 1)
     * @param {boolean} [options.autoSignIn] sign in as the device's guest when a call needs a session and there is
     *   none (true)
     * @param {(info: {method: string, attempt: number, delayMs: number, error: RaveError}) => void} [options.onRetry]
     *   told before each retry
     * @param {(error: RaveError) => void} [options.onSessionEnded] told when the session can no longer be refreshed
     * @param {typeof fetch} [options.fetch] the fetch to use (default the global one)
     */
    constructor({ baseUrl = globalThis.location?.origin ?? "", appId, storage = defaultStorage(), deviceName = "",
        refreshMarginMs = 60_000, timeoutMs = 15_000, maxAttempts = 3, autoSignIn = true, onRetry = undefined,
        onSessionEnded = undefined, fetch = undefined } = {}) {
        if (!appId) throw new TypeError("Rave: appId is required");
        this.baseUrl = baseUrl.replace(/\/+$/, "");
        this.appId = appId;
        this.storage = storage;
        this.deviceName = deviceName;
        this.refreshMarginMs = refreshMarginMs;
        this.timeoutMs = timeoutMs;
        this.maxAttempts = Math.max(1, maxAttempts);
        this.autoSignIn = autoSignIn;
        this.onRetry = onRetry;
        this.onSessionEnded = onSessionEnded;
        this.fetch = fetch ?? globalThis.fetch.bind(globalThis);
        this.sessionKey = `rave.session.${appId}`;
        /** @type {Promise<void> | null} the one refresh in flight */
        this.refreshing = null;
        /** @type {Promise<object> | null} the one guest sign-in in flight */
        this.signingIn = null;
        this.session = this.#readSession();
    }

    /** The device id of this browser profile: made once with crypto.randomUUID and kept in storage. */
    get deviceId() {
        let id = this.storage.getItem("rave.deviceId");
        if (!id) {
            id = crypto.randomUUID();
            this.storage.setItem("rave.deviceId", id);
        }
        return id;
    }

    /** Whether a session is held (it may still need a refresh). */
    get signedIn() { return this.session !== null; }

    /** The signed-in player's Rave ID, or "" (from the access token's `sub`). */
    get userId() { return this.session ? claimsOf(this.session.accessToken).sub ?? "" : ""; }

    /** The access token's scopes ("player guest", …) as a list; [] when signed out. */
    get scopes() { return this.session ? String(claimsOf(this.session.accessToken).scp ?? "").split(" ") : []; }

    /**
     * Signs in as this device's guest unless a session is held (a reload keeps the session). Concurrent callers
     * share one sign-in.
     * @returns {Promise<void>}
     */
    async signIn() {
        if (this.session) return;
        this.signingIn ??= this.#send(guestLogin, {
            appId: this.appId,
            device: { deviceId: this.deviceId, name: this.deviceName, platform: "web" },
        }, { withToken: false }).finally(() => { this.signingIn = null; });
        await this.signingIn;
    }

    /** Forgets the session (not the device id); the next call signs in again. Logout on the server is a call. */
    signOut() {
        this.session = null;
        this.storage.removeItem(this.sessionKey);
    }

    /**
     * Takes the tokens of a login's answer (`LoginResponse.tokens`); calls to the login methods do this already.
     * @param {{accessToken: string, accessTokenExpiresAtUnixMs: string | number, refreshToken?: string,
     *   sessionId?: string}} tokens
     */
    adopt(tokens) {
        this.session = {
            accessToken: tokens.accessToken,
            expiresAtMs: Number(tokens.accessTokenExpiresAtUnixMs ?? 0),
            refreshToken: tokens.refreshToken || this.session?.refreshToken || "",
            sessionId: tokens.sessionId || this.session?.sessionId || "",
        };
        this.storage.setItem(this.sessionKey, JSON.stringify(this.session));
    }

    /**
     * Calls a method and answers its response message (protobuf's JSON mapping: lowerCamelCase names, 64-bit
     * integers as strings, enums by name).
     *
     * Signs in first when needed (see `autoSignIn`), refreshes an access token about to expire, and once more
     * after a 401; every concurrent call shares one refresh. A call the server did not process is sent again (up
     * to `maxAttempts`, after Retry-After or a growing pause).
     *
     * @param {string} method "rave.<area>.v1.<Service>/<Method>"
     * @param {object} [request] the request message as JSON
     * @param {object} [options]
     * @param {string} [options.idempotencyKey] sent as Idempotency-Key
     * @param {number} [options.timeoutMs] the call's deadline (X-Rave-Timeout-Ms), retries included
     * @param {AbortSignal} [options.signal] cancels the call (RaveError CANCELLED)
     * @returns {Promise<any>}
     * @throws {RaveError}
     */
    async call(method, request = {}, { idempotencyKey = undefined, timeoutMs = undefined, signal = undefined } = {}) {
        const withToken = !needsNoToken(method) && method !== guestLogin;
        const requireToken = withToken && !loginMethods.has(method);
        return this.#send(method, request, { withToken, requireToken, idempotencyKey, timeoutMs, signal });
    }

    /**
     * Sends calls as one `POST /v1/batch`: up to 50, run concurrently unless one depends on another.
     *
     * @param {Array<{name: string, method: string, request?: object, dependsOn?: string[],
     *   references?: Array<{fromCall: string, fromPath: string, toPath: string}>}>} calls
     * @param {{timeoutMs?: number, signal?: AbortSignal}} [options]
     * @returns {Promise<Array<{name: string, ok: boolean, response: any, error: RaveError | null,
     *   dependencyFailed: boolean}>>} one result per call, in request order; a failed call has `error`
     * @throws {RaveError} when the batch as a whole fails (invalid, unauthenticated, …)
     */
    async batch(calls, { timeoutMs = undefined, signal = undefined } = {}) {
        const body = {
            calls: calls.map(({ name, method, request = {}, dependsOn = [], references = [] }) =>
                ({ name, method, request, dependsOn, references })),
        };
        const answer = await this.#send("batch", body, { withToken: true, requireToken: true, timeoutMs, signal });
        return (answer.results ?? []).map((result) => {
            const code = codeOf(result.code);
            return {
                name: result.name,
                ok: code === Status.OK,
                response: result.response ?? {},
                dependencyFailed: Boolean(result.dependencyFailed),
                error: code === Status.OK ? null : new RaveError({
                    code, message: result.message ?? "", details: result.details ?? "",
                    notProcessed: Boolean(result.notProcessed),
                }),
            };
        });
    }

    /**
     * Asks for an archive of everything the platform holds about the signed-in player (docs/identity.md,
     * "Exporting an account"). Re-authenticates like deleting the account: the password (and a two-factor code
     * when enrolled); a guest needs a login within the last 5 minutes. An export in progress is answered instead of
     * a new one (`created` false); one new export per 24 hours.
     * @param {{currentPassword?: string, twoFactorCode?: string, language?: string}} [request]
     * @returns {Promise<{accountExport: object, created?: boolean}>}
     * @throws {RaveError} RESOURCE_EXHAUSTED within 24 hours of the last one, INVALID_ARGUMENT for a wrong password
     */
    async requestAccountExport({ currentPassword = "", twoFactorCode = "", language = "" } = {}) {
        return this.call("rave.identity.v1.Identity/RequestAccountExport", { currentPassword, twoFactorCode, language });
    }

    /**
     * One of the player's exports (status PENDING, READY, FAILED or EXPIRED, times, size, sha256), or the latest
     * when no id is given (`undefined` when there is none).
     * @param {string} [exportId]
     * @returns {Promise<object | undefined>}
     */
    async getAccountExport(exportId = "") {
        return (await this.call("rave.identity.v1.Identity/GetAccountExport", { exportId })).accountExport;
    }

    /**
     * A ready export's archive as a Blob (`application/json`), from `GET /v1/account/exports/{id}/archive`; its
     * SHA-256 is the response's ETag and the export's `sha256`.
     * @param {string} exportId
     * @param {{timeoutMs?: number, signal?: AbortSignal}} [options]
     * @returns {Promise<Blob>}
     * @throws {RaveError} NOT_FOUND (not this player's), FAILED_PRECONDITION (not ready, failed or expired)
     */
    async downloadAccountExport(exportId, { timeoutMs = 120_000, signal = undefined } = {}) {
        const method = "rave.identity.v1.Identity/DownloadAccountExport";
        const requestId = crypto.randomUUID();
        let refreshed = false;
        for (;;) {
            const token = (await this.#usableSession()).accessToken;
            const timeout = new AbortController();
            const timer = setTimeout(() => timeout.abort(), timeoutMs + 1000);
            const abort = () => timeout.abort(signal.reason);
            signal?.addEventListener("abort", abort, { once: true });
            if (signal?.aborted) abort();
            let response;
            try {
                response = await this.fetch(
                    `${this.baseUrl}/v1/account/exports/${encodeURIComponent(exportId)}/archive`, {
                        method: "GET", signal: timeout.signal, credentials: "omit", cache: "no-store",
                        headers: {
                            "Authorization": `Bearer ${token}`, "X-Request-Id": requestId,
                            "X-Rave-Timeout-Ms": String(timeoutMs),
                        },
                    });
                if (response.ok) return await response.blob();
            } catch (error) {
                if (signal?.aborted) throw this.#cancelled(signal.reason, requestId);
                throw new RaveError({
                    code: timeout.signal.aborted ? Status.DEADLINE_EXCEEDED : Status.UNAVAILABLE,
                    message: `${method}: no archive from ${this.baseUrl} (${error.message})`, requestId, cause: error,
                });
            } finally {
                clearTimeout(timer);
                signal?.removeEventListener("abort", abort);
            }
            const error = this.#errorOf(method, response, await response.text(),
                response.headers.get("X-Request-Id") || requestId);
            if (error.status === "UNAUTHENTICATED" && !refreshed) {
                // Once: a token the gateway no longer takes.
                refreshed = true;
                if (this.session?.accessToken === token) await this.refresh();
                continue;
            }
            throw error;
        }
    }

    /**
     * Exchanges the refresh token for new tokens now. Concurrent callers (and other tabs, where the browser has
     * Web Locks) share one exchange: refresh tokens rotate, and presenting a retired one ends the session.
     * @returns {Promise<void>}
     * @throws {RaveError} UNAUTHENTICATED when the session has ended (it is then forgotten)
     */
    refresh() {
        const used = this.session?.accessToken;
        this.refreshing ??= this.#refreshOnce(used).finally(() => { this.refreshing = null; });
        return this.refreshing;
    }

    // MARK: - Internals

    #readSession() {
        try {
            const session = JSON.parse(this.storage.getItem(this.sessionKey) ?? "null");
            return session?.accessToken && session?.refreshToken ? session : null;
        } catch {
            return null;
        }
    }

    async #refreshOnce(usedAccessToken) {
        const exchange = async () => {
            // Another tab (or an earlier refresh here) may have rotated the tokens already: use its result rather
            // than present a refresh token that is no longer current.
            const stored = this.#readSession();
            if (stored && stored.accessToken !== usedAccessToken && !this.#expiresSoon(stored)) {
                this.session = stored;
                return;
            }
            const current = stored ?? this.session;
            if (!current?.refreshToken) {
                throw new RaveError({ code: Status.UNAUTHENTICATED, message: "not signed in" });
            }
            try {
                const answer = await this.#send(refreshSession, { refreshToken: current.refreshToken },
                    { withToken: false });
                this.adopt(answer.tokens ?? {});
            } catch (error) {
                if (error instanceof RaveError && error.status === "UNAUTHENTICATED") {
                    this.signOut();
                    this.onSessionEnded?.(error);
                }
                throw error;
            }
        };
        const locks = globalThis.navigator?.locks;
        if (locks?.request) {
            await locks.request(`rave.refresh.${this.appId}`, exchange);
        } else {
            await exchange();
        }
    }

    #expiresSoon(session) {
        return session.expiresAtMs - Date.now() < this.refreshMarginMs;
    }

    // A session with an access token that is not about to expire, signing in or refreshing as needed.
    async #usableSession() {
        if (!this.session) {
            if (!this.autoSignIn) {
                throw new RaveError({ code: Status.UNAUTHENTICATED, message: "not signed in; call signIn() first" });
            }
            await this.signIn();
        }
        if (this.refreshing) {
            // Shared with the call that started it; its new token is used as it is.
            await this.refreshing;
        } else if (this.#expiresSoon(this.session)) {
            await this.refresh();
        }
        if (!this.session) throw new RaveError({ code: Status.UNAUTHENTICATED, message: "the session has ended" });
        return this.session;
    }

    async #send(method, request, { withToken, requireToken = false, idempotencyKey, timeoutMs, signal }) {
        const requestId = crypto.randomUUID();
        const deadline = Date.now() + (timeoutMs ?? this.timeoutMs);
        let refreshedAfter401 = false;
        for (let attempt = 1; ; attempt += 1) {
            let token = "";
            if (requireToken) {
                token = (await this.#usableSession()).accessToken;
            } else if (withToken && this.session) {
                // A login that upgrades the signed-in guest: its token, fresh, if the session still lives;
                // otherwise the login goes without one.
                token = await this.#usableSession().then((session) => session.accessToken, () => "");
            }
            try {
                const answer = await this.#post(method, request, { token, requestId, idempotencyKey, deadline, signal });
                this.#takeSession(method, answer);
                return answer;
            } catch (error) {
                if (!(error instanceof RaveError)) throw error;
                if (error.status === "UNAUTHENTICATED" && requireToken && !refreshedAfter401 && this.session) {
                    // Once per call: a token the gateway no longer takes (keys rotated, clock skew). If another
                    // call already refreshed since this one was sent, its new token is used without a refresh.
                    refreshedAfter401 = true;
                    if (this.session.accessToken === token) await this.refresh();
                    attempt -= 1;
                    continue;
                }
                if (!error.notProcessed || attempt >= this.maxAttempts) throw error;
                const delayMs = error.retryAfterMs ?? Math.min(4000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random());
                if (Date.now() + delayMs >= deadline) throw error;
                this.onRetry?.({ method, attempt, delayMs, error });
                await sleep(delayMs, signal).catch((reason) => { throw this.#cancelled(reason, requestId); });
            }
        }
    }

    #takeSession(method, answer) {
        if (loginMethods.has(method) && answer?.tokens?.accessToken) {
            this.adopt(answer.tokens);
        } else if (sessionUpdatingMethods.has(method) && answer?.session?.accessToken) {
            this.adopt(answer.session);
        }
    }

    #cancelled(reason, requestId) {
        return new RaveError({ code: Status.CANCELLED, message: "the call was cancelled", requestId, cause: reason });
    }

    async #post(method, request, { token, requestId, idempotencyKey, deadline, signal }) {
        const remaining = Math.max(1, deadline - Date.now());
        const headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "X-Request-Id": requestId,
            "X-Rave-Timeout-Ms": String(remaining),
        };
        if (token) headers.Authorization = `Bearer ${token}`;
        if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
        // The browser gives up a little after the server's deadline, so the server's own answer normally wins.
        const timeout = new AbortController();
        const timer = setTimeout(() => timeout.abort(), remaining + 1000);
        const abort = () => timeout.abort(signal.reason);
        signal?.addEventListener("abort", abort, { once: true });
        if (signal?.aborted) abort();
        const path = method === "batch" ? "/v1/batch" : `/v1/${method}`;
        let response;
        try {
            response = await this.fetch(this.baseUrl + path, {
                method: "POST", headers, body: JSON.stringify(request), signal: timeout.signal,
                credentials: "omit", cache: "no-store",
            });
        } catch (error) {
            if (signal?.aborted) throw this.#cancelled(signal.reason, requestId);
            if (timeout.signal.aborted) {
                throw new RaveError({
                    code: Status.DEADLINE_EXCEEDED, message: `${method}: no answer within the deadline`, requestId,
                    cause: error,
                });
            }
            // No answer at all (offline, refused connection, a CORS refusal): the call may or may not have run.
            throw new RaveError({
                code: Status.UNAVAILABLE, message: `${method}: no answer from ${this.baseUrl} (${error.message})`,
                requestId, cause: error,
            });
        } finally {
            clearTimeout(timer);
            signal?.removeEventListener("abort", abort);
        }
        const answeredId = response.headers.get("X-Request-Id") || requestId;
        const text = await response.text();
        if (response.ok) {
            try {
                return text ? JSON.parse(text) : {};
            } catch (error) {
                throw new RaveError({
                    code: Status.INTERNAL, message: `${method}: the answer is not JSON`, requestId: answeredId,
                    httpStatus: response.status, cause: error,
                });
            }
        }
        throw this.#errorOf(method, response, text, answeredId);
    }

    #errorOf(method, response, text, requestId) {
        let body = null;
        try {
            body = JSON.parse(text);
        } catch {
            // Not the gateway's error body (a proxy's page, say): the HTTP status decides below.
        }
        // Retry-After in whole seconds (the gateway's form); an HTTP date is not used by the gateway.
        const retryAfterHeader = response.headers.get("Retry-After");
        const retryAfterMs = retryAfterHeader !== null && /^\d+$/.test(retryAfterHeader.trim())
            ? Number(retryAfterHeader) * 1000 : undefined;
        const headerNotProcessed = response.headers.get("X-Rave-Not-Processed") === "true";
        if (body && body.code !== undefined && body.status !== undefined) {
            return new RaveError({
                code: codeOf(body.code), message: body.message ?? "", details: body.details ?? "",
                notProcessed: Boolean(body.notProcessed) || headerNotProcessed, requestId,
                httpStatus: response.status, retryAfterMs,
            });
        }
        return new RaveError({
            code: codeOfHttpStatus[response.status] ?? Status.UNKNOWN,
            message: `${method}: HTTP ${response.status} ${response.statusText}`.trim(),
            notProcessed: headerNotProcessed, requestId, httpStatus: response.status, retryAfterMs,
        });
    }
}
