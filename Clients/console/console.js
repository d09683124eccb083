// The studio's web console (Clients/console/README.md): login, navigation between pages, and the session's end.
// Served by the gateway at /console/; plain ES modules, no build step.

import { OperatorSession } from "./api.js";
import { describe, el } from "./ui.js";
import { pages } from "./pages.js";

const session = new OperatorSession({ onEnded: (error) => showLogin(`Your session ended: ${describe(error)}`) });
const $ = (id) => document.getElementById(id);
const appKey = "rave.console.app";

/** What every page gets: the session, the chosen application id, and a way to open another page. */
const context = {
    session,
    get appId() { return $("app-id").value.trim(); },
    open(page, query = "") { location.hash = `#/${page}${query ? `?${query}` : ""}`; },
};

function showLogin(message = "") {
    $("loading").hidden = true;
    $("page").hidden = true;
    $("nav").hidden = true;
    $("who").hidden = true;
    $("login").hidden = false;
    $("login-status").textContent = message;
    $("login-status").className = message ? "status error" : "status";
    document.body.dataset.page = "login";
    document.title = "Log in · Rave Console";
    $("login-email").focus();
}

function showShell() {
    $("loading").hidden = true;
    $("login").hidden = true;
    $("nav").hidden = false;
    $("who").hidden = false;
    $("page").hidden = false;
    $("who-email").textContent = session.account?.email ?? "";
    $("who-role").textContent = session.role;
    document.body.dataset.role = session.role;
}

// "#/players?user=…" → ["players", URLSearchParams]
function route() {
    const [path, query = ""] = location.hash.replace(/^#\/?/, "").split("?");
    return [pages[path] ? path : "overview", new URLSearchParams(query)];
}

let rendering = 0;

async function render() {
    if (!session.signedIn) return showLogin();
    showShell();
    const [name, query] = route();
    const page = pages[name];
    const ticket = (rendering += 1);
    for (const link of document.querySelectorAll("#nav a")) {
        if (link.dataset.page === name) link.setAttribute("aria-current", "page");
        else link.removeAttribute("aria-current");
    }
    const container = $("page");
    container.replaceChildren(el("h1", { id: "page-title", tabindex: "-1" }, page.title));
    document.title = `${page.title} · Rave Console`;
    document.body.dataset.page = name;
    delete document.body.dataset.loaded;
    try {
        await page.render(container, context, query);
    } catch (error) {
        container.append(el("p", { class: "status error", role: "alert" }, describe(error)));
    }
    if (ticket === rendering) document.body.dataset.loaded = name;
}

$("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = $("login-status");
    const button = $("login-submit");
    button.disabled = true;
    status.className = "status busy";
    status.textContent = "Logging in…";
    try {
        await session.login($("login-email").value.trim(), $("login-password").value, $("login-code").value.trim());
        $("login-form").reset();
        status.textContent = "";
        await render();
        $("page-title")?.focus();
    } catch (error) {
        status.className = "status error";
        status.setAttribute("role", "alert");
        status.textContent = describe(error);
    } finally {
        button.disabled = false;
    }
});

$("logout").addEventListener("click", async () => {
    await session.logout();
    showLogin("You are logged out.");
});

// The application the content pages act on: from ?app= in the address, else the last one chosen in this tab.
const appField = $("app-id");
appField.value = new URLSearchParams(location.search).get("app") ?? sessionStorage.getItem(appKey) ?? "";
appField.addEventListener("change", () => {
    sessionStorage.setItem(appKey, appField.value.trim());
    render();
});
$("app-form").addEventListener("submit", (event) => event.preventDefault());

window.addEventListener("hashchange", async () => {
    await render();
    $("page-title")?.focus();
});
render();
