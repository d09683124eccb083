// Every page of the console by its name in the address (#/<name>): `{title, render(container, context, query)}`.

import { contentPages } from "./pages-content.js";
import { peoplePages } from "./pages-people.js";
import { studioPages } from "./pages-studio.js";

export const pages = { ...peoplePages, ...contentPages, ...studioPages };
