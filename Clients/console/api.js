// The console's connection to the gateway as an operator (docs/identity.md, "Operators"): login with email, password
// and TOTP code, an operator session kept in sessionStorage (this tab only, gone when it closes), the access token
// refreshed with OperatorRefresh before it expires, and calls to admin methods with `X-Rave-Reason` for writes.
// Errors are the browser SDK's `RaveError` (Clients/web/rave.js), read from the gateway's JSON error body.

import { RaveError, Status } from "/sdk/rave.js";

const sessionKey = "rave.console.session";
const refreshMarginMs = 60_000;

/** An operator's session on the gateway's HTTP front door. */
export class OperatorSession {
    /**
     * @param {object} [options]
     * @param {string} [options.baseUrl] the gateway's origin; default the page's
     * @param {Pick<Storage, "getItem" | "setItem" | "removeItem">} [options.storage] default sessionStorage
     * @param {(error: RaveError) => void} [options.onEnded] told when the session can no longer be used
     */
    constructor({ baseUrl = location.origin, storage = sessionStorage, onEnded = undefined } = {}) {
        this.baseUrl = baseUrl.replace(/\/+$/, "");
        this.storage = storage;
        this.onEnded = onEnded;
        /** @type {Promise<void> | null} the one refresh in flight */
        this.refreshing = null;
        this.timer = 0;
        this.state = this.#read();
        this.#schedule();
    }

    /** Whether a session is held. */
    get signedIn() { return this.state !== null; }

    /** The operator account (`Operator` of identity.proto) or null. */
    get account() { return this.state?.account ?? null; }

    /** "viewer", "support", "operator" or "owner"; "" when signed out. */
    get role() {
        const role = this.account?.role ?? "";
        return role.replace(/^OPERATOR_ROLE_/, "").toLowerCase();
    }

    /** Logs in; the TOTP code is the authenticator's current 6 digits. */
    async login(email, password, totpCode) {
        const tokens = await this.#post("rave.identity.v1.Identity/OperatorLogin",
            { email, password, totpCode }, { token: "" });
        this.#adopt(tokens);
    }

    /** Ends the session on the server (best effort) and here. */
    async logout() {
        const refreshToken = this.state?.refreshToken;
        this.#forget();
        if (refreshToken) {
            await this.#post("rave.identity.v1.Identity/OperatorLogout", { refreshToken }, { token: "" })
                .catch(() => {});
        }
    }

    /**
     * Calls an admin method and answers its response (protobuf's JSON mapping).
     * @param {string} method "rave.<area>.v1.<Service>/<Method>"
     * @param {object} [request]
     * @param {{reason?: string}} [options] the reason of a write, sent as X-Rave-Reason
     */
    async call(method, request = {}, { reason = "" } = {}) {
        const token = await this.#freshToken();
        try {
            return await this.#post(method, request, { token, reason });
        } catch (error) {
            // Once: a token the gateway no longer takes (keys rotated); an ended session fails the refresh.
            if (!(error instanceof RaveError) || error.status !== "UNAUTHENTICATED" || !this.state) throw error;
            if (this.state.accessToken === token) await this.refresh();
            return this.#post(method, request, { token: this.state.accessToken, reason });
        }
    }

    /**
     * Downloads a file from one of the gateway's GET routes (an account export's archive, docs/gateway.md) with the
     * operator's token and the reason, which the gateway records in the audit log. Answers `{blob, filename, etag}`.
     * @param {string} path "/v1/admin/users/<user>/exports/<export>/archive"
     * @param {{reason?: string}} [options]
     */
    async download(path, { reason = "" } = {}) {
        const headers = { "Accept": "application/json", "Authorization": `Bearer ${await this.#freshToken()}` };
        if (reason) headers["X-Rave-Reason"] = reason;
        const response = await this.#fetch(path, { headers, credentials: "omit", cache: "no-store" });
        if (!response.ok) throw failure(response, await response.text(), path);
        const disposition = response.headers.get("Content-Disposition") ?? "";
        return {
            blob: await response.blob(),
            filename: /filename="([^"]+)"/.exec(disposition)?.[1] ?? "download",
            etag: (response.headers.get("ETag") ?? "").replace(/"/g, ""),
        };
    }

    /** Exchanges the refresh token for new tokens; concurrent callers share one exchange. */
    refresh() {
        this.refreshing ??= this.#refreshOnce().finally(() => { this.refreshing = null; });
        return this.refreshing;
    }

    // MARK: - Internals

    /** The access token, refreshed first when it expires within the margin. */
    async #freshToken() {
        if (!this.state) throw new RaveError({ code: Status.UNAUTHENTICATED, message: "not logged in" });
        if (this.state.expiresAtMs - Date.now() < refreshMarginMs) await this.refresh();
        if (!this.state) throw new RaveError({ code: Status.UNAUTHENTICATED, message: "the session has ended" });
        return this.state.accessToken;
    }

    /** `fetch` of a path on the gateway; no answer at all is UNAVAILABLE. */
    async #fetch(path, init) {
        try {
            return await fetch(`${this.baseUrl}${path}`, init);
        } catch (error) {
            throw new RaveError({
                code: Status.UNAVAILABLE, message: `${path}: no answer from ${this.baseUrl} (${error.message})`,
                cause: error,
            });
        }
    }

    async #refreshOnce() {
        const refreshToken = this.state?.refreshToken;
        if (!refreshToken) throw new RaveError({ code: Status.UNAUTHENTICATED, message: "not logged in" });
        try {
            this.#adopt(await this.#post("rave.identity.v1.Identity/OperatorRefresh", { refreshToken }, { token: "" }));
        } catch (error) {
            if (error instanceof RaveError && ["UNAUTHENTICATED", "PERMISSION_DENIED"].includes(error.status)) {
                this.#forget();
                this.onEnded?.(error);
            }
            throw error;
        }
    }

    #adopt(tokens) {
        this.state = {
            accessToken: tokens.accessToken,
            expiresAtMs: Number(tokens.accessTokenExpiresAtUnixMs ?? 0),
            refreshToken: tokens.refreshToken,
            sessionExpiresAtMs: Number(tokens.sessionExpiresAtUnixMs ?? 0),
            account: tokens.account ?? this.state?.account ?? null,
        };
        this.storage.setItem(sessionKey, JSON.stringify(this.state));
        this.#schedule();
    }

    #forget() {
        this.state = null;
        this.storage.removeItem(sessionKey);
        clearTimeout(this.timer);
    }

    #read() {
        try {
            const state = JSON.parse(this.storage.getItem(sessionKey) ?? "null");
            return state?.accessToken && state?.refreshToken ? state : null;
        } catch {
            return null;
        }
    }

    // Refreshes a minute before the access token expires, so an open page keeps its session while it is used
    // within the server's idle limit.
    #schedule() {
        clearTimeout(this.timer);
        if (!this.state) return;
        const delay = Math.max(0, this.state.expiresAtMs - Date.now() - refreshMarginMs);
        this.timer = setTimeout(() => { this.refresh().catch(() => {}); }, delay);
    }

    async #post(method, request, { token, reason = "" }) {
        const headers = { "Content-Type": "application/json", "Accept": "application/json" };
        if (token) headers.Authorization = `Bearer ${token}`;
        if (reason) headers["X-Rave-Reason"] = reason;
        const response = await this.#fetch(`/v1/${method}`, {
            method: "POST", headers, body: JSON.stringify(request), credentials: "omit", cache: "no-store",
        });
        const text = await response.text();
        if (response.ok) {
            try {
                return text ? JSON.parse(text) : {};
            } catch {
                // An answer that is not JSON: reported below like any other failure.
            }
        }
        throw failure(response, text, method);
    }
}

/** The `RaveError` of a failed answer: the gateway's JSON error body, or the HTTP status when there is none. */
function failure(response, text, what) {
    let body = null;
    try {
        body = text ? JSON.parse(text) : null;
    } catch {
        body = null;
    }
    const requestId = response.headers.get("X-Request-Id") ?? "";
    if (body && body.code !== undefined) {
        const code = typeof body.code === "number" ? body.code : (Status[body.code] ?? Status.UNKNOWN);
        return new RaveError({
            code, message: body.message ?? "", details: body.details ?? "", notProcessed: Boolean(body.notProcessed),
            requestId, httpStatus: response.status,
        });
    }
    return new RaveError({
        code: Status.UNKNOWN, message: `${what}: HTTP ${response.status} ${response.statusText}`.trim(),
        requestId, httpStatus: response.status,
    });
}
