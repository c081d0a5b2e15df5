// Simple, safe highlighting: a diff is split into lines classed by their first character,
// and the code on each line into a few token kinds (strings, comments, numbers, keywords)
// by a small scanner. Every piece goes in as a text node; nothing is parsed as HTML.

import {h} from './dom.js';

const KEYWORDS = {
  py: 'and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield',
  rs: 'as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while',
  js: 'async await break case catch class const continue default delete do else export extends false finally for function if import in instanceof let new null return super switch this throw true try typeof undefined var void while yield',
  sh: 'case do done elif else esac fi for function if in then until while export local return',
  go: 'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false',
  c: 'auto break case char const continue default do double else enum extern float for goto if int long register return short signed sizeof static struct switch typedef union unsigned void volatile while NULL true false',
  toml: 'true false',
  json: 'true false null',
};
const ALIASES = {ts: 'js', mjs: 'js', jsx: 'js', tsx: 'js', bash: 'sh', h: 'c', cc: 'c', cpp: 'c', hpp: 'c', java: 'c', yaml: 'toml', yml: 'toml', cfg: 'toml', ini: 'toml'};
const HASH_COMMENTS = new Set(['py', 'sh', 'toml']);
const SLASH_COMMENTS = new Set(['rs', 'js', 'go', 'c']);

/** The language key of a file name, or null. */
export function languageOf(name) {
  const m = /\.([A-Za-z0-9]+)$/.exec(name || '');
  if (!m) return null;
  const ext = m[1].toLowerCase();
  const lang = ALIASES[ext] || ext;
  return KEYWORDS[lang] ? lang : null;
}

const keywordSets = new Map();
function keywords(lang) {
  if (!keywordSets.has(lang)) keywordSets.set(lang, new Set(KEYWORDS[lang].split(' ')));
  return keywordSets.get(lang);
}

/** Appends `line` to `el` as tokens of `lang` (plain text when `lang` is null). */
export function highlightLine(el, line, lang) {
  if (!lang) {
    el.appendChild(document.createTextNode(line));
    return;
  }
  const words = keywords(lang);
  let i = 0;
  let plain = '';
  const flush = () => {
    if (plain) el.appendChild(document.createTextNode(plain));
    plain = '';
  };
  const token = (cls, text) => {
    flush();
    el.appendChild(h('span', {class: cls}, text));
  };
  while (i < line.length) {
    const c = line[i];
    const rest = line.slice(i);
    if ((HASH_COMMENTS.has(lang) && c === '#') || (SLASH_COMMENTS.has(lang) && rest.startsWith('//'))) {
      token('tk-comment', rest);
      return flush();
    }
    if (c === '"' || c === "'" || (c === '`' && lang === 'js')) {
      let j = i + 1;
      while (j < line.length && line[j] !== c) j += line[j] === '\\' ? 2 : 1;
      token('tk-string', line.slice(i, Math.min(j + 1, line.length)));
      i = j + 1;
      continue;
    }
    if (/[0-9]/.test(c) && !/[A-Za-z0-9_]/.test(line[i - 1] || '')) {
      const m = /^[0-9][0-9_.xXa-fA-FeE]*/.exec(rest);
      token('tk-number', m[0]);
      i += m[0].length;
      continue;
    }
    if (/[A-Za-z_]/.test(c) && !/[A-Za-z0-9_]/.test(line[i - 1] || '')) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
      if (words.has(m[0])) token('tk-keyword', m[0]);
      else plain += m[0];
      i += m[0].length;
      continue;
    }
    plain += c;
    i += 1;
  }
  flush();
}

/** Most diff lines drawn before a "show all" button. */
const DIFF_LINES = 4000;

/** A unified diff (git's form) as classed, highlighted lines. */
export function diffView(text) {
  const box = h('div', {class: 'diff'});
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const draw = (from, to) => {
    let lang = null;
    for (let n = 0; n < from; n++) {
      const m = /^diff --git a\/(.*) b\/(.*)$/.exec(lines[n]);
      if (m) lang = languageOf(m[2]);
    }
    const frag = document.createDocumentFragment();
    for (let n = from; n < to; n++) {
      const line = lines[n];
      const file = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
      if (file) lang = languageOf(file[2]);
      let cls = 'd-ctx';
      if (file || line.startsWith('+++ ') || line.startsWith('--- ') || line.startsWith('index ') || line.startsWith('new file') || line.startsWith('deleted file') || line.startsWith('Binary files') || line.startsWith('GIT binary patch')) cls = 'd-file';
      else if (line.startsWith('@@')) cls = 'd-hunk';
      else if (line.startsWith('+')) cls = 'd-add';
      else if (line.startsWith('-')) cls = 'd-del';
      const row = h('div', {class: `dl ${cls}`});
      if (cls === 'd-add' || cls === 'd-del' || cls === 'd-ctx') {
        row.appendChild(h('span', {class: 'd-mark'}, line.slice(0, 1)));
        highlightLine(row, line.slice(1), lang);
      } else {
        row.textContent = line;
      }
      frag.appendChild(row);
    }
    box.appendChild(frag);
  };
  if (!lines.length) {
    box.appendChild(h('div', {class: 'dl d-ctx'}, '(empty diff: the workspace did not change)'));
    return box;
  }
  draw(0, Math.min(lines.length, DIFF_LINES));
  if (lines.length > DIFF_LINES) {
    const more = h('button', {type: 'button', class: 'fold'}, `show the other ${lines.length - DIFF_LINES} lines`);
    more.addEventListener('click', () => { more.remove(); draw(DIFF_LINES, lines.length); });
    box.appendChild(more);
  }
  return box;
}
