// The playground page: long-polls /play/state for what the chosen person sees, renders channels,
// threads and modals, and sends what the person does to /play/*.
"use strict";

const ui = {
  user: localStorage.getItem("playground.user") || "UALICE",
  channel: localStorage.getItem("playground.channel") || "C0GENERAL",
  thread: null, // ts of the open thread
  data: null,
  version: -1,
  poll: null, // AbortController of the running long poll
  modalKey: null,
  pressed: {}, // feedback buttons pressed, by pressedKey
  ticked: new Set(), // values of the Home's ticked bulk checkboxes
};

const $ = (id) => document.getElementById(id);

// --- talking to the playground ---------------------------------------------------------------
async function send(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user: ui.user, ...body }),
  });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

async function pollForever() {
  for (;;) {
    ui.poll = new AbortController();
    try {
      const since = ui.version < 0 ? "" : `&since=${ui.version}`;
      const response = await fetch(`/play/state?user=${ui.user}${since}`, { signal: ui.poll.signal });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      if (data.me !== ui.user) continue; // a poll of the person chosen before
      ui.data = data;
      ui.version = data.version;
      render();
      document.body.classList.remove("offline");
    } catch (error) {
      if (error.name === "AbortError") continue;
      // the playground is away (restarted, or stopped): keep asking, and take a whole new state when it is back
      document.body.classList.add("offline");
      ui.version = -1;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function refreshNow() {
  ui.version = -1;
  if (ui.poll) ui.poll.abort();
}

// --- names --------------------------------------------------------------------------------------
const ctx = {
  nameOf(id) {
    const person = ui.data && ui.data.people.find((p) => p.id === id);
    return person ? person.real_name : id;
  },
  groupHandle(id) {
    const group = ui.data && (ui.data.usergroups || []).find((g) => g.id === id);
    return group ? group.handle : id;
  },
  channelName(id) {
    const channel = ui.data && ui.data.channels.find((c) => c.id === id);
    return channel ? channel.name : id;
  },
  people() {
    return ui.data ? ui.data.people.filter((p) => !p.is_bot) : [];
  },
};

function botName() {
  return ctx.nameOf(ui.data.bot_user_id);
}

function channelLabel(channel) {
  return channel.is_im ? botName() : `# ${channel.name}`;
}

// --- rendering ----------------------------------------------------------------------------------
function render() {
  const data = ui.data;
  if (!data.channels.some((c) => c.id === ui.channel)) ui.channel = "C0GENERAL";
  renderTopbar(data);
  renderSidebar(data);
  renderChannel(data);
  renderThread(data);
  renderModal(data.modal);
}

function renderTopbar(data) {
  const badge = $("model-badge");
  badge.textContent = data.info.demo_model ? "Offline demo model" : `Model: ${data.info.model}`;
  badge.title = data.info.model;
  badge.className = "badge " + (data.info.demo_model ? "demo" : "real");
  const who = $("who");
  if (!who.options.length) {
    for (const p of data.people.filter((p) => !p.is_bot)) who.appendChild(new Option(p.real_name, p.id));
  }
  who.value = ui.user;
  const me = data.people.find((p) => p.id === ui.user);
  $("lang").value = (me && me.locale) || "en-US";
}

function renderSidebar(data) {
  const fill = (list, channels) => {
    list.innerHTML = "";
    for (const channel of channels) {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = "#";
      a.textContent = channelLabel(channel);
      if (channel.id === ui.channel && !ui.home) a.className = "active";
      a.addEventListener("click", (event) => { event.preventDefault(); openChannel(channel.id); });
      li.appendChild(a);
      list.appendChild(li);
    }
  };
  fill($("channel-list"), data.channels.filter((c) => !c.is_im));
  fill($("dm-list"), data.channels.filter((c) => c.is_im));
  $("home-entry").hidden = false;
  $("home-link").className = ui.home ? "active" : "";
  $("home-link").textContent = `${botName()} · Home`;
}

function openChannel(id) {
  const dm = ((ui.data && ui.data.channels) || []).find((c) => c.id === id && c.is_im);
  if (dm && ui.channel !== id) send("/play/home/open", { tab: "messages" }).catch(() => {});  // the agent view's DM opened
  if (ui.channel !== id) $("reply-text").value = "";
  ui.channel = id;
  ui.home = false;
  ui.thread = null;
  localStorage.setItem("playground.channel", id);
  render();
  $("composer-text").focus();
}

function messagesIn(channel) {
  return ui.data.messages.filter((m) => m.channel === channel);
}

function renderChannel(data) {
  const channel = data.channels.find((c) => c.id === ui.channel);
  const list = $("messages");
  const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.innerHTML = "";
  if (ui.home) {
    $("channel-title").textContent = `${botName()} · Home`;
    $("channel-hint").textContent = "your approvals; tool policies if you are an admin";
    if (data.home) {
      const view = BlockKit.blocks(data.home.blocks, ctx, (block, element, value) => clickHome(block, element, value));
      view.classList.add("home-view");  // a margin as Slack's Home tab has, so nothing touches the pane's edges
      list.appendChild(view);
    }
    // the ticked bulk checkboxes survive the page's re-rendering, as a Slack client keeps a view's state
    for (const box of list.querySelectorAll("input[type=checkbox][data-action-id]")) {
      box.checked = ui.ticked.has(box.value);
      box.addEventListener("change", () => (box.checked ? ui.ticked.add(box.value) : ui.ticked.delete(box.value)));
    }
    $("composer").hidden = true;
    $("suggestions").hidden = true;
    return;
  }
  $("composer").hidden = false;
  $("suggestions").hidden = false;
  $("channel-title").textContent = channelLabel(channel);
  $("channel-hint").textContent = channel.is_im
    ? "every message starts a conversation in its thread"
    : "mention @bot to start a conversation in a thread";
  const example = ui.data.info.suggestions[0];
  $("composer-text").placeholder = channel.is_im || !example ? `Message ${botName()}` : `Message #general — e.g. @bot ${example}`;
  const all = messagesIn(channel.id);
  const top = all.filter((m) => !m.thread_ts || m.thread_ts === m.ts);
  if (!top.length) {
    list.appendChild(Object.assign(document.createElement("div"), {
      className: "empty",
      innerHTML: channel.is_im
        ? "This is your DM with the bot. Say something below, or pick a suggestion."
        : "Nothing here yet. Mention <b>@bot</b> with a request, or pick a suggestion below.",
    }));
  }
  for (const message of top) {
    const replies = all.filter((m) => m.thread_ts === message.ts && m.ts !== message.ts && !m.ephemeral);
    const node = messageNode(message);
    if (replies.length) {
      const link = document.createElement("a");
      link.href = "#";
      link.className = "replies" + (ui.thread === message.ts ? " open" : "");
      const last = replies[replies.length - 1];
      link.textContent = `${replies.length} ${replies.length === 1 ? "reply" : "replies"} · last at ${clock(last.ts)}`;
      link.addEventListener("click", (event) => { event.preventDefault(); openThread(message.ts); });
      node.querySelector(".body").appendChild(link);
    }
    list.appendChild(node);
  }
  renderSuggestions(channel);
  if (stick) list.scrollTop = list.scrollHeight;
}

function renderSuggestions(channel) {
  const box = $("suggestions");
  box.innerHTML = "<span>Try:</span>";
  const offered = (ui.data.suggested_prompts || {})[channel.id];  // the bot's suggested prompts in its DM
  // elsewhere, what to type for this agent's own tools (the playground names them)
  const prompts = offered ? offered.prompts : ui.data.info.suggestions.map((text) => ({ title: text, message: text }));
  for (const prompt of prompts) {
    const text = prompt.message;
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "chip";
    chip.textContent = prompt.title;
    chip.title = prompt.message;
    chip.addEventListener("click", () => {
      const field = $("composer-text");
      field.value = channel.is_im ? text : `@bot ${text}`;
      field.focus();
    });
    box.appendChild(chip);
  }
}

function openThread(ts) {
  if (ui.thread !== ts) $("reply-text").value = ""; // a draft belongs to the thread it was typed in
  ui.thread = ts;
  render();
  $("reply-text").focus();
}

function closeThread() {
  ui.thread = null;
  $("reply-text").value = "";
  render();
}

function renderThread(data) {
  const pane = $("thread");
  const parent = ui.thread && data.messages.find((m) => m.channel === ui.channel && m.ts === ui.thread);
  pane.hidden = !parent || ui.home;
  document.body.classList.toggle("with-thread", !pane.hidden);
  if (pane.hidden) return;
  const list = $("thread-messages");
  const stick = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.innerHTML = "";
  const channel = data.channels.find((c) => c.id === ui.channel);
  $("thread-where").textContent = channelLabel(channel);
  list.appendChild(messageNode(parent));
  const replies = messagesIn(ui.channel).filter((m) => m.thread_ts === ui.thread && m.ts !== ui.thread);
  const count = replies.filter((m) => !m.ephemeral).length;
  if (count) list.appendChild(Object.assign(document.createElement("div"), { className: "divider-count", textContent: `${count} ${count === 1 ? "reply" : "replies"}` }));
  for (const reply of replies) list.appendChild(messageNode(reply));
  const status = data.statuses.find((s) => s.channel === ui.channel && s.thread_ts === ui.thread);
  $("thread-status").textContent = status ? `${botName()} ${status.status}` : "";
  if (stick) list.scrollTop = list.scrollHeight;
}

function clock(ts) {
  return new Date(Number(ts) * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

function messageNode(message) {
  const isBot = message.user === ui.data.bot_user_id;
  const node = document.createElement("div");
  node.className = "message" + (message.ephemeral ? " ephemeral" : "") + (isBot ? " from-bot" : "");
  node.dataset.ts = message.ts;
  const name = ctx.nameOf(message.user);
  const avatar = document.createElement("div");
  avatar.className = "avatar " + (isBot ? "bot" : message.user.toLowerCase());
  avatar.textContent = isBot ? "🤖" : name.slice(0, 1);
  node.appendChild(avatar);
  const body = document.createElement("div");
  body.className = "body";
  const head = document.createElement("div");
  head.className = "head";
  head.innerHTML = `<b>${BlockKit.esc(name)}</b>${isBot ? ' <span class="app-tag">APP</span>' : ""} <span class="time">${clock(message.ts)}</span>` +
    (message.edited ? ' <span class="time">(edited)</span>' : "");
  body.appendChild(head);
  if (message.ephemeral) body.appendChild(Object.assign(document.createElement("div"), { className: "only-you", textContent: "👁 Only visible to you" }));
  const onAction = (block, element, value) => click(message, block, element, value);
  const streamed = message.format === "markdown";
  // A streamed answer: its steps, then its text, then the blocks its end added (the feedback buttons).
  const bottom = streamed ? (message.blocks || []).filter((b) => b.type === "context_actions") : [];
  const top = (message.blocks || []).filter((b) => !bottom.includes(b));
  const feedbackCtx = { ...ctx, pressed: (block) => ui.pressed[pressedKey(message, block)] };
  if (top.length) body.appendChild(BlockKit.blocks(top, feedbackCtx, onAction));
  if (!(message.blocks && message.blocks.length) || streamed) {
    const text = document.createElement("div");
    text.className = "text";
    text.innerHTML = BlockKit.text(message.text, ctx, streamed ? "markdown" : "mrkdwn");
    if (message.streaming) text.insertAdjacentHTML("beforeend", '<span class="cursor">▍</span>');
    body.appendChild(text);
  }
  if (bottom.length) body.appendChild(BlockKit.blocks(bottom, feedbackCtx, onAction));
  node.appendChild(body);
  return node;
}

async function clickHome(block, element, value) {
  const selected = {};  // the view's state: the ticked checkboxes, by action_id
  for (const box of $("messages").querySelectorAll("input[type=checkbox][data-action-id]:checked")) {
    (selected[box.dataset.actionId] ||= []).push(box.value);
  }
  try {
    await send("/play/home/actions", { block_id: block.block_id, action_id: element.action_id, value, selected });
    if (Object.keys(selected).length) ui.ticked.clear();
  } catch (error) {
    alert(error.message);
  }
}

async function openHome() {
  ui.home = true;
  closeThread();
  try {
    await send("/play/home/open", {});
  } catch (error) {
    alert(error.message);
  }
}

// Which feedback button each person pressed, per message (Slack's client shows the choice; nothing is sent back).
function pressedKey(message, block) {
  return `${ui.user} ${message.channel} ${message.ts} ${block.block_id}`;
}

async function click(message, block, element, value) {
  if (element.type === "feedback_buttons") {
    ui.pressed[pressedKey(message, block)] = value;
    render();
  }
  try {
    await send("/play/actions", { channel: message.channel, ts: message.ts, block_id: block.block_id, action_id: element.action_id, value });
  } catch (error) {
    alert(error.message);
  }
}

// --- modals -------------------------------------------------------------------------------------
let modalInputs = [];

function renderModal(modal) {
  const overlay = $("modal-overlay");
  if (!modal) {
    overlay.hidden = true;
    ui.modalKey = null;
    return;
  }
  const key = modal.id + JSON.stringify(modal.view);
  if (key !== ui.modalKey) {
    ui.modalKey = key;
    const view = modal.view;
    $("modal-title").textContent = view.title ? view.title.text : "";
    $("modal-submit").hidden = !view.submit;
    $("modal-submit").textContent = view.submit ? view.submit.text : "Submit";
    $("modal-close").textContent = view.close ? view.close.text : "Cancel";
    const body = $("modal-body");
    body.innerHTML = "";
    modalInputs = [];
    for (const block of view.blocks || []) {
      if (block.type === "input") {
        const input = BlockKit.input(block, ctx);
        modalInputs.push({ blockId: block.block_id, ...input });
        body.appendChild(input.node);
      } else {
        body.appendChild(BlockKit.blocks([block], ctx, null));
      }
    }
    overlay.hidden = false;
    const first = body.querySelector("input, textarea, select");
    if (first) first.focus();
  }
  const errors = modal.errors || {};
  $("modal-error").textContent = errors[""] || "";
  for (const input of modalInputs) input.node.querySelector(".field-error").textContent = errors[input.blockId] || "";
}

async function submitModal(event) {
  event.preventDefault();
  const modal = ui.data.modal;
  if (!modal) return;
  const values = {};
  for (const input of modalInputs) values[input.blockId] = { [input.actionId]: input.read() };
  $("modal-submit").disabled = true;
  try {
    await send(`/play/views/${modal.id}/submit`, { values });
  } catch (error) {
    alert(error.message);
  } finally {
    $("modal-submit").disabled = false;
  }
}

async function closeModal() {
  const modal = ui.data && ui.data.modal;
  if (modal) await send(`/play/views/${modal.id}/close`, {});
}

// --- composing ----------------------------------------------------------------------------------
async function post(field, threadTs) {
  const text = field.value.trim();
  if (!text) return;
  field.value = "";
  try {
    const posted = await send("/play/messages", { channel: ui.channel, text, thread_ts: threadTs || null });
    if (!threadTs) { // follow the conversation the message starts
      if (ui.thread !== posted.ts) $("reply-text").value = "";
      ui.thread = posted.ts;
    }
  } catch (error) {
    field.value = text;
    alert(error.message);
  }
}

function submitOnEnter(field, form) {
  field.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
}

$("composer").addEventListener("submit", (event) => { event.preventDefault(); post($("composer-text"), null); });
$("reply-composer").addEventListener("submit", (event) => {
  event.preventDefault();
  if (ui.thread && !$("thread").hidden) post($("reply-text"), ui.thread); // never a reply without its thread
});
submitOnEnter($("composer-text"), $("composer"));
submitOnEnter($("reply-text"), $("reply-composer"));
$("thread-close").addEventListener("click", closeThread);
$("modal").addEventListener("submit", submitModal);
$("modal-close").addEventListener("click", closeModal);
$("modal-x").addEventListener("click", closeModal);
$("home-link").addEventListener("click", (event) => { event.preventDefault(); openHome(); });
// The person's language, as Slack's preferences set it: the bot's words follow it.
$("lang").addEventListener("change", async (event) => {
  await send("/play/locale", { user: ui.user, locale: event.target.value });
  refreshNow();
});

$("who").addEventListener("change", (event) => {
  ui.user = event.target.value;
  localStorage.setItem("playground.user", ui.user);
  ui.modalKey = null;
  refreshNow();
});

const opened = new URLSearchParams(location.search);
if (opened.get("user")) ui.user = opened.get("user");
if (opened.get("channel")) ui.channel = opened.get("channel");
if (opened.get("thread")) ui.thread = opened.get("thread");
pollForever();
