// The documentation as part of the site: README.md and docs/*.md rendered to www/dist/docs/*.html
// (marked, a maintained CommonMark/GFM renderer from npm), with the images of docs/images/.
// docs/README.md (the map) becomes docs/index.html and the project's README readme.html; a link
// between the published documents points to the rendered page (anchors kept, GitHub's heading
// slugs); a link to another file of the repository (source, a README elsewhere) becomes the file's
// path as code, so the site has no dead links. Headings get GitHub's anchors, so that links such
// as `page.md#the-realistic-still` work on the site as on GitHub. Every page links back to the app.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens; repeats numbered. */
export function slugger() {
  const seen = new Map();
  return (text) => {
    const base = text.toLowerCase().trim().replace(/<[^>]+>/g, '').replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n ? `${base}-${n}` : base;
  };
}

/** The published documents: repository path -> page name in docs/. */
export function publishedDocs(root) {
  const pages = new Map([['README.md', 'readme.html'], ['docs/README.md', 'index.html']]);
  for (const f of readdirSync(join(root, 'docs')).sort()) {
    if (f.endsWith('.md') && f !== 'README.md') pages.set(`docs/${f}`, f.replace(/\.md$/, '.html'));
  }
  for (const f of readdirSync(join(root, 'docs', 'history')).sort()) {
    if (f.endsWith('.md')) pages.set(`docs/history/${f}`, `history-${f.replace(/\.md$/, '.html')}`);
  }
  return pages;
}

const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

const STYLE = `body{font:16px/1.55 system-ui,sans-serif;max-width:52rem;margin:0 auto;padding:0 1rem 4rem;color:#1b1f24;background:#fff}
header{display:flex;gap:1rem;align-items:baseline;border-bottom:1px solid #d0d7de;padding:.6rem 0;margin-bottom:1rem;flex-wrap:wrap}
header a{font-weight:600}a{color:#0b5cad}code{background:#f2f4f7;padding:.1em .3em;border-radius:4px;font-size:90%}
pre{background:#f2f4f7;padding:.8rem;overflow-x:auto;border-radius:6px}pre code{background:none;padding:0}
table{border-collapse:collapse;display:block;overflow-x:auto;font-size:90%}th,td{border:1px solid #d0d7de;padding:.3rem .5rem;vertical-align:top}
img{max-width:100%}main{overflow-wrap:break-word}code{overflow-wrap:anywhere}pre code{overflow-wrap:normal}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}a{color:#58a6ff}code,pre{background:#161b22}th,td,header{border-color:#30363d}}`;

/** Renders the documents into `out` (www/dist/docs). Returns the pages written. */
export async function buildDocs(root, out) {
  const { Marked } = await import('marked');
  const pages = publishedDocs(root);
  mkdirSync(out, { recursive: true });
  const written = [];
  for (const [src, name] of pages) {
    const dir = posix.dirname(src);
    const slug = slugger();
    const marked = new Marked({
      gfm: true,
      renderer: {
        heading({ tokens, depth }) {
          const inner = this.parser.parseInline(tokens);
          return `<h${depth} id="${slug(inner)}">${inner}</h${depth}>\n`;
        },
        link({ href, title, tokens }) {
          const text = this.parser.parseInline(tokens);
          if (/^[a-z]+:/i.test(href) || href.startsWith('#')) {
            return `<a href="${escape(href)}"${title ? ` title="${escape(title)}"` : ''}>${text}</a>`;
          }
          const [path, anchor] = href.split('#');
          const target = posix.normalize(posix.join(dir, path));
          if (pages.has(target)) return `<a href="${pages.get(target)}${anchor ? `#${anchor}` : ''}">${text}</a>`;
          // another file of the repository: its path, not a dead link
          return `${text} (<code>${escape(target)}</code>)`;
        },
        image({ href, title, text }) {
          const target = posix.normalize(posix.join(dir, href));
          if (!target.startsWith('docs/images/')) throw new Error(`${src}: an image outside docs/images/: ${href}`);
          return `<img src="images/${posix.basename(target)}" alt="${escape(text)}"${title ? ` title="${escape(title)}"` : ''}>`;
        },
        html({ text }) {
          return text.replace(/<!--[\s\S]*?-->/g, '');
        },
      },
    });
    const md = readFileSync(join(root, src), 'utf8');
    const title = (md.match(/^# (.+)$/m)?.[1] ?? name).replace(/`/g, '');
    const body = marked.parse(md);
    writeFileSync(join(out, name), `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>${escape(title)} · nanoBragg Web</title><style>${STYLE}</style></head>
<body><header><a href="../index.html">nanoBragg Web: open the app</a><a href="index.html">Documentation</a><span>${escape(src)}</span></header>
<main>
${body}</main></body></html>
`);
    written.push(name);
  }
  const images = join(root, 'docs', 'images');
  if (existsSync(images)) {
    mkdirSync(join(out, 'images'), { recursive: true });
    for (const f of readdirSync(images)) copyFileSync(join(images, f), join(out, 'images', f));
  }
  return written;
}
