#!/usr/bin/env node
// Tiny static server for www/dist (no dependencies).
//   node scripts/serve.mjs [--port 8080] [--host 127.0.0.1] [--root www/dist] [--no-isolation]
// By default every response carries COOP/COEP (+ CORP) so the page is crossOriginIsolated and
// the threaded wasm module can use SharedArrayBuffer. --no-isolation drops them (embed tests).
// Also importable: `startServer({port, root, isolation})` resolves to {server, url}.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join, extname, normalize, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.map': 'application/json',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.hkl': 'text/plain', '.txt': 'text/plain', '.mat': 'text/plain',
  '.ico': 'image/x-icon',
};

export function startServer({ port = 8080, host = '127.0.0.1', root, isolation = true, quiet = true } = {}) {
  const base = resolve(root ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'www', 'dist'));
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    let path = normalize(join(base, decodeURIComponent(url.pathname)));
    if (!path.startsWith(base)) { res.writeHead(403).end(); return; }
    try {
      if ((await stat(path)).isDirectory()) path = join(path, 'index.html');
      const body = await readFile(path);
      const headers = { 'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream', 'Cache-Control': 'no-cache' };
      if (isolation) {
        headers['Cross-Origin-Opener-Policy'] = 'same-origin';
        headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
      }
      headers['Cross-Origin-Resource-Policy'] = 'same-origin';
      res.writeHead(200, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
      if (!quiet) console.log(`200 ${req.url}`);
    } catch {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      if (!quiet) console.log(`404 ${req.url}`);
    }
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok({ server, url: `http://${host}:${server.address().port}` }));
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const a = process.argv.slice(2);
  const opt = (n, d) => { const i = a.indexOf(n); return i >= 0 ? a[i + 1] : d; };
  const { url } = await startServer({
    port: Number(opt('--port', process.env.PORT ?? 8080)), host: opt('--host', '127.0.0.1'),
    root: opt('--root', undefined), isolation: !a.includes('--no-isolation'), quiet: !a.includes('--verbose'),
  });
  console.log(`nanoBragg Web at ${url}/ (${a.includes('--no-isolation') ? 'no COOP/COEP' : 'COOP/COEP on: threads available'})`);
}
