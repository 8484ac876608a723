/** The pages' only stylesheet, inlined and allowed by its hash in the CSP (no 'unsafe-inline'). */
export const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #fff;
  --line: #d0d7de; --accent: #1f6feb; --on-accent: #fff; --danger: #cf222e; --edge: rgba(27,31,36,.3); }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117;
  --card: #161b22; --line: #30363d; --accent: #4493f8; --on-accent: #0d1117; --danger: #f85149; --edge: rgba(230,237,243,.3); } }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 0; min-height: 100vh; display: grid; place-items: center; background: var(--bg);
  color: var(--fg); font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { width: min(420px, calc(100vw - 32px)); background: var(--card); border: 1px solid var(--line);
  border-radius: 12px; padding: 28px; box-shadow: 0 8px 24px rgba(0,0,0,.08);
  /* Client names are chosen by whoever registers: a long unbroken one must wrap, not overflow the card. */
  overflow-wrap: anywhere; }
h1 { font-size: 1.35rem; margin: 0 0 4px; }
p { margin: 8px 0; }
.muted { color: var(--muted); font-size: .9rem; }
.brand { color: var(--muted); font-size: .8rem; letter-spacing: .08em; text-transform: uppercase; margin-bottom: 16px; }
label { display: block; font-weight: 600; margin: 16px 0 6px; }
input[type=text], input[type=password] { width: 100%; padding: 10px 12px; font: inherit; color: inherit;
  background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
input:focus, button:focus { outline: 2px solid var(--accent); outline-offset: 2px; }
.actions { display: flex; gap: 12px; margin-top: 24px; }
button { flex: 1; padding: 10px 16px; font: inherit; font-weight: 600; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--line); background: var(--card); color: var(--fg); }
/* Text on the accent: white on the light scheme's blue, dark on the dark scheme's lighter one (4.5:1 either way). */
button.primary { background: var(--accent); border-color: var(--accent); color: var(--on-accent); }
.error { color: var(--danger); border: 1px solid var(--danger); border-radius: 8px; padding: 8px 12px; margin: 12px 0; }
/* Label above value: the values (ids, URLs) get the card's whole width, even at 360 px. */
dl { margin: 16px 0; }
dt { color: var(--muted); font-size: .8rem; margin-top: 12px; }
dd { margin: 2px 0 0; overflow-wrap: anywhere; }
/* An identifier breaks only between its parts (html.ts token()), never inside one. */
code.token { font-size: .8rem; }
code.token > span { display: inline-block; max-width: 100%; }
@media (max-width: 400px) { main { padding: 20px; } }
form.providers { display: grid; gap: 10px; margin-top: 20px; }
.or { text-align: center; margin: 20px 0 0; }
.site { border: 1px solid var(--accent); border-radius: 8px; padding: 8px 12px; margin: 12px 0; }
.site.unverified { border-color: var(--danger); }
.tag { color: var(--danger); border: 1px solid var(--danger); border-radius: 4px; padding: 0 4px; font-size: .75rem; white-space: nowrap; }
ul.scopes { margin: 4px 0; padding-left: 20px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
/* The device's user code: large, spaced, easy to compare letter by letter. */
.user-code { display: block; text-align: center; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 1.6rem;
  letter-spacing: .15em; padding: 10px; margin: 8px 0; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); }
/* The account page: one card per approved application. */
h2 { font-size: 1.05rem; margin: 24px 0 4px; }
section.app { border: 1px solid var(--line); border-radius: 8px; padding: 4px 14px 14px; margin: 14px 0; }
section.app .actions { margin-top: 12px; }
/* Registrations of one application, one under the other in its card. */
section.app .registration { border-top: 1px solid var(--line); margin-top: 14px; }
button.danger { color: var(--danger); border-color: var(--danger); }
/* A link that does what a button beside it would (Cancel): it looks like one. */
a.button { flex: 1; padding: 10px 16px; font-weight: 600; border-radius: 8px; border: 1px solid var(--line);
  background: var(--card); color: var(--fg); text-align: center; text-decoration: none; }
/* A change asked again before it is made. */
section.confirm { border: 1px solid var(--danger); border-radius: 8px; padding: 4px 16px 16px; margin: 16px 0; max-width: 640px; }
section.confirm .actions { align-items: flex-start; }
.notice { border: 1px solid var(--accent); border-radius: 8px; padding: 8px 12px; margin: 12px 0; }
a { color: var(--accent); }
input.user-code { width: 100%; color: inherit; text-transform: uppercase; font: 1.4rem ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .15em; }
/* The admin console: wide, a navigation bar, tables that scroll in their own box on a phone. */
main.wide { width: min(1100px, calc(100vw - 16px)); }
.skip { position: absolute; left: -9999px; }
.skip:focus { position: static; display: inline-block; margin-bottom: 8px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.admin-bar { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: 12px;
  border-bottom: 1px solid var(--line); padding-bottom: 12px; margin-bottom: 16px; }
.admin-bar ul { list-style: none; display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0; padding: 0; }
.admin-bar a[aria-current=page] { font-weight: 700; color: var(--fg); text-decoration: none; border-bottom: 2px solid var(--accent); }
.admin-bar .who { display: flex; align-items: center; gap: 8px; }
.admin-bar .who button, form.inline button { flex: none; padding: 4px 10px; font-size: .9rem; }
form.inline { display: inline; margin: 0; }
/*
 * A table wider than its box scrolls inside it. A shadow on an edge says there is more that way:
 * the shadows stay at the box's edges (scroll), and a cover in the card's colour moves with the
 * content (local), hiding a shadow once the table is scrolled to that end. No script.
 */
.table-wrap { overflow-x: auto; margin: 12px 0; border: 1px solid var(--line); border-radius: 8px;
  background:
    linear-gradient(to right, var(--card) 40%, transparent) left / 32px 100% no-repeat local,
    linear-gradient(to left, var(--card) 40%, transparent) right / 32px 100% no-repeat local,
    linear-gradient(to right, var(--edge), transparent) left / 14px 100% no-repeat scroll,
    linear-gradient(to left, var(--edge), transparent) right / 14px 100% no-repeat scroll,
    var(--card); }
.table-wrap:focus { outline: 2px solid var(--accent); }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: normal; }
/* A heading may wrap between its words, so that many columns fit a desktop's width. */
th { color: var(--muted); font-weight: 600; }
tbody tr:last-child td { border-bottom: none; }
td code { word-break: break-all; }
/* Short identifiers (an event's name, an address, a time) read whole: the table scrolls instead. */
td .nowrap { white-space: nowrap; word-break: normal; }
/* Long values (a client ID, an event's details) keep a readable width when the table is squeezed: it scrolls instead. */
td .wide { display: inline-block; min-width: 16ch; }
form.search .row { display: flex; gap: 8px; }
form.search button { flex: none; }
form.filters { display: flex; flex-wrap: wrap; gap: 0 12px; align-items: end; }
form.filters label { margin: 8px 0 4px; font-size: .85rem; }
/* As tall as the text fields beside it, so the labels above them line up. */
form.filters select { min-height: calc(1.5em + 22px); }
select { padding: 9px 10px; font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 8px; }
select:focus, a:focus { outline: 2px solid var(--accent); outline-offset: 2px; }
.pager { display: flex; gap: 16px; margin: 12px 0; }
.badge { border: 1px solid var(--line); border-radius: 4px; padding: 0 6px; font-size: .8rem; white-space: nowrap; }
td time { white-space: nowrap; }
.row-actions { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 6px; }
.row-actions button { white-space: nowrap; }
@media (max-width: 600px) { main.wide { padding: 16px 12px; } }
`;
