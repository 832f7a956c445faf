// Render Slack's mrkdwn, the Markdown of streamed answers, and Block Kit as plain DOM.
// Only what the bot sends is covered well; anything else is shown as a small grey note.
"use strict";

const BlockKit = (() => {
  const EMOJI = {
    raised_hand: "✋", white_check_mark: "✅", no_entry_sign: "🚫", grey_question: "❔", question: "❓",
    warning: "⚠️", x: "❌", heavy_check_mark: "✔️", heavy_multiplication_x: "✖️", hourglass: "⌛",
    hourglass_flowing_sand: "⏳", leftwards_arrow_with_hook: "↩️",
    lock: "🔒", wave: "👋", tada: "🎉", sunny: "☀️", cloud: "☁️", rain_cloud: "🌧️", memo: "📝",
    wastebasket: "🗑️", moneybag: "💰", robot_face: "🤖", bust_in_silhouette: "👤", pencil2: "✏️",
    information_source: "ℹ️", speech_balloon: "💬", thinking_face: "🤔", eyes: "👀", mag: "🔍", busts_in_silhouette: "👥", scroll: "📜", palm_tree: "🌴", handshake: "🤝", scissors: "✂️",
    rotating_light: "🚨",
  };

  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const unescapeSlack = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

  function emoji(html) {
    return html.replace(/:([a-z0-9_+\-]+):/g, (m, name) => EMOJI[name] || m);
  }

  function formatDate(seconds, format, fallback) {
    const d = new Date(Number(seconds) * 1000);
    if (isNaN(d)) return esc(fallback || "");
    const date = d.toLocaleDateString(undefined, { month: "short", day: "numeric", year: "numeric" });
    const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
    return esc(format.replace(/\{date[a-z_]*\}/g, date).replace(/\{time[a-z_]*\}/g, time));
  }

  // <...> tokens of Slack's markup: mentions, channels, special mentions, dates, links.
  function token(inner, ctx) {
    const [target, label] = splitOnce(inner, "|");
    if (target.startsWith("@")) {
      const id = target.slice(1);
      return `<span class="mention">@${esc(ctx.nameOf(id))}</span>`;
    }
    if (target.startsWith("#")) return `<span class="mention">#${esc(label || ctx.channelName(target.slice(1)))}</span>`;
    if (target.startsWith("!date^")) {
      const [, seconds, format] = target.split("^");
      return formatDate(seconds, format || "{date}", label);
    }
    if (target.startsWith("!subteam^")) {  // as Slack shows a user group: by its handle
      return `<span class="mention">@${esc(label || (ctx.groupHandle ? ctx.groupHandle(target.slice(9)) : target.slice(9)))}</span>`;
    }
    if (target.startsWith("!")) return `<span class="mention">@${esc(target.slice(1).split("^")[0])}</span>`;
    const url = unescapeSlack(target);
    const safe = /^(https?:|mailto:)/i.test(url) ? url : "#";
    return `<a href="${esc(safe)}" target="_blank" rel="noopener">${esc(unescapeSlack(label || target))}</a>`;
  }

  function splitOnce(s, sep) {
    const i = s.indexOf(sep);
    return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + 1)];
  }

  // Inline formatting of one line: code, Slack's <...> tokens, bold, italics, strike, emoji. `keep` sets
  // rendered pieces aside so later rules cannot touch them.
  function inline(text, ctx, rules) {
    const kept = [];
    const keep = (html) => `\u0000${kept.push(html) - 1}\u0000`;
    let s = text.replace(/`([^`\n]+)`/g, (m, code) =>
      keep(`<code>${esc(rules === "mrkdwn" ? unescapeSlack(code) : code)}</code>`));
    if (rules === "mrkdwn") {
      s = s.replace(/<([^<>\n]+)>/g, (m, inner) => keep(token(inner, ctx)));
      s = esc(unescapeSlack(s));
      s = s.replace(/(^|[\s(])\*(?=\S)([^*\n]*?\S)\*(?=$|[\s).,!?:;])/g, "$1<b>$2</b>");
      s = s.replace(/(^|[\s(])_(?=\S)([^_\n]*?\S)_(?=$|[\s).,!?:;])/g, "$1<i>$2</i>");
      s = s.replace(/(^|[\s(])~(?=\S)([^~\n]*?\S)~(?=$|[\s).,!?:;])/g, "$1<s>$2</s>");
    } else {
      s = s.replace(/\[([^\]\n]+)\]\((https?:[^)\s]+)\)/g, (m, label, url) =>
        keep(`<a href="${esc(url)}" target="_blank" rel="noopener">${esc(label)}</a>`));
      s = s.replace(/<@([A-Z0-9_]+)>/g, (m, id) => keep(`<span class="mention">@${esc(ctx.nameOf(id))}</span>`));
      s = esc(s);
      s = s.replace(/\*\*(?=\S)(.+?\S)\*\*/g, "<b>$1</b>").replace(/__(?=\S)(.+?\S)__/g, "<b>$1</b>");
      s = s.replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, "$1<i>$2</i>");
      s = s.replace(/(^|[^_\w])_(?=\S)([^_\n]*?\S)_(?!\w)/g, "$1<i>$2</i>");
      s = s.replace(/~~(?=\S)(.+?\S)~~/g, "<s>$1</s>");
    }
    s = emoji(s);
    return s.replace(/\u0000(\d+)\u0000/g, (m, i) => kept[Number(i)]);
  }

  // Lines of text outside code blocks: quotes, bullets, headings (Markdown).
  function lines(text, ctx, rules) {
    const out = [];
    for (const raw of text.split("\n")) {
      let line = raw;
      let cls = "";
      let tag = "div";
      const quote = rules === "mrkdwn" ? /^(&gt;|>)\s?/ : /^>\s?/;
      if (quote.test(line)) { line = line.replace(quote, ""); cls = "quote"; }
      if (rules === "markdown") {
        const heading = /^\s{0,3}#{1,6}\s+(.*)$/.exec(line);
        if (heading) { line = heading[1]; tag = "div"; cls += " md-heading"; }
        const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
        if (bullet) { line = "• " + bullet[2]; cls += " bullet"; }
      }
      const html = inline(line, ctx, rules);
      out.push(`<${tag} class="line ${cls.trim()}">${html || "&nbsp;"}</${tag}>`);
    }
    return out.join("");
  }

  // A whole text: ``` blocks kept verbatim, the rest formatted.
  function text(source, ctx, rules = "mrkdwn") {
    const pieces = String(source || "").split("```");
    return pieces
      .map((piece, i) => {
        if (i % 2 === 1) {
          let code = piece.replace(/^[a-z]*\n/, "").replace(/^\n/, "").replace(/\n$/, "");
          if (rules === "mrkdwn") code = unescapeSlack(code);
          return `<pre>${esc(code)}</pre>`;
        }
        return piece.replace(/^\n|\n$/g, "") ? lines(piece.replace(/^\n|\n$/g, ""), ctx, rules) : "";
      })
      .join("");
  }

  function textObject(obj, ctx) {
    if (!obj) return "";
    if (typeof obj === "string") return esc(obj);
    if (obj.type === "plain_text") return emoji(esc(obj.text || ""));
    return text(obj.text, ctx, "mrkdwn");
  }

  function el(tag, cls, html) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (html !== undefined) node.innerHTML = html;
    return node;
  }

  // One interactive element in a message (buttons, selects); `onAction(element, value)` sends the click.
  function actionElement(element, ctx, onAction) {
    if (element.type === "button") {
      const b = el("button", "bk-button " + (element.style || "default"), textObject(element.text, ctx));
      b.type = "button";
      b.dataset.actionId = element.action_id || "";
      if (!onAction) b.disabled = true;
      else b.addEventListener("click", () => { b.disabled = true; onAction(element, element.value).finally(() => { b.disabled = false; }); });
      return b;
    }
    if (element.type === "static_select" || element.type === "overflow") {
      const select = el("select", "bk-select");
      select.appendChild(new Option(element.placeholder ? element.placeholder.text : "Choose…", ""));
      for (const o of element.options || []) select.appendChild(new Option(o.text.text, o.value));
      if (!onAction) select.disabled = true;
      else select.addEventListener("change", () => select.value && onAction(element, select.value));
      return select;
    }
    if (element.type === "checkboxes") {
      // ticking decides nothing: the page reads the ticked boxes when a button is pressed (the view's state)
      const group = el("div", "bk-choices bk-checkboxes");
      const initial = new Set((element.initial_options || []).map((o) => o.value));
      for (const o of element.options || []) {
        const line = el("label", "bk-choice");
        const box = el("input");
        box.type = "checkbox"; box.value = o.value; box.checked = initial.has(o.value);
        box.dataset.actionId = element.action_id || "";
        if (!onAction) box.disabled = true;
        line.appendChild(box);
        line.appendChild(el("span", "", textObject(o.text, ctx)));
        group.appendChild(line);
      }
      return group;
    }
    if (element.type === "image") {
      const img = el("img", "bk-accessory-image");
      img.src = element.image_url; img.alt = element.alt_text || "";
      return img;
    }
    return el("span", "bk-unsupported", `[${esc(element.type)}]`);
  }

  // A list of blocks as a DOM node; `onAction(block, element, value)` for interactive elements.
  function blocks(list, ctx, onAction) {
    const root = el("div", "blocks");
    for (const block of list || []) {
      const act = onAction ? (element, value) => onAction(block, element, value) : null;
      let node;
      switch (block.type) {
        case "section": {
          node = el("div", "bk-section");
          const body = el("div", "bk-section-text", textObject(block.text, ctx));
          node.appendChild(body);
          if (block.fields) {
            const grid = el("div", "bk-fields");
            for (const f of block.fields) grid.appendChild(el("div", "bk-field", textObject(f, ctx)));
            body.appendChild(grid);
          }
          if (block.accessory) node.appendChild(actionElement(block.accessory, ctx, act));
          break;
        }
        case "context":
          node = el("div", "bk-context");
          for (const e of block.elements || []) {
            if (e.type === "image") { const img = el("img"); img.src = e.image_url; img.alt = e.alt_text || ""; node.appendChild(img); }
            else node.appendChild(el("span", "", textObject(e, ctx)));
          }
          break;
        case "divider":
          node = el("hr", "bk-divider");
          break;
        case "header":
          node = el("div", "bk-header", textObject(block.text, ctx));
          break;
        case "image":
          node = el("img", "bk-image");
          node.src = block.image_url; node.alt = block.alt_text || "";
          break;
        case "actions":
          node = el("div", "bk-actions");
          for (const e of block.elements || []) node.appendChild(actionElement(e, ctx, act));
          break;
        case "context_actions":  // feedback buttons under an answer (and icon buttons)
          node = el("div", "bk-context-actions");
          for (const e of block.elements || []) {
            if (e.type === "feedback_buttons") {
              for (const [button, kind] of [[e.positive_button, "positive"], [e.negative_button, "negative"]]) {
                const b = el("button", `bk-feedback ${kind}`, textObject(button.text, ctx));
                b.type = "button";
                b.dataset.actionId = e.action_id || "";
                b.dataset.value = button.value;
                b.setAttribute("aria-label", button.accessibility_label || button.text.text);
                b.setAttribute("aria-pressed", String(Boolean(ctx.pressed && ctx.pressed(block, e) === button.value)));
                if (!act) b.disabled = true;
                else b.addEventListener("click", () => act(e, button.value));
                node.appendChild(b);
              }
            } else if (e.type === "icon_button") {
              node.appendChild(actionElement({ ...e, type: "button" }, ctx, act));
            }
          }
          break;
        case "rich_text":
          node = el("div", "bk-section", esc(richText(block)));
          break;
        case "task_card":  // a thinking step of a streamed answer (task_update chunks)
          node = taskCard(block);
          break;
        case "plan":
          node = el("div", "bk-plan", block.title ? `<div class="bk-plan-title">${esc(block.title)}</div>` : "");
          for (const task of block.tasks || []) node.appendChild(taskCard(task));
          break;
        default:
          node = el("div", "bk-unsupported", `[${esc(block.type)} block]`);
      }
      root.appendChild(node);
    }
    return root;
  }

  const TASK_ICONS = { pending: "⏳", in_progress: "⚙️", complete: "✅", error: "⚠️" };
  function taskCard(block) {
    const node = el("div", `bk-task bk-task-${esc(block.status || "pending")}`);
    node.dataset.taskId = block.task_id || "";
    node.dataset.status = block.status || "";
    node.appendChild(el("span", "bk-task-icon", TASK_ICONS[block.status] || "•"));
    node.appendChild(el("span", "bk-task-title", esc(block.title || "")));
    if (block.details) node.appendChild(el("span", "bk-task-details", esc(richText(block.details))));
    if (block.output) node.appendChild(el("div", "bk-task-output", esc(richText(block.output))));
    return node;
  }

  function richText(block) {
    const out = [];
    const walk = (n) => {
      if (!n) return;
      if (n.type === "text") out.push(n.text);
      else if (n.type === "link") out.push(n.text || n.url);
      else if (n.type === "user") out.push("@" + n.user_id);
      for (const c of n.elements || []) walk(c);
    };
    walk(block);
    return out.join("");
  }

  // An input block of a modal; `value` reads it back as the playground's submit endpoint wants it.
  function input(block, ctx) {
    const e = block.element || {};
    const wrap = el("div", "bk-input");
    wrap.dataset.blockId = block.block_id;
    const label = el("label", "bk-label", textObject(block.label, ctx) + (block.optional ? ' <span class="optional">(optional)</span>' : ""));
    wrap.appendChild(label);
    let read;
    if (e.type === "plain_text_input" || e.type === "number_input" || e.type === "email_text_input" || e.type === "url_text_input") {
      const field = e.multiline ? el("textarea") : el("input");
      if (e.type === "number_input") {
        field.type = "number";
        field.step = e.is_decimal_allowed ? "any" : "1";
        if (e.min_value !== undefined) field.min = e.min_value;
        if (e.max_value !== undefined) field.max = e.max_value;
      } else if (!e.multiline) field.type = "text";
      if (e.multiline) field.rows = 4;
      if (e.max_length) field.maxLength = e.max_length;
      if (e.initial_value !== undefined && e.initial_value !== null) field.value = e.initial_value;
      if (e.placeholder) field.placeholder = e.placeholder.text;
      field.name = block.block_id;
      wrap.appendChild(field);
      read = () => field.value;
    } else if (e.type === "static_select") {
      const select = el("select");
      select.appendChild(new Option(e.placeholder ? e.placeholder.text : "Choose an option", ""));
      for (const o of e.options || []) select.appendChild(new Option(o.text.text, o.value));
      if (e.initial_option) select.value = e.initial_option.value;
      select.name = block.block_id;
      wrap.appendChild(select);
      read = () => select.value || null;
    } else if (e.type === "users_select") {
      const select = el("select");
      select.appendChild(new Option(e.placeholder ? e.placeholder.text : "Choose a person", ""));
      for (const p of ctx.people ? ctx.people() : []) select.appendChild(new Option(p.real_name, p.id));
      if (e.initial_user) select.value = e.initial_user;
      select.name = block.block_id;
      wrap.appendChild(select);
      read = () => select.value || null;
    } else if (e.type === "checkboxes" || e.type === "radio_buttons") {
      const kind = e.type === "checkboxes" ? "checkbox" : "radio";
      const initial = new Set((e.initial_options || (e.initial_option ? [e.initial_option] : [])).map((o) => o.value));
      const group = el("div", "bk-choices");
      const boxes = [];
      for (const o of e.options || []) {
        const line = el("label", "bk-choice");
        const box = el("input");
        box.type = kind; box.name = block.block_id; box.value = o.value; box.checked = initial.has(o.value);
        line.appendChild(box);
        line.appendChild(el("span", "", textObject(o.text, ctx)));
        group.appendChild(line);
        boxes.push(box);
      }
      wrap.appendChild(group);
      read = () => (kind === "checkbox" ? boxes.filter((b) => b.checked).map((b) => b.value) : (boxes.find((b) => b.checked) || {}).value || null);
    } else {
      const field = el("input");
      field.type = "text";
      wrap.appendChild(field);
      wrap.appendChild(el("div", "hint", `(${esc(e.type)} shown as text)`));
      read = () => field.value;
    }
    if (block.hint) wrap.appendChild(el("div", "hint", textObject(block.hint, ctx)));
    wrap.appendChild(el("div", "field-error"));
    return { node: wrap, actionId: e.action_id, read };
  }

  return { text, textObject, blocks, input, esc };
})();
