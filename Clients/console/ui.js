// The console's shared pieces: a DOM builder, tables, forms, the confirm-with-reason dialog and the status line that
// shows a call's outcome (an error as its status, HTTP status and the server's message).

/**
 * Makes an element: `el("button", {type: "button", onclick}, "Save")`. Attributes starting with "on" are listeners;
 * `dataset` is an object of data-* values; children are nodes, strings or arrays of them (null skipped).
 */
export function el(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
        if (value === undefined || value === null || value === false) continue;
        if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
        else if (name === "dataset") Object.assign(element.dataset, value);
        else if (name === "text") element.textContent = value;
        else if (value === true) element.setAttribute(name, "");
        else element.setAttribute(name, String(value));
    }
    append(element, children);
    return element;
}

function append(parent, children) {
    for (const child of children.flat(Infinity)) {
        if (child === null || child === undefined || child === false) continue;
        parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
}

/** A section of a page with a heading; answers the section. */
export function card(title, ...children) {
    const id = `card-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
    return el("section", { class: "card", "aria-labelledby": id }, el("h2", { id }, title), children);
}

/**
 * A table: `columns` are `{label, value: (row) => string | Node}`; a row with `key` gets `data-key`.
 * Wide tables scroll inside their own box on a phone rather than widening the page.
 */
export function table({ caption, columns, rows, empty = "Nothing to show.", key = undefined }) {
    if (rows.length === 0) return el("p", { class: "empty" }, empty);
    return el("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": caption },
        el("table", {},
            el("caption", {}, caption),
            el("thead", {}, el("tr", {}, columns.map((column) => el("th", { scope: "col" }, column.label)))),
            el("tbody", {}, rows.map((row) => el("tr", { dataset: key ? { key: key(row) } : undefined },
                columns.map((column) => el("td", { "data-label": column.label }, column.value(row) ?? "")))))));
}

/** A definition list of label → value pairs (values are strings or nodes). */
export function facts(pairs) {
    return el("dl", { class: "facts" }, pairs.map(([label, value]) => [el("dt", {}, label), el("dd", {}, value)]));
}

let fieldCounter = 0;

/**
 * A form. `fields` are `{name, label, type?, value?, required?, options?: [[value, label]], hint?, pattern?,
 * placeholder?}` (type "select", "checkbox", "textarea" or an input type). `onSubmit(values, form)` gets the values
 * by name (checkboxes as booleans). Answers the form; `form.fill(values)` sets fields and focuses the first, for
 * editing a row; `form.set(values)` only sets them (a form filled as its page loads).
 */
export function form({ id, fields, submit, onSubmit, className = "" }) {
    const inputs = {};
    const rows = fields.map((field) => {
        const inputId = `${id}-${field.name}-${fieldCounter += 1}`;
        let input;
        const common = { id: inputId, name: field.name, required: field.required ?? false };
        if (field.type === "select") {
            input = el("select", common, field.options.map(([value, label]) => el("option", { value }, label)));
        } else if (field.type === "textarea") {
            input = el("textarea", { ...common, rows: field.rows ?? 3, maxlength: field.maxlength });
        } else {
            input = el("input", {
                ...common, type: field.type ?? "text", pattern: field.pattern, placeholder: field.placeholder,
                autocomplete: field.autocomplete ?? "off", spellcheck: "false", inputmode: field.inputmode,
                min: field.min, max: field.max, step: field.step, maxlength: field.maxlength,
            });
        }
        if (field.value !== undefined) setValue(input, field.value);
        inputs[field.name] = input;
        const hintId = field.hint ? `${inputId}-hint` : undefined;
        if (hintId) input.setAttribute("aria-describedby", hintId);
        const label = el("label", { for: inputId }, field.label);
        return el("div", { class: field.type === "checkbox" ? "field check" : "field" },
            field.type === "checkbox" ? [input, label] : [label, input],
            field.hint ? el("small", { id: hintId, class: "hint" }, field.hint) : null);
    });
    const button = el("button", { type: "submit", id: `${id}-submit` }, submit);
    const element = el("form", { id, class: `form ${className}`.trim() }, rows, el("div", { class: "actions" }, button));
    element.addEventListener("submit", (event) => {
        event.preventDefault();
        const values = Object.fromEntries(Object.entries(inputs).map(([name, input]) =>
            [name, input.type === "checkbox" ? input.checked : input.value.trim()]));
        onSubmit(values, element);
    });
    element.set = (values) => {
        for (const [name, value] of Object.entries(values)) if (inputs[name]) setValue(inputs[name], value);
    };
    element.fill = (values) => {
        element.set(values);
        Object.values(inputs)[0]?.focus();
    };
    element.inputs = inputs;
    return element;
}

function setValue(input, value) {
    if (input.type === "checkbox") input.checked = Boolean(value);
    else input.value = value ?? "";
}

/**
 * Asks for the reason of a write in a modal dialog (focus stays inside it; Escape cancels). Answers the reason
 * (1…500 characters), or null when cancelled. The gateway records it in the audit log (`X-Rave-Reason`).
 */
export function confirmWithReason({ title, text }) {
    const dialog = document.getElementById("reason-dialog");
    const reasonField = document.getElementById("reason-text");
    document.getElementById("reason-title").textContent = title;
    document.getElementById("reason-what").textContent = text;
    reasonField.value = "";
    const opener = document.activeElement;
    return new Promise((resolve) => {
        const finish = () => {
            dialog.removeEventListener("close", finish);
            const reason = dialog.returnValue === "confirm" ? reasonField.value.trim() : null;
            if (opener instanceof HTMLElement) opener.focus();
            resolve(reason || null);
        };
        dialog.addEventListener("close", finish);
        dialog.returnValue = "";
        dialog.showModal();
        reasonField.focus();
    });
}

/** The words of an error for a person: "PERMISSION_DENIED (HTTP 403): <the server's message>". */
export function describe(error) {
    if (error && error.status && typeof error.code === "number") {
        const http = error.httpStatus ? ` (HTTP ${error.httpStatus})` : "";
        return `${error.status}${http}: ${error.message}`;
    }
    return String(error?.message ?? error);
}

/** A status line for a page's actions: polite for progress and success, an alert for errors. */
export function statusLine(id) {
    return el("p", { id, class: "status", role: "status", "aria-live": "polite" });
}

/** Shows `text` on a status line in `state` ("busy", "ok" or "error"). */
export function showStatus(status, state, text) {
    status.className = `status ${state}`;
    status.dataset.state = state;
    status.textContent = text;
}

/**
 * Runs `work` with `status` showing progress, then its outcome: `done(result)` text, or the error. Answers the
 * result, or undefined after an error.
 */
export async function run(status, work, done = () => "Done.") {
    showStatus(status, "busy", "Working…");
    try {
        const result = await work();
        showStatus(status, "ok", done(result));
        return result;
    } catch (error) {
        status.dataset.code = error?.status ?? "";
        status.setAttribute("role", "alert");
        showStatus(status, "error", describe(error));
        return undefined;
    } finally {
        if (status.dataset.state !== "error") status.setAttribute("role", "status");
    }
}

/** Milliseconds since the epoch (a number or the string JSON gives 64-bit integers as) as local date and time. */
export function when(unixMs) {
    const ms = Number(unixMs ?? 0);
    return ms ? new Date(ms).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "medium" }) : "—";
}

/** An enum value without its type's prefix, for reading: "AUDIT_ACTION_BAN_USER" → "ban user". */
export function enumText(value, prefix) {
    return String(value ?? "").replace(prefix, "").toLowerCase().replace(/_/g, " ") || "—";
}

/** Whether `value` is a Rave ID (32 lowercase hex digits). */
export const raveIdPattern = "[0-9a-f]{32}";

/** A new id for idempotent writes (32 lowercase hex digits). */
export function newId() {
    return crypto.randomUUID().replace(/-/g, "");
}
