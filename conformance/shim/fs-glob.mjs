// node:fs + globSync (subset of Node 22's fs.globSync: string|string[] patterns,
// options.cwd, options.exclude (function or string[]); returns relative paths).
// Supports `**`, `*`, `?`, `[...]`, `{a,b}`. Sync, no dependencies, no network.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;
if (typeof fs.globSync !== 'function') fs.globSync = globSync; // also for fs.globSync(...) callers

function globToRegExp(glob) {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // '**/' matches zero or more directories; trailing '**' matches anything
        i++;
        if (glob[i + 1] === '/') {
          i++;
          re += '(?:[^/]*(?:/|$))*';
        } else re += '.*';
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) re += '\\[';
      else {
        re += '[' + glob.slice(i + 1, end).replace(/^!/, '^') + ']';
        i = end;
      }
    } else if (c === '{') {
      const end = glob.indexOf('}', i + 1);
      if (end === -1) re += '\\{';
      else {
        re +=
          '(?:' +
          glob
            .slice(i + 1, end)
            .split(',')
            .map(globToRegExp)
            .join('|') +
          ')';
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return re;
}

export function globSync(patterns, options = {}) {
  const list = Array.isArray(patterns) ? patterns : [patterns];
  const cwd = options.cwd ? String(options.cwd instanceof URL ? options.cwd.pathname : options.cwd) : process.cwd();
  const matchers = list.map((p) => new RegExp('^' + globToRegExp(p.replace(/\\/g, '/')) + '$'));
  const exclude = options.exclude;
  const excludeRes = Array.isArray(exclude) ? exclude.map((p) => new RegExp('^' + globToRegExp(p) + '$')) : [];
  const isExcluded = (rel, dirent) => (typeof exclude === 'function' ? exclude(options.withFileTypes ? dirent : rel) : excludeRes.some((r) => r.test(rel)));
  const out = [];
  const walk = (dirRel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, dirRel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of entries) {
      const rel = dirRel ? `${dirRel}/${d.name}` : d.name;
      if (isExcluded(rel, d)) continue;
      if (matchers.some((m) => m.test(rel))) out.push(options.withFileTypes ? d : rel.split('/').join(path.sep));
      if (d.isDirectory()) walk(rel);
    }
  };
  walk('');
  return out;
}
