/** The pages' only stylesheet, inlined and allowed by its hash in the CSP (no 'unsafe-inline'). */
export const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #fff;
  --line: #d0d7de; --accent: #1f6feb; --danger: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117;
  --card: #161b22; --line: #30363d; --accent: #4493f8; --danger: #f85149; } }
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
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
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
button.danger { color: var(--danger); border-color: var(--danger); }
.notice { border: 1px solid var(--accent); border-radius: 8px; padding: 8px 12px; margin: 12px 0; }
a { color: var(--accent); }
input.user-code { width: 100%; color: inherit; text-transform: uppercase; font: 1.4rem ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .15em; }
`;
