// What every section of the cluster page does with the API: run a change and follow the
// operation it starts, and load a part of the page, showing a failure in its place.

import { call } from "./api.js";
import { errorBox, fill, h } from "./dom.js";

/** Run a change; a 202 follows its operation in `where` and calls `done` at its end. */
export async function change(ctx, where, method, apiPath, requestBody, done) {
  where.replaceChildren();
  try {
    const { status, body } = await call(method, apiPath, requestBody);
    if (status === 202 && body.operationId) {
      const panel = h("div", { class: "panel", "data-followed": body.operationId });
      where.append(panel);
      ctx.follow(panel, body.operationId, done);
    } else {
      where.append(h("div", { class: "notice", "data-unchanged": "true" }, body.changed === false ? "Nothing to change: the cluster is already like that." : "Done."));
      done(body);
    }
  } catch (err) {
    where.append(errorBox(err));
  }
}

/** Run `load`; a failure is shown in `el`. */
export async function loadInto(el, load) {
  try {
    await load();
  } catch (err) {
    fill(el, errorBox(err));
  }
}
