// The render-vs-page baseline of pictor-bench (bench/render_vs_page.go,
// driven by bench/baseline/puppeteer.go): Puppeteer on warm pages of the
// Chromium `pictor serve` runs, with its flags, rendering the cards the
// harness sends.
//
// node render.mjs '<config JSON>'
//   {"chromium": path, "args": [flags], "pages": N, "width": W, "height": H, "scale": S}
//
// Standard output, one line each:
//   ready <chromium pid> <browser version>     once the pages are open
//   ok <id> <ms> <bytes> <width> <height>      a render: its time, the PNG's size and pixels
//   error <id> <message>                       a render that failed
// Standard input, one JSON object a line: {"id": n, "page": i, "html": document,
// "fast": optimizeForSpeed, "out": path or ""}. Requests run concurrently, at
// most one per page (the harness's part). The end of standard input closes
// the browser.
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import puppeteer from 'puppeteer-core';

const cfg = JSON.parse(process.argv[2]);

function send(line) {
  process.stdout.write(line + '\n');
}

// The flags are Pictor's own (read from its browser's command line), so
// Puppeteer adds none of its defaults: only the debugging pipe.
const browser = await puppeteer.launch({
  executablePath: cfg.chromium,
  args: cfg.args,
  ignoreDefaultArgs: true,
  pipe: true,
  defaultViewport: null,
  protocolTimeout: 60_000,
});
let closing = false;
browser.on('disconnected', () => {
  if (!closing) {
    console.error('render.mjs: the browser disconnected');
    process.exit(2);
  }
});

// One browser context per page, as Pictor gives each tab its own: Puppeteer
// takes one screenshot at a time per context.
const pages = [];
for (let i = 0; i < cfg.pages; i++) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: cfg.width, height: cfg.height, deviceScaleFactor: cfg.scale });
  pages.push(page);
}
const clip = { x: 0, y: 0, width: cfg.width, height: cfg.height };

async function render(req) {
  const page = pages[req.page];
  if (!page) {
    throw new Error(`no page ${req.page}`);
  }
  const start = performance.now();
  await page.setContent(req.html, { waitUntil: 'load' });
  const png = await page.screenshot({ clip, type: 'png', optimizeForSpeed: req.fast });
  const ms = performance.now() - start;
  if (req.out) {
    await writeFile(req.out, png);
  }
  // The IHDR chunk: width and height, big-endian, at bytes 16 and 20.
  const width = png.length >= 24 ? png.readUInt32BE(16) : 0;
  const height = png.length >= 24 ? png.readUInt32BE(20) : 0;
  return `ok ${req.id} ${ms.toFixed(3)} ${png.length} ${width} ${height}`;
}

send(`ready ${browser.process().pid} ${(await browser.version()).replace(/\s+/g, '_')}`);

const inFlight = new Set();
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    send(`error 0 bad request: ${String(err.message).replace(/\s+/g, ' ')}`);
    return;
  }
  const done = render(req).then(send, (err) => send(`error ${req.id} ${String(err && err.message).replace(/\s+/g, ' ')}`));
  inFlight.add(done);
  done.finally(() => inFlight.delete(done));
});
lines.on('close', async () => {
  await Promise.allSettled([...inFlight]);
  closing = true;
  await browser.close();
  process.exit(0);
});
